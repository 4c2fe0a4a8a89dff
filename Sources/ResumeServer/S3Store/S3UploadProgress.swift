import ResumeKit

/// Where an upload stored on S3 stands, worked out from what S3 holds alone — the parts `ListParts`
/// lists and the tail object — so that every instance reports the same offset and none reports a byte
/// that S3 does not have.
///
/// The tail object (the bytes after the last part, fewer than a part) names the part number it goes
/// before. Once a part that took the tail's bytes is stored, the tail is stale even if deleting it
/// failed (a crash between the two): it then names a part number already taken, and counts for nothing.
struct S3UploadProgress: Equatable, Sendable {
    /// The tail object as a `HEAD` saw it.
    struct Tail: Equatable, Sendable {
        var size: Int64
        /// The part number the tail's bytes will open.
        var part: Int
    }

    /// Parts 1…n with no gap, in order: the ones `CompleteMultipartUpload` will get.
    var parts: [ListedPart]
    /// Bytes in those parts.
    var stored: Int64
    /// The tail's bytes, when the tail is current.
    var tail: Int64
    /// A tail that names a part number already taken (left by a crash): delete it, never count it.
    var staleTail: Bool

    /// The number of the next part to upload.
    var nextPart: Int { parts.count + 1 }
    /// The upload's offset: every byte S3 holds for it, in order.
    var offset: Int64 { stored + tail }

    /// Reads the listed parts (any order, possibly from several pages) and the tail, if one exists.
    /// Parts after a gap in the numbering cannot be completed and are not counted.
    init(parts listed: [ListedPart], tail: Tail?) {
        var parts: [ListedPart] = []
        for part in listed.sorted(by: { $0.number < $1.number }) {
            guard part.number == parts.count + 1 else { break }
            parts.append(part)
        }
        self.parts = parts
        stored = parts.reduce(0) { $0 + $1.size }
        if let tail, tail.part == parts.count + 1 {
            self.tail = tail.size
            staleTail = false
        } else {
            self.tail = 0
            staleTail = tail != nil
        }
    }
}
