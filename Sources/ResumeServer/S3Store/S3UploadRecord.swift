import FoundationEssentials

/// What the S3 store keeps of an upload in its record object: the ``UploadRecord`` every store keeps,
/// plus the multipart upload its bytes go into. The record's `offset` is not trusted on S3: the offset
/// is always worked out again from what S3 holds (``S3UploadProgress``); `phase` `finishing` means the
/// object is complete (the record stays until it expires, to answer a client whose last answer was lost).
struct S3UploadRecord: Codable, Sendable, Equatable {
    var upload: UploadRecord
    /// The S3 multipart upload id, on the final key.
    var multipartID: String
    /// The flexible checksum the multipart upload was created with (`CRC32C`), which every part must
    /// then carry; `nil` for one created without (by an earlier release).
    var checksum: String?
    /// With `finishing`: the completion hook is due, and who runs it (``S3Backend/runHookIfDue(_:)``).
    var hook: S3HookClaim? = nil

    var id: String { upload.id }

    var bytes: [UInt8] { Array((try? JSONEncoder().encode(self)) ?? Data()) }

    init(upload: UploadRecord, multipartID: String, checksum: String?) {
        self.upload = upload
        self.multipartID = multipartID
        self.checksum = checksum
    }

    /// `nil` for a body that is not a record of this version for `id`.
    init?(_ bytes: [UInt8], id: String) {
        guard let record = try? JSONDecoder().decode(S3UploadRecord.self, from: Data(bytes)),
            record.upload.version == 1, record.upload.id == id, !record.upload.target.isEmpty
        else { return nil }
        self = record
    }
}
