import FoundationEssentials
import ResumeKit

/// Unfinished uploads kept in S3, so that any instance continues any upload: per upload a multipart
/// upload on its final key (the parts), a tail object (the bytes after the last part, fewer than a part)
/// and a record object, both under the prefix's hidden `.resumectl-uploads/` (``S3UploadKeys``).
///
/// Nothing of an upload lives in one process: ``load(_:)`` reads it back whole from S3 on any
/// instance. Every method blocks; call them on the store's thread pool.
struct S3UploadStore: Sendable {
    let client: S3Client
    let keys: S3UploadKeys
    /// With `--on-upload-complete`: this instance's id, written as the hook's holder when an upload is found finished.
    var hookHolder: String? = nil
    /// Milliseconds a holder has to run a hook before another instance may.
    var hookWindow: Int64 = 0

    /// The tail object's header naming the part its bytes open (see ``S3UploadProgress``).
    static let tailPartHeader = "x-amz-meta-resumectl-part"
    /// The multipart upload's metadata naming the upload it belongs to: S3 forgets a multipart upload
    /// once it is completed, and the object it became carries this, so an instance that missed the
    /// completion (its completer killed before the record said so) still knows the object as this upload's.
    static let uploadIDHeader = "x-amz-meta-resumectl-upload"

    func finalKey(_ upload: UploadRecord) -> String { keys.object(upload.target) }

    // MARK: Creating and reading back

    /// The flexible checksum every part carries, so that S3 checks each part as it arrives and the
    /// completed object keeps a checksum of its parts' (`x-amz-checksum-mode: ENABLED` shows it).
    static let checksum = "CRC32C"

    /// Starts the multipart upload (declaring `checksum`, named by ``uploadIDHeader``) and writes the
    /// record, before anyone hears of the upload. A tus final upload declares none: its parts are copies.
    func create(_ upload: UploadRecord, checksum: String? = Self.checksum) throws(UploadFailure) -> S3UploadRecord {
        var headers: HeaderFields = [Self.uploadIDHeader: upload.id]
        if let checksum { headers.set("x-amz-checksum-algorithm", checksum) }
        let created = try call(
            "POST", finalKey(upload), query: [("uploads", "")], headers: headers, doing: "start the multipart upload")
        let multipartID: String
        do {
            multipartID = try client.answers.uploadID(created.body)
        } catch {
            throw UploadFailure(status: 502, "S3's CreateMultipartUpload answer: \(error)")
        }
        let record = S3UploadRecord(upload: upload, multipartID: multipartID, checksum: checksum)
        try save(record)
        return record
    }

    /// Writes the record object over its last version.
    func save(_ record: S3UploadRecord) throws(UploadFailure) {
        _ = try call(
            "PUT", keys.record(record.id), headers: ["Content-Type": "application/json"], body: record.bytes,
            doing: "write the upload's record")
    }

    /// The upload as S3 holds it now, or `nil` when S3 has no record of it (never created, removed, expired).
    /// The record's `offset` is set from the parts and the tail. A multipart upload S3 no longer lists
    /// whose object is at the key is this upload finished (``completedObject(_:)``): the record says so from now on.
    func load(_ id: String) throws(UploadFailure) -> (record: S3UploadRecord, progress: S3UploadProgress)? {
        guard var record = try record(id) else { return nil }
        if record.upload.phase == .finishing { return (record, S3UploadProgress(parts: [], tail: nil)) }
        guard let parts = try listParts(record) else {
            guard let size = try completedObject(record) else { return nil }
            // Finished whether or not the record can be written now: the next reader finds the object too.
            let finished = (try? markFinished(record, size: size)) ?? finishedRecord(record, size: size)
            return (finished, S3UploadProgress(parts: [], tail: nil))
        }
        let progress = S3UploadProgress(parts: parts, tail: try tail(id))
        record.upload.offset = progress.offset
        return (record, progress)
    }

    /// The record object alone, or `nil` when there is none.
    func record(_ id: String) throws(UploadFailure) -> S3UploadRecord? {
        let got = try send("GET", keys.record(id), doing: "read the upload's record")
        if got.status == 404 { return nil }
        guard got.isSuccess else { throw refusal(got, "read the upload's record") }
        guard let record = S3UploadRecord(got.body, id: id) else {
            throw UploadFailure(status: 500, "the upload's record on S3 does not parse")
        }
        return record
    }

    /// Every page of ListParts; `nil` when S3 no longer knows the multipart upload.
    private func listParts(_ record: S3UploadRecord) throws(UploadFailure) -> [ListedPart]? {
        var parts: [ListedPart] = []
        var marker: String?
        repeat {
            var query = [("uploadId", record.multipartID)]
            if let marker { query.append(("part-number-marker", marker)) }
            let page = try send("GET", finalKey(record.upload), query: query, doing: "list the upload's parts")
            if page.status == 404 { return nil }
            guard page.isSuccess else { throw refusal(page, "list the upload's parts") }
            do {
                let read = try client.answers.parts(page.body)
                parts += read.parts
                marker = read.nextMarker
            } catch {
                throw UploadFailure(status: 502, "S3's ListParts answer: \(error)")
            }
        } while marker != nil
        return parts
    }

    /// The tail object's size and part number, if there is one.
    private func tail(_ id: String) throws(UploadFailure) -> S3UploadProgress.Tail? {
        let head = try send("HEAD", keys.tail(id), doing: "look for the upload's tail")
        if head.status == 404 { return nil }
        guard head.isSuccess, let size = head.headers["Content-Length"].flatMap({ Int64($0) }),
            let part = head.headers[Self.tailPartHeader].flatMap({ Int($0) })
        else { throw refusal(head, "look for the upload's tail") }
        return .init(size: size, part: part)
    }

    /// The tail's bytes (fewer than a part), to open the next part with.
    func readTail(_ id: String) throws(UploadFailure) -> [UInt8] {
        try call("GET", keys.tail(id), doing: "read the upload's tail").body
    }

    // MARK: Appending

    /// Stores `bytes` as part `number`, with its checksum when the upload declared one (S3 refuses a
    /// part whose bytes do not match it); returns the part as S3 lists it.
    func uploadPart(_ record: S3UploadRecord, number: Int, _ bytes: [UInt8]) throws(UploadFailure) -> ListedPart {
        var headers: HeaderFields = [:]
        var checksums: [String: String] = [:]
        if let name = record.checksum, name == Self.checksum {
            let value = Data(DigestAlgorithm.crc32c.digest(bytes)).base64EncodedString()
            headers.set("x-amz-checksum-" + name.lowercased(), value)
            checksums[name] = value
        }
        let stored = try call(
            "PUT", finalKey(record.upload), query: [("partNumber", String(number)), ("uploadId", record.multipartID)],
            headers: headers, body: bytes, doing: "store part \(number)")
        return ListedPart(number: number, size: Int64(bytes.count), etag: stored.etag ?? "", checksums: checksums)
    }

    /// Part `number` of a tus final upload, from its partial uploads' objects (``S3JoinPlan``): copied inside
    /// S3 (UploadPartCopy), or read through this server and sent as one part.
    func joinPart(_ record: S3UploadRecord, number: Int, _ part: S3JoinPlan.Part, keys: [String])
        throws(UploadFailure) -> ListedPart
    {
        let query = [("partNumber", String(number)), ("uploadId", record.multipartID)]
        let range = { (slice: S3JoinPlan.Slice) in "bytes=\(slice.range.lowerBound)-\(slice.range.upperBound - 1)" }
        guard case .copy(let slice) = part else {
            var bytes: [UInt8] = []
            for slice in part.slices where !slice.range.isEmpty {
                bytes += try call(
                    "GET", keys[slice.source], headers: ["Range": range(slice)], doing: "read a partial upload"
                ).body
            }
            guard bytes.count == part.size else {
                throw UploadFailure(status: 410, "a partial upload is shorter than its length")
            }
            return try uploadPart(record, number: number, bytes)
        }
        let source = "/" + client.bucket + "/" + S3Encoding.path(keys[slice.source])
        let copied = try call(
            "PUT", finalKey(record.upload), query: query,
            headers: ["x-amz-copy-source": source, "x-amz-copy-source-range": range(slice)],
            doing: "copy part \(number)")
        // S3 may answer 200 with an error document.
        guard client.answers.error(copied.body) == nil, let etag = try? client.answers.copiedETag(copied.body) else {
            throw refusal(copied, "copy part \(number)")
        }
        return ListedPart(number: number, size: part.size, etag: etag)
    }

    /// Keeps `bytes` as the tail, to open part `part` once more bytes come.
    func putTail(_ id: String, part: Int, _ bytes: [UInt8]) throws(UploadFailure) {
        _ = try call(
            "PUT", keys.tail(id), headers: [Self.tailPartHeader: String(part)], body: bytes,
            doing: "store the upload's tail")
    }

    func deleteTail(_ id: String) throws(UploadFailure) {
        let deleted = try send("DELETE", keys.tail(id), doing: "delete the upload's tail")
        guard deleted.isSuccess || deleted.status == 404 else { throw refusal(deleted, "delete the upload's tail") }
    }

    // MARK: Finishing and removing

    /// The CompleteMultipartUpload body (the client's own builder): each part with its ETag and, for an
    /// upload created with a checksum, the part's checksum as S3 listed it (`ListParts` on whichever
    /// instance completes; S3 then checks the object against them).
    static func completion(_ parts: [ListedPart], checksum: String?) -> String {
        MultipartPlan.completionBody(
            parts.map { part in
                S3Part(
                    number: part.number, size: part.size, checksum: checksum.flatMap { part.checksums[$0] },
                    etag: part.etag)
            },
            checksum: checksum)
    }

    /// Completes the multipart upload onto the final key (refused with 409 when an object is there and
    /// not `replacing`, by `If-None-Match: *` on the completion), then marks the record finished.
    func complete(_ record: S3UploadRecord, parts: [ListedPart], replacing: Bool) throws(UploadFailure)
        -> S3UploadRecord
    {
        let document = Self.completion(parts, checksum: record.checksum)
        var headers: HeaderFields = ["Content-Type": "application/xml"]
        if !replacing { headers.set("If-None-Match", "*") }
        let done = try send(
            "POST", finalKey(record.upload), query: [("uploadId", record.multipartID)], headers: headers,
            body: Array(document.utf8), doing: "complete the upload")
        // Refused (an object is there, or S3 no longer knows the multipart upload): a completion of
        // this upload that succeeded before, its answer or its record lost, left an object named by it.
        if done.status == 412 || done.status == 409 || done.status == 404 {
            if let size = try completedObject(record) { return try markFinished(record, size: size) }
            if done.status != 404 {
                throw UploadFailure(status: 409, "an object exists there (serve with --overwrite to replace objects)")
            }
        }
        guard done.isSuccess, client.answers.error(done.body) == nil else { throw refusal(done, "complete the upload") }
        return try markFinished(record, size: parts.reduce(0) { $0 + $1.size })
    }

    /// The size of the object at the upload's key when it is this upload's, completed (S3 shows the
    /// metadata its multipart upload was created with); `nil` when there is none or another one.
    func completedObject(_ record: S3UploadRecord) throws(UploadFailure) -> Int64? {
        let head = try send("HEAD", finalKey(record.upload), doing: "look for the completed object")
        if head.status == 404 || head.status == 403 { return nil }
        guard head.isSuccess else { throw refusal(head, "look for the completed object") }
        guard head.headers[Self.uploadIDHeader] == record.id else { return nil }
        return head.headers["Content-Length"].flatMap { Int64($0) }
    }

    /// The record says `finishing` (the object is complete, `size` bytes), its tail gone.
    private func markFinished(_ record: S3UploadRecord, size: Int64) throws(UploadFailure) -> S3UploadRecord {
        let finished = finishedRecord(record, size: size)
        try? deleteTail(record.id)
        try save(finished)
        return finished
    }

    private func finishedRecord(_ record: S3UploadRecord, size: Int64) -> S3UploadRecord {
        var finished = record
        finished.hook =
            record.upload.concat == .partial
            ? nil : hookHolder.map { S3HookClaim(holder: $0, until: WallClock.millis() + hookWindow) }
        finished.upload.phase = .finishing
        finished.upload.offset = size
        finished.upload.length = finished.upload.length ?? size
        return finished
    }

    /// Aborts the multipart upload (unless completed) and deletes the tail and the record.
    func remove(_ record: S3UploadRecord) {
        if record.upload.phase != .finishing {
            _ = try? send("DELETE", finalKey(record.upload), query: [("uploadId", record.multipartID)], doing: "abort")
        }
        try? deleteTail(record.id)
        if record.upload.concat == .partial {
            _ = try? send("DELETE", finalKey(record.upload), doing: "delete the partial upload")
        }
        _ = try? send("DELETE", keys.record(record.id), doing: "delete the record")
    }

    /// The ids of every upload record under the prefix (for the expiry sweep).
    func recordIDs() throws(UploadFailure) -> [String] {
        var ids: [String] = []
        var token: String?
        repeat {
            var query = [("list-type", "2"), ("prefix", keys.uploads)]
            if let token { query.append(("continuation-token", token)) }
            let page = try call("GET", "", query: query, doing: "list the uploads")
            do {
                let read = try client.answers.objects(page.body)
                for object in read.objects where object.key.hasSuffix(".json") {
                    let id = object.key.dropFirst(keys.uploads.count).dropLast(5)
                    if UploadStore.isValidID(id) { ids.append(String(id)) }
                }
                token = read.continuation
            } catch {
                throw UploadFailure(status: 502, "S3's ListObjectsV2 answer: \(error)")
            }
        } while token != nil
        return ids
    }

    // MARK: Requests

    private func send(
        _ method: String, _ key: String, query: [(String, String)] = [], headers: HeaderFields = [:],
        body: [UInt8]? = nil,
        doing what: String
    ) throws(UploadFailure) -> S3Client.Response {
        do {
            return try client.send(method, key: key, query: query, headers: headers, body: body)
        } catch {
            throw UploadFailure(status: 503, "cannot \(what): \(error.reason)")
        }
    }

    /// `send`, and anything but a 2xx is a failure.
    private func call(
        _ method: String, _ key: String, query: [(String, String)] = [], headers: HeaderFields = [:],
        body: [UInt8]? = nil,
        doing what: String
    ) throws(UploadFailure) -> S3Client.Response {
        let response = try send(method, key, query: query, headers: headers, body: body, doing: what)
        guard response.isSuccess else { throw refusal(response, what) }
        return response
    }

    private func refusal(_ response: S3Client.Response, _ what: String) -> UploadFailure {
        let detail = client.answers.error(response.body)?.line ?? "S3 answered \(response.status)"
        // S3 throttling or failing is the client's cue to come back later; anything else is ours.
        let status = response.status == 503 || response.status >= 500 ? 503 : 502
        return UploadFailure(status: status, "cannot \(what): \(detail)")
    }
}
