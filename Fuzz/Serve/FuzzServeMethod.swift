/// Built by the Makefile with swiftc and -parse-as-library: libFuzzer's own `main` drives it.
/// `serve`'s method rule (MethodOverride, compiled in from Sources/ResumeServer). Input: a flag byte (bit 0:
/// the request carries `Tus-Resumable`), then the request line's method, a NUL, the override header's value.
/// Properties: a method other than the request line's is only ever one of tus's; GET never comes from an
/// override; a non-tus request changes only to OPTIONS; applying the rule again changes nothing (every
/// handler sees the method the gate saw).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzServeMethod(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size > 0 else { return 0 }
    let isTus = data[0] & 1 == 1
    let rest = bytes(data + 1, size - 1)
    let parts = rest.split(separator: 0, maxSplits: 1, omittingEmptySubsequences: false)
    let line = String(decoding: parts[0], as: UTF8.self)
    let override = parts.count > 1 ? String(decoding: parts[1], as: UTF8.self) : nil
    let method = MethodOverride.effective(requestMethod: line, override: override, isTus: isTus)
    if method != line {
        require(MethodOverride.tusMethods.contains(method), "\(line) + \(override ?? "-") became \(method)")
        require(isTus || method == "OPTIONS", "a request without Tus-Resumable became \(method)")
    }
    require(method != "GET" || line == "GET", "an override made a GET of \(line)")
    let again = MethodOverride.effective(requestMethod: method, override: override, isTus: isTus)
    require(again == method, "not settled: \(method) then \(again)")
    return 0
}
