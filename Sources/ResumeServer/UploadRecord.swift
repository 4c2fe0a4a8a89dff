/// What the server keeps of one unfinished upload, beside its data file (see ``UploadStore``).
///
/// `offset` is the number of bytes known durable: the data file was fdatasync'ed at least that far
/// before this record was written, so it is the most an answer may ever report.
struct UploadRecord: Codable, Sendable, Equatable {
    enum Kind: String, Codable, Sendable {
        /// draft-ietf-httpbis-resumable-upload, at the URL `/resumable_upload/<id>`.
        case ietf
        /// tus 1.0.0, at the URL `/tus_upload/<id>`.
        case tus
        /// A plain PUT or POST: nothing can continue it, so a restart drops it.
        case plain
    }

    enum Phase: String, Codable, Sendable {
        /// Bytes may still arrive.
        case receiving
        /// Every byte is durable; only placing the file at its path is left (a restart does it).
        case finishing
    }

    /// tus concatenation: a partial upload (material for final ones, never a file) or a final one of `parts`.
    enum Concat: Codable, Sendable, Equatable {
        case partial
        case final(parts: [String])
    }

    /// The record format; a record of another version is not read.
    var version = 1
    var id: String
    var kind: Kind
    /// The draft's interop version of the creation (IETF only).
    var interop: Int?
    /// The destination, as path components below the served folder.
    var target: [String]
    /// The upload's whole length, once known.
    var length: Int64?
    var offset: Int64 = 0
    /// tus `Upload-Metadata`, as the creation sent it.
    var metadata: String?
    /// The login that created the upload (`--htpasswd`), for the completion hook.
    var user: String?
    /// Milliseconds since the epoch after which the upload is dropped (counts from its last activity).
    var expires: Int64
    var phase = Phase.receiving
    var concat: Concat? = nil

    var isFinal: Bool { if case .final = concat { true } else { false } }

    /// Where a partial upload's bytes stay once complete, below the store's hidden folder (an S3 key too).
    static func partialTarget(_ id: String) -> [String] { [UploadStore.folderName, id + ".partial"] }

    /// Whether every byte of a known length has arrived.
    var isComplete: Bool { length == offset }
}
