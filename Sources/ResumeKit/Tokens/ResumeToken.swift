import FoundationEssentials

/// The resume state of one transfer, as stored in `tokens/<id>.json` (schema version 1).
///
/// One schema serves both directions; `download` or `upload` holds the direction's part.
/// Secrets never enter a token: see ``ResumeToken/storableHeaders(_:)``.
public struct ResumeToken: Codable, Sendable, Equatable {
    public static let currentVersion = 1

    public enum Kind: String, Codable, Sendable { case download, upload }

    public var version: Int
    public var id: String
    public var kind: Kind
    /// The URL the user gave (downloads) or the creation URL (uploads).
    public var url: String
    /// Request headers to send again on resume, without credentials.
    public var headers: [String]
    public var createdAt: Date
    public var updatedAt: Date
    public var download: DownloadPart?
    public var upload: UploadPart?
    /// How the transfer connects (CA, `-k`, proxy, HTTP version …), so that a resume connects the same way.
    /// Absent when the defaults were used, and in tokens written before it existed.
    public var connection: ConnectionSettings?
    /// An S3 download: where the object is and how requests are signed (names only, never a key).
    public var s3: S3State?

    public struct DownloadPart: Codable, Sendable, Equatable {
        /// Absolute path of the finished file; the data lives in `path + ".part"` until then.
        public var path: String
        /// The URL after redirects, as last seen.
        public var effectiveURL: String?
        public var etag: String?
        public var lastModified: String?
        /// The `If-Range` value a resume sends; nil when the server gave no strong validator.
        public var validator: String?
        public var totalBytes: Int64?
        /// Bytes fsynced in the `.part` file: where a resume starts.
        public var committedBytes: Int64
        /// Expected SHA-256 (hex), from `--checksum` or the server's `Repr-Digest`.
        public var expectedSHA256: String?
        /// `restart` or `fail`: what to do when the file changed on the server.
        public var onChange: String?
        /// For a segmented download (`--connections N`): the byte ranges fetched in parallel into the
        /// `.part` file, each with its own committed count. Absent for a single-connection download.
        public var segments: [Segment]?

        public var partPath: String { path + ".part" }
    }

    /// One range of a segmented download: bytes `start...end`, of which the first `committed` are on disk.
    public struct Segment: Codable, Sendable, Equatable {
        public var start: Int64
        public var end: Int64
        public var committed: Int64

        public init(start: Int64, end: Int64, committed: Int64 = 0) {
            self.start = start
            self.end = end
            self.committed = committed
        }

        public var length: Int64 { end - start + 1 }
        public var isDone: Bool { committed >= length }
    }

    public struct UploadPart: Codable, Sendable, Equatable {
        /// The upload resource (the 104's or 201's `Location`); nil until the server named one.
        public var uploadURL: String?
        /// The draft interop version (IETF uploads; absent in tus and plain tokens).
        public var interopVersion: Int?
        public var source: SourceIdentity
        /// The last offset the server acknowledged.
        public var acknowledgedBytes: Int64
        /// False once a server answered without draft support: only a whole new request can help.
        public var resumable: Bool
        /// `ietf`, `tus`, `plain` (`s3` reserved); absent in tokens written before protocols were named,
        /// which are IETF uploads.
        public var protocolName: String?
        /// tus: when the server will drop the upload (`Upload-Expires`, an HTTP-date).
        public var expires: String?
        /// tus: the `Upload-Checksum` algorithm chosen from the server's `Tus-Checksum-Algorithm`.
        public var checksumAlgorithm: String?
        /// S3: the object, the multipart upload and its finished parts.
        public var s3: S3State?
        /// A stream from stdin (`upload -`): its spool and the hashes a replay is checked against.
        public var stream: StreamState?

        public init(
            uploadURL: String?, interopVersion: Int?, source: SourceIdentity, acknowledgedBytes: Int64, resumable: Bool,
            protocolName: String? = nil, expires: String? = nil, checksumAlgorithm: String? = nil
        ) {
            self.uploadURL = uploadURL
            self.interopVersion = interopVersion
            self.source = source
            self.acknowledgedBytes = acknowledgedBytes
            self.resumable = resumable
            self.protocolName = protocolName
            self.expires = expires
            self.checksumAlgorithm = checksumAlgorithm
        }

        enum CodingKeys: String, CodingKey {
            case uploadURL, interopVersion, source, acknowledgedBytes, resumable
            case protocolName = "protocol"
            case expires, checksumAlgorithm, s3, stream
        }

        /// The protocol this upload speaks; tokens from before the field existed are IETF uploads.
        public var uploadProtocol: UploadProtocol { protocolName.flatMap(UploadProtocol.init(rawValue:)) ?? .ietf }
    }

    /// A stream upload's local state. Stream offsets: byte N of the stream is byte N of the spool file.
    public struct StreamState: Codable, Sendable, Equatable {
        /// The spool file (0600, in the state folder's `spool/`); deleted with the token.
        public var spool: String
        /// Bytes below this were acknowledged by the server and dropped from the spool.
        public var start: Int64
        /// Bytes of the stream read and made durable in the spool.
        public var durable: Int64
        /// True once stdin reached its end: `durable` is then the stream's length, and a resume needs no input.
        public var ended: Bool
        /// `--spool-max`: the most bytes the spool holds at once.
        public var spoolMax: Int64
        /// SHA-256 of each block of the stream, to check a replayed stream against.
        public var ledger: StreamLedger

        public init(spool: String, start: Int64, durable: Int64, ended: Bool, spoolMax: Int64, ledger: StreamLedger) {
            self.spool = spool
            self.start = start
            self.durable = durable
            self.ended = ended
            self.spoolMax = spoolMax
            self.ledger = ledger
        }
    }

    /// Where an S3 transfer goes, and for an upload the checkpoint of parts. Credentials are read again on
    /// every run (environment, `~/.aws`, `profile`); none is ever written here.
    public struct S3State: Codable, Sendable, Equatable {
        /// `scheme://host[:port]` of the endpoint.
        public var endpoint: String
        public var region: String
        public var bucket: String
        public var key: String
        /// The profile the user named; nil when the default chain found the credentials.
        public var profile: String?
        /// Path-style addressing (`/BUCKET/KEY`) rather than virtual-hosted (`BUCKET.host/KEY`).
        public var pathStyle: Bool
        /// The multipart upload, once CreateMultipartUpload named it; nil for a single PUT.
        public var uploadId: String?
        public var partSize: Int64?
        /// Parts sent at once (`--parallel`), kept so that `resume` goes on as the upload began.
        public var parallel: Int?
        /// The parts' checksum (`--s3-checksum`): a multipart upload keeps the one it was created with.
        /// Absent in tokens of earlier releases, which sent `Content-MD5`.
        public var checksum: S3Checksum?
        /// Parts S3 acknowledged, each written here (crash-safely) as soon as its answer came.
        public var parts: [S3Part]?

        public init(
            endpoint: String, region: String, bucket: String, key: String, profile: String?, pathStyle: Bool,
            uploadId: String? = nil, partSize: Int64? = nil, parts: [S3Part]? = nil
        ) {
            self.endpoint = endpoint
            self.region = region
            self.bucket = bucket
            self.key = key
            self.profile = profile
            self.pathStyle = pathStyle
            self.uploadId = uploadId
            self.partSize = partSize
            self.parts = parts
        }

        /// `s3://BUCKET/KEY`
        public var address: String { "s3://\(bucket)/\(key)" }
    }

    /// Identifies an upload's source file, so that a resume never sends a mixture of two files.
    public struct SourceIdentity: Codable, Sendable, Equatable {
        public var path: String
        public var size: Int64
        public var mtime: Double
        public var inode: UInt64
        /// SHA-256 (hex) of the first and last MiB.
        public var edgeHash: String
    }

    public init(id: String, kind: Kind, url: String, headers: [String], now: Date = Date()) {
        self.version = Self.currentVersion
        self.id = id
        self.kind = kind
        self.url = url
        self.headers = headers
        self.createdAt = now
        self.updatedAt = now
    }

    /// Drops the headers that carry credentials: the user passes them again to `resume`.
    public static func storableHeaders(_ headers: [String]) -> [String] {
        let secret: Set<String> = ["authorization", "cookie", "proxy-authorization"]
        return headers.filter { line in
            let name = line.split(separator: ":", maxSplits: 1).first.map { $0.trimmingSpaces().lowercased() } ?? ""
            return !secret.contains(name)
        }
    }
}
