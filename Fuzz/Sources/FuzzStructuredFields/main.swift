import FoundationEssentials
import FuzzCheck
@testable import ResumeKit

/// The structured fields of the upload draft (RFC 9651): `Upload-Complete` (Boolean), `Upload-Offset`
/// (Integer), `Upload-Limit` (Dictionary of Integers), `Repr-Digest` (Dictionary of Byte Sequences).
/// Property: what a parser accepts, serialized again, parses to the same value.
func fuzzStructuredFields(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let value = text(data, size)
    if let b = StructuredField.boolean(value) {
        require(StructuredField.boolean(StructuredField.serialize(b)) == b, "Boolean \(value) does not round-trip")
    }
    if let n = StructuredField.integer(value) {
        require(StructuredField.integer(String(n)) == n, "Integer \(value) does not round-trip")
    }
    let limits = StructuredField.integerDictionary(value)
    if !limits.isEmpty {
        let again = limits.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ", ")
        require(StructuredField.integerDictionary(again) == limits, "Dictionary \(value) → \(again) does not round-trip")
    }
    let digests = StructuredField.byteSequenceDictionary(value)
    if !digests.isEmpty {
        let again = digests.sorted { $0.key < $1.key }
            .map { "\($0.key)=:\(Data($0.value).base64EncodedString()):" }.joined(separator: ", ")
        require(StructuredField.byteSequenceDictionary(again) == digests, "Repr-Digest \(value) → \(again) does not round-trip")
    }
    // What the download machine makes of a digest: a SHA-256 is 32 bytes or absent.
    var m = DownloadStateMachine()
    _ = m.evaluate(ResponseHead(status: 200, headers: ["Repr-Digest": value, "Content-Length": "0"]), requestedOffset: 0)
    if let sum = m.resource?.reprDigestSHA256 { _ = sum.count }
    return 0
}

fuzz { data, size in data.map { fuzzStructuredFields($0, size) } ?? 0 }
