import FuzzCheck
import ResumeKit
import ResumeMarkup

/// A Metalink 4 document (RFC 5854) through libxml2, read with and without hashes required. Properties: what is
/// read has 1 to `maxFiles` files of distinct names, each name a plain relative path (no leading `/`, no empty,
/// `.` or `..` part, no `\` or control character), a size of 0 to `maxSize`, 1 to `maxURLs` URLs by priority,
/// hashes of an accepted algorithm and its length, strongest first with SHA-1 only alone, and pieces as many as
/// the size needs; requiring hashes refuses exactly the documents with a file that has none.
func fuzzMetalink(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let body = bytes(data, size)
    let strict = try? Metalink.parse(body)
    guard let loose = try? Metalink.parse(body, requireHashes: false) else {
        require(strict == nil, "read with hashes required, refused without")
        return 0
    }
    let unverifiable = loose.files.contains { !$0.isVerifiable }
    require(strict == (unverifiable ? nil : loose), "hashes required: \(strict == nil ? "refused" : "read")")
    require((1...Metalink.maxFiles).contains(loose.files.count), "\(loose.files.count) files")
    require(Set(loose.files.map(\.name)).count == loose.files.count, "a name twice")
    let lengths = Dictionary(uniqueKeysWithValues: Metalink.algorithms.map { ($0.name, $0.hexDigits) })
    let isHex = { (hex: String, algorithm: String) in
        hex.utf8.count == lengths[algorithm] && hex.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }
    }
    for file in loose.files {
        require(!file.name.hasPrefix("/"), "absolute name \(file.name)")
        for part in file.name.split(separator: "/", omittingEmptySubsequences: false) {
            require(
                !part.isEmpty && part != "." && part != ".."
                    && !part.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F || $0 == "\\" },
                "name part '\(part)' in \(file.name)")
        }
        if let size = file.size { require((0...Metalink.maxSize).contains(size), "size \(size)") }
        require((1...Metalink.maxURLs).contains(file.urls.count), "\(file.urls.count) URLs")
        require(file.urls.allSatisfy { !$0.url.isEmpty }, "an empty URL")
        let priorities = file.urls.map { $0.priority ?? 999_999 }
        require(priorities == priorities.sorted(), "URLs out of priority order: \(priorities)")
        let ranks = file.hashes.map { h in Metalink.algorithms.firstIndex { $0.name == h.algorithm } ?? -1 }
        require(!ranks.contains(-1) && ranks == ranks.sorted() && Set(ranks).count == ranks.count, "hashes \(ranks)")
        require(file.hashes.allSatisfy { isHex($0.hex, $0.algorithm) }, "a malformed hash")
        require(file.hashes.count == 1 || !file.hashes.contains { $0.algorithm == "sha-1" }, "SHA-1 beside others")
        if let pieces = file.pieces {
            require(pieces.length > 0 && !pieces.hashes.isEmpty, "pieces of \(pieces.length) bytes")
            require(pieces.hashes.allSatisfy { isHex($0, pieces.algorithm) }, "a malformed piece hash")
            if let size = file.size {
                let needed = (size + pieces.length - 1) / pieces.length
                require(Int64(pieces.hashes.count) == needed, "\(pieces.hashes.count) pieces for \(size) bytes")
            }
        }
    }
    return 0
}

fuzz { data, size in data.map { fuzzMetalink($0, size) } ?? 0 }
