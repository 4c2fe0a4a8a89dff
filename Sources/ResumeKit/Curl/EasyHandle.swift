import CCurl

/// libcurl is initialised once per process, before the first handle; `CURL_GLOBAL_ALL` is not
/// thread-safe to call twice, so a lazy global guards it.
private let curlGlobalInit: CURLcode = curl_global_init(Int(CURL_GLOBAL_ALL))

/// Owns one `CURL*` easy handle. Confined to the thread that created it.
final class EasyHandle {
    let raw: UnsafeMutableRawPointer
    private var lists: [UnsafeMutablePointer<curl_slist>] = []
    /// libcurl writes its detailed message here; it must outlive the handle's transfers.
    private let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE) + 1)

    init() throws {
        try curlGlobalInit.check()
        guard let handle = curl_easy_init() else { throw CurlError(CURLE_FAILED_INIT) }
        raw = handle
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
        try setDefaults()
    }

    private func setDefaults() throws {
        try set(CURLOPT_ERRORBUFFER, pointer: UnsafeMutableRawPointer(errorBuffer))
        // Threads and signals do not mix; the process ignores SIGPIPE instead.
        try set(CURLOPT_NOSIGNAL, 1)
    }

    /// Forgets every option of the last exchange but keeps the open connections.
    func reset() {
        curl_easy_reset(raw)
        for list in lists { curl_slist_free_all(list) }
        lists.removeAll()
        try? setDefaults()
    }

    deinit {
        curl_easy_cleanup(raw)
        for list in lists { curl_slist_free_all(list) }
        errorBuffer.deallocate()
    }

    func set(_ option: CURLoption, _ value: Int) throws {
        try rctl_setopt_long(raw, option, value).check()
    }

    func set(_ option: CURLoption, offset value: Int64) throws {
        try rctl_setopt_off_t(raw, option, curl_off_t(value)).check()
    }

    func set(_ option: CURLoption, _ value: String) throws {
        // libcurl copies string options (since 7.17.0), so a temporary C string is enough.
        try rctl_setopt_string(raw, option, value).check()
    }

    func set(_ option: CURLoption, pointer value: UnsafeMutableRawPointer?) throws {
        try rctl_setopt_pointer(raw, option, value).check()
    }

    /// Sets a string-list option; the list lives as long as the handle.
    func set(_ option: CURLoption, list values: [String]) throws {
        var list: UnsafeMutablePointer<curl_slist>?
        for value in values { list = curl_slist_append(list, value) }
        if let list { lists.append(list) }
        try rctl_setopt_slist(raw, option, list).check()
    }

    func info(string option: CURLINFO) -> String? {
        var value: UnsafeMutablePointer<CChar>?
        guard rctl_getinfo_string(raw, option, &value) == CURLE_OK, let value else { return nil }
        return String(cString: value)
    }

    /// Runs the transfer to its end on the calling thread.
    func perform() -> (CURLcode, String) {
        clearError()
        return (curl_easy_perform(raw), errorMessage)
    }

    func clearError() { errorBuffer[0] = 0 }

    /// libcurl's message for the last failure (empty when it wrote none).
    var errorMessage: String { String(cString: errorBuffer) }
}

@available(*, unavailable)
extension EasyHandle: Sendable {}
