import FoundationEssentials
import FuzzCheck
@testable import ResumeKit

/// tus headers: the OPTIONS answer's capabilities (`Tus-Version`, `Tus-Extension`, `Tus-Max-Size`,
/// `Tus-Checksum-Algorithm`), `Upload-Offset`/`Upload-Length` answers, and the `Upload-Metadata` the client
/// builds from a file name. The first input line is the file name; the rest are header lines.
/// Properties: a max size is never negative; metadata is one header line whose values decode back to the
/// name; the machine's acknowledged count stays within the file.
func fuzzTus(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = text(data, size)
    let lines = input.split(separator: "\n", omittingEmptySubsequences: false)
    let filename = String(lines.first ?? "")
    var parser = ResponseHeadParser()
    _ = parser.feed(line: "HTTP/1.1 204 No Content\r\n")
    var ended: ResponseHead?
    for line in lines.dropFirst() where ended == nil { ended = parser.feed(line: line + "\r\n") }  // an empty line ends it
    guard let head = ended ?? parser.feed(line: "\r\n") else { return 0 }

    if let capabilities = TusCapabilities(head) {
        if let max = capabilities.maxSize { require(max >= 0, "negative Tus-Max-Size \(max)") }
        _ = capabilities.checksum
        _ = TusStateMachine.refusal(capabilities, size: 1000)
    }
    var m = TusStateMachine(size: 1000, creationURL: "http://h/files/", filename: filename, capabilities: TusCapabilities(head))
    if case .create(let headers, _, _) = m.plan() {
        let metadata = headers["Upload-Metadata"] ?? ""
        require(!metadata.contains("\r") && !metadata.contains("\n"), "metadata breaks the header line")
        let pairs = metadata.split(separator: ",").map { $0.split(separator: " ", omittingEmptySubsequences: false) }
        require(pairs.count == 2 && pairs.allSatisfy { $0.count == 2 }, "metadata \(metadata) is not two key-value pairs")
        let name = Data(base64Encoded: String(pairs[0][1])).map { String(decoding: $0, as: UTF8.self) }
        require(name == filename, "metadata does not decode back to the file name")
    }
    for _ in 0..<5 {
        let plan = m.plan()
        if plan == .finished { break }
        _ = m.response(head, to: plan)
        require((0...1000).contains(m.acknowledgedBytes), "acknowledged \(m.acknowledgedBytes) of 1000")
    }
    return 0
}

fuzz { data, size in data.map { fuzzTus($0, size) } ?? 0 }
