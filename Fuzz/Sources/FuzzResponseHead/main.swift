import FuzzCheck
@testable import ResumeKit

/// Response heads as libcurl hands them over (a line at a time, 1xx heads first), then the download and
/// upload machines fed each head. Properties: field names are trimmed and colon-free; a download writes
/// only from 0 or from the offset it asked for, with a non-negative total; an upload never counts as done
/// against an `Upload-Offset` that says otherwise, and its acknowledged count stays within the file.
func fuzzResponseHead(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    var parser = ResponseHeadParser()
    var heads: [ResponseHead] = []
    for line in text(data, size).split(separator: "\n", omittingEmptySubsequences: false) {
        if let head = parser.feed(line: line + "\n") { heads.append(head) }
    }
    for head in heads {
        require(head.status >= 0, "negative status \(head.status)")
        for field in head.headers.fields {
            require(!field.name.contains(":"), "a name with a colon: \(field.name)")
            require(field.name.trimmingSpaces() == field.name && field.value.trimmingSpaces() == field.value, "untrimmed \(field)")
        }
        download(head)
        ietf(head)
        tus(head)
    }
    return 0
}

private func download(_ head: ResponseHead) {
    for offset: Int64 in [0, 500, 1 << 40] {
        let known = DownloadStateMachine.Resource(etag: "\"a\"", validator: "\"a\"", totalBytes: 1000)
        for start in [DownloadStateMachine(), DownloadStateMachine(resource: known)] {
            var m = start
            let decision = m.evaluate(head, requestedOffset: offset)
            if case .write(let from, _) = decision {
                require(from == 0 || from == offset, "writes from \(from) after asking for \(offset)")
            }
            if let total = m.resource?.totalBytes { require(total >= 0, "negative total \(total)") }
            if case .write = decision, case .invalid = ContentLength(head.headers) { require(false, "wrote a body of unusable length") }
        }
    }
    _ = SegmentRules.probe(head)
    // A segment's bounded fetch writes only the exact part it asked for.
    for (from, to): (Int64, Int64) in [(0, 499), (500, 999)] {
        var segment = DownloadStateMachine(resource: .init(etag: "\"a\"", validator: "\"a\"", totalBytes: 1000), onChange: .fail)
        if case .write(let at, _) = segment.evaluate(head, requestedOffset: from, through: to) {
            require(at == from && head.status == 206, "a segment asked for \(from)-\(to) writes from \(at) on \(head.status)")
        }
    }
}

private func ietf(_ head: ResponseHead) {
    for version in InteropVersion.allCases {
        var m = IETFStateMachine(size: 1000, version: version)
        let plan = m.plan()
        _ = m.informational(head, requestURL: "http://h/f")
        let decision = m.response(head, to: plan)
        require((0...1000).contains(m.acknowledgedBytes), "acknowledged \(m.acknowledgedBytes) of 1000")
        if decision == .completed {
            let raw = head.headers["Upload-Offset"]
            require(raw == nil || StructuredField.integer(raw) == 1000, "done although Upload-Offset is \(raw ?? "")")
            require(version.isComplete(head.headers) != false, "done although the server says incomplete")
        }
        var resumed = IETFStateMachine(size: 1000, version: version, uploadURL: "http://h/u")
        _ = resumed.response(head, to: resumed.plan())
        require((0...1000).contains(resumed.acknowledgedBytes), "acknowledged \(resumed.acknowledgedBytes) of 1000")
        if case .append(_, _, let offset, let length, _) = resumed.plan() {
            require(offset >= 0 && length >= 0 && offset + length <= 1000, "append \(offset)+\(length) of 1000")
            _ = resumed.response(head, to: resumed.plan())
            require((0...1000).contains(resumed.acknowledgedBytes), "acknowledged \(resumed.acknowledgedBytes) of 1000")
        }
    }
}

private func tus(_ head: ResponseHead) {
    var m = TusStateMachine(size: 1000, creationURL: "http://h/files/", filename: "a")
    for _ in 0..<4 {
        let plan = m.plan()
        if plan == .finished { break }
        _ = m.response(head, to: plan)
        require((0...1000).contains(m.acknowledgedBytes), "tus acknowledged \(m.acknowledgedBytes) of 1000")
    }
}

fuzz { data, size in data.map { fuzzResponseHead($0, size) } ?? 0 }
