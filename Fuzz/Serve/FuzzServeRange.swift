/// Built by the Makefile with swiftc and -parse-as-library: libFuzzer's own `main` drives it.
/// `serve`'s `Range`/`If-Range` decision (RangeRequest, compiled in from Sources/ResumeServer). The first
/// 8 bytes are the file's length, the rest the field value. Property: a partial answer lies inside the file.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzServeRange(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size >= 8 else { return 0 }
    var raw: UInt64 = 0
    for i in 0..<8 { raw = raw << 8 | UInt64(data[i]) }
    let length = Int64(bitPattern: raw & 0x7fff_ffff_ffff_ffff) >> Int64(data[0] % 64)
    let value = text(data + 8, size - 8)
    for decision in [
        RangeRequest.resolve(value, length: length),
        RangeRequest.decide(range: value, ifRange: "\"e\"", length: length, etag: "\"e\"", lastModified: "x", lastModifiedIsStrong: true),
    ] {
        if case .partial(let first, let last) = decision {
            require(first >= 0 && first <= last && last < length, "bytes \(first)-\(last) of \(length) for \(value)")
        }
    }
    return 0
}
