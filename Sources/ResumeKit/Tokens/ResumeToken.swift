import FoundationEssentials

/// The resume state of one transfer, as stored in `tokens/<id>.json` (schema version 1; the JSON layout is
/// in `ResumeToken+Codable.swift`, with what ``Redact`` lets into the file). One schema serves both
/// directions; ``transfer`` holds the direction's part, so a download token cannot hold an upload's state.
public struct ResumeToken: Sendable, Equatable {
    public static let currentVersion = 1

    public enum Kind: String, Codable, Sendable { case download, upload }

    /// The direction of a transfer, with what only that direction keeps.
    public enum Transfer: Sendable, Equatable {
        case download(DownloadPart)
        case upload(UploadPart)
    }

    public var version: Int
    public var id: String
    /// The URL the user gave (downloads) or the creation URL (uploads).
    public var url: String
    /// Request headers to send again on resume. Written without credentials (see ``Redact``); in memory a
    /// running transfer's may hold them.
    public var headers: [String]
    /// Names of credential headers the transfer was given (`Authorization`, `X-Api-Key` …), whose values are
    /// never written: a resume without them says which to give again. Absent in tokens of earlier releases.
    public var withheldHeaders: [String]?
    public var createdAt: Date
    public var updatedAt: Date
    public var transfer: Transfer
    /// How the transfer connects (CA, `-k`, proxy, HTTP version …), so that a resume connects the same way.
    /// Absent when the defaults were used, and in tokens written before it existed.
    public var connection: ConnectionSettings?

    public var kind: Kind {
        switch transfer {
        case .download: .download
        case .upload: .upload
        }
    }

    /// The download's part; nil in an upload token.
    public var download: DownloadPart? {
        if case .download(let part) = transfer { part } else { nil }
    }

    /// The upload's part; nil in a download token.
    public var upload: UploadPart? {
        if case .upload(let part) = transfer { part } else { nil }
    }

    /// Where an S3 transfer goes, in either direction; nil for any other.
    public var s3: S3State? { download?.s3 ?? upload?.s3 }

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
        /// Every URL of the file when it has mirrors (`--mirror`, a Metalink), the token's own first; each keeps
        /// its own validator. Absent for one URL.
        public var mirrors: [Mirror]?
        /// A Metalink's piece hashes: each segment of a download with mirrors is a run of whole pieces.
        public var pieces: Pieces?
        /// The `--connections` and `--per-mirror` the segments were planned for: `resume`, which takes neither,
        /// runs with them again.
        public var connections: Int?
        public var perMirror: Int?
        /// An S3 object: where it is and how requests are signed (names only, never a key). Stored at
        /// the token's top level (`s3`), where earlier releases put it.
        public var s3: S3State?

        public var partPath: String { path + ".part" }
        /// "N of M mirrors in use" for a download with mirrors (`list`, `show`); nil for one URL.
        public var mirrorsInUse: String? {
            mirrors.map { "\($0.filter { $0.dropped == nil }.count) of \($0.count) mirrors in use" }
        }
        /// Committed bytes, over every segment of a segmented download.
        public var heldBytes: Int64 { segments.map { $0.reduce(0) { $0 + $1.committed } } ?? committedBytes }

        enum CodingKeys: String, CodingKey {
            case path, effectiveURL, etag, lastModified, validator, totalBytes, committedBytes, expectedSHA256,
                onChange, segments, mirrors, pieces, connections, perMirror
        }
    }

    /// One URL of a file with mirrors, with the validator its own ranges are asked with (`If-Range`).
    public struct Mirror: Codable, Sendable, Equatable {
        public var url: String
        public var etag: String?
        public var lastModified: String?
        public var validator: String?
        /// Why the download stopped using it (failed, changed, sent bytes no checksum vouches for).
        public var dropped: String?

        public init(url: String) { self.url = url }
    }

    /// Hashes of the file's consecutive pieces of `length` bytes (the last one shorter), RFC 5854 §4.2.13.
    public struct Pieces: Codable, Sendable, Equatable {
        public var length: Int64
        /// `sha-256`, `sha-384`, `sha-512` or `sha-1`: RFC 5854's names.
        public var algorithm: String
        public var hashes: [String]

        public init(length: Int64, algorithm: String, hashes: [String]) {
            self.length = length
            self.algorithm = algorithm
            self.hashes = hashes
        }
    }

    /// One range of a segmented download: bytes `start...end`, of which the first `committed` are on disk.
    public struct Segment: Codable, Sendable, Equatable {
        public var start: Int64
        public var end: Int64
        public var committed: Int64 = 0
        /// The mirrors (indexes into `mirrors`) whose bytes it holds: the suspects when a checksum fails.
        public var from: [Int]?
        /// Its piece hashes matched.
        public var verified: Bool?

        public var length: Int64 { end - start + 1 }
        public var isDone: Bool { committed >= length }
    }

    public struct UploadPart: Sendable, Equatable {
        /// The upload resource (the 104's or 201's `Location`); nil until the server named one.
        public var uploadURL: String?
        public var source: SourceIdentity
        /// The last offset the server acknowledged.
        public var acknowledgedBytes: Int64 = 0
        /// False once a server answered without draft support: only a whole new request can help.
        public var resumable = true
        /// The protocol, with what only it keeps.
        public var wire: Wire
        /// A stream from stdin (`upload -`): its spool and the hashes a replay is checked against.
        public var stream: StreamState?
        /// The folder upload (`b-…`) this file belongs to: `list` and `resume --all` leave the token to it.
        public var batch: String?
        /// A tus upload sent as partial uploads at once (`--connections`), then concatenated; nil for any other.
        public var concat: TusConcat?

        /// The protocol an upload speaks, with its own state. JSON: `protocol` names it (absent in tokens
        /// of the first release, which are IETF uploads, and before `--detach`'s upload asked the server).
        public enum Wire: Sendable, Equatable {
            /// Written by `--detach` before the server was asked: chosen when the upload runs.
            case undecided
            case ietf(InteropVersion)
            /// `expires`: when the server drops the upload (`Upload-Expires`, an HTTP-date); `checksum`:
            /// the `Upload-Checksum` algorithm chosen from the server's `Tus-Checksum-Algorithm`.
            case tus(expires: String?, checksum: DigestAlgorithm?)
            case plain
            /// The object, the multipart upload and its finished parts.
            case s3(S3State)

            public var uploadProtocol: UploadProtocol? {
                switch self {
                case .undecided: nil
                case .ietf: .ietf
                case .tus: .tus
                case .plain: .plain
                case .s3: .s3
                }
            }
        }

        /// The protocol this upload speaks; nil while undecided.
        public var uploadProtocol: UploadProtocol? { wire.uploadProtocol }

        /// An S3 upload's state; nil for other protocols.
        public var s3: S3State? {
            if case .s3(let state) = wire { state } else { nil }
        }

        /// When a tus server drops the upload (an HTTP-date); nil for other protocols.
        public var expires: String? {
            if case .tus(let expires, _) = wire { expires } else { nil }
        }

        /// Changes an S3 upload's state (nothing for other protocols, which have none).
        public mutating func updateS3(_ change: (inout S3State) -> Void) {
            guard case .s3(var state) = wire else { return }
            change(&state)
            wire = .s3(state)
        }
    }

    /// A tus upload sent as partial uploads side by side and joined by a final upload (tus 1.0.0's
    /// concatenation extension; ``TusConcatMachine``). JSON `upload.concat`.
    public struct TusConcat: Codable, Sendable, Equatable {
        /// One range of the file, sent as a partial upload.
        public struct Partial: Codable, Sendable, Equatable {
            /// The range's first byte in the file, and its length.
            public var start: Int64
            public var length: Int64
            /// The partial upload (its 201's `Location`); absent until the server named it.
            public var url: String?
            /// Bytes of the range the server acknowledged.
            public var offset: Int64

            public init(start: Int64, length: Int64, url: String? = nil, offset: Int64 = 0) {
                self.start = start
                self.length = length
                self.url = url
                self.offset = offset
            }
        }

        /// The ranges, in the file's order: the order the final upload names them in.
        public var partials: [Partial]
        /// The final upload (its 201's `Location`) once created: the upload is then complete.
        public var final: String?

        public init(partials: [Partial], final: String? = nil) {
            self.partials = partials
            self.final = final
        }

        /// As written to disk: no URL with a password.
        var redacted: TusConcat {
            var copy = self
            copy.final = final.map(Redact.url)
            for i in copy.partials.indices { copy.partials[i].url = copy.partials[i].url.map(Redact.url) }
            return copy
        }

        /// `size` bytes in `count` ranges of near-equal length (the first ones a byte longer), none empty.
        public init(size: Int64, count: Int) {
            let count = Int64(max(1, min(Int64(count), size)))
            let base = size / count
            let longer = size % count
            var start: Int64 = 0
            partials = (0..<count).map { i in
                let length = base + (i < longer ? 1 : 0)
                defer { start += length }
                return Partial(start: start, length: length)
            }
        }
    }

    /// A stream upload's local state. Stream offsets: byte N of the stream is byte N of the spool file.
    public struct StreamState: Codable, Sendable, Equatable {
        /// The spool file (0600, in the state folder's `spool/`); deleted with the token.
        public var spool: String
        /// Bytes below this were acknowledged by the server and dropped from the spool.
        public var start: Int64
        /// Bytes of the stream read and accounted for: the ledger's blocks and ``tail`` hold their checksums, so
        /// the server may hold up to here (a replay is checked against them). The JSON key is that of
        /// earlier releases, where every such byte was also fsynced in the spool.
        public var durable: Int64
        /// True once stdin reached its end: `durable` is then the stream's length, and a resume needs no input
        /// (the spool was fsynced first, unless the server had acknowledged every byte).
        public var ended: Bool
        /// `--spool-max`: the most bytes the spool holds at once.
        public var spoolMax: Int64
        /// Checksum of each complete block of the stream, to check a replayed stream against.
        public var ledger: StreamLedger
        /// Bytes fsynced in the spool; nil: all of `durable` (tokens of earlier releases). Bytes between this
        /// and `durable` were written but may be lost with the page cache (a power loss, not a kill): a replay
        /// brings them back, checked against the ledger and ``tail``.
        public var synced: Int64?
        /// Checksum of the bytes from the last complete block up to `durable` (the open block), in the
        /// ledger's algorithm; nil when `durable` is a block boundary or the token predates it.
        public var tail: String?

        /// Bytes of the spool a restart may rely on: what was fsynced, and below ``start`` nothing is needed.
        public var kept: Int64 { min(durable, max(start, synced ?? durable)) }
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

    public init(id: String, url: String, headers: [String], transfer: Transfer, now: Date = Date()) {
        self.version = Self.currentVersion
        self.id = id
        self.url = url
        self.headers = Redact.storableHeaders(headers)
        let withheld = Redact.withheldHeaderNames(headers)
        self.withheldHeaders = withheld.isEmpty ? nil : withheld
        self.transfer = transfer
        self.createdAt = now
        self.updatedAt = now
    }

    /// Withheld header names that `given` (this run's `-H` lines) does not give again; `Authorization` is
    /// also given by a login (`-u`, netrc).
    public func missingHeaders(given: [String], login: Bool) -> [String] {
        let names = Set(given.map { Redact.headerName($0).lowercased() })
        return (withheldHeaders ?? []).filter { name in
            let lower = name.lowercased()
            return !names.contains(lower) && !(login && lower == "authorization")
        }
    }
}

extension ResumeToken {
    /// The same token with another state for its direction.
    public func with(_ transfer: Transfer) -> ResumeToken {
        var token = self
        token.transfer = transfer
        return token
    }

    /// The download's part; an upload's token where a download's belongs is a bad token (65).
    func downloadPart() throws(TransferError) -> DownloadPart {
        guard let part = download else { throw TransferError(.badToken, "token \(id) has no download state") }
        return part
    }

    /// The upload's part; a download's token where an upload's belongs is a bad token (65).
    func uploadPart() throws(TransferError) -> UploadPart {
        guard let part = upload else { throw TransferError(.badToken, "token \(id) has no upload state") }
        return part
    }
}
