/// Keeps the final head of an exchange whose body is not wanted.
final class HeadCollector: ExchangeDelegate {
    var head: ResponseHead?
    func exchange(head: ResponseHead, effectiveURL: String) -> Bool {
        self.head = head
        return true
    }
}
