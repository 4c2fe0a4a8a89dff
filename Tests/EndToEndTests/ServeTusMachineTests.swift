import Foundation
import NIOHTTP1
import Testing

@testable import ResumeServer

/// `serve`'s tus 1.0.0 machine, driven by request heads and records alone: one test per MUST of the
/// core protocol and of each extension `serve` lists (creation, creation-with-upload,
/// creation-defer-length, termination, expiration, checksum), each named after the sentence it checks.
@Suite("serve tus machine")
struct ServeTusMachineTests {
    typealias M = TusMachine

    static let tus = ("Tus-Resumable", "1.0.0")
    static let body = ("Content-Type", "application/offset+octet-stream")
    static let id = "0123456789abcdef0123456789abcdef"
    static let url = M.prefix + id

    static func classify(_ method: HTTPMethod, _ target: String, _ fields: [(String, String)], maxSize: Int64? = nil)
        -> M.Request
    {
        M.classify(method: method, target: target, headers: HTTPHeaders(fields), maxSize: maxSize)
    }

    static func status(_ request: M.Request) -> Int? {
        if case .answer(let answer) = request { return answer.status }
        return nil
    }

    static func record(offset: Int64 = 0, length: Int64? = 100, metadata: String? = nil) -> UploadRecord {
        UploadRecord(
            id: id, kind: .tus, target: ["a.bin"], length: length, offset: offset, metadata: metadata,
            expires: 1_800_000_000_000)
    }

    static func append(offset: Int64, length: Int64? = nil) -> M.Append {
        M.Append(id: id, offset: offset, length: length, checksum: nil)
    }

    static func creation(_ fields: [(String, String)], maxSize: Int64? = nil) -> M.Request {
        classify(.POST, "/inbox/", [tus] + fields, maxSize: maxSize)
    }

    // MARK: Core

    @Test("core: Tus-Resumable MUST be included in every response")
    func tusResumableInEveryResponse() {
        let record = Self.record(offset: 10)
        var answers: [M.Answer] = [
            M.options(maxSize: nil), M.offset(record, finished: false), M.offset(record, finished: true),
            M.appended(record, created: true, finished: false), M.appended(record, created: false, finished: true),
            M.conflict(record), M.notFound(), M.notFound(head: true), M.terminated(), M.checksumMismatch(),
            UploadRequest.Dialect.tus.failed(UploadFailure(status: 503, "no slot")),
        ]
        for request in [
            Self.classify(.PATCH, Self.url, []), Self.classify(.PATCH, Self.url, [Self.tus]), Self.creation([]),
        ] {
            if case .answer(let answer) = request { answers.append(answer) }
        }
        #expect(answers.count == 14)
        for answer in answers { #expect(answer["Tus-Resumable"] == "1.0.0", "\(answer)") }
    }

    @Test("core: an unsupported Tus-Resumable MUST be answered 412 with Tus-Version, the request MUST NOT be processed")
    func unsupportedVersionIs412() {
        for fields in [[("Tus-Resumable", "0.2.2")], [], [("Tus-Resumable", "2.0.0")]] {
            for (method, target) in [(HTTPMethod.PATCH, Self.url), (.HEAD, Self.url), (.DELETE, Self.url)] {
                guard
                    case .answer(let answer) = Self.classify(
                        method, target, fields + [Self.body, ("Upload-Offset", "0")])
                else {
                    Issue.record("\(method) with \(fields) was processed")
                    continue
                }
                #expect(answer.status == 412)
                #expect(answer["Tus-Version"] == "1.0.0")
            }
        }
        #expect(
            Self.status(Self.classify(.POST, "/inbox/", [("Tus-Resumable", "0.2.2"), ("Upload-Length", "5")])) == 412)
    }

    @Test("core: OPTIONS — the server MUST ignore Tus-Resumable")
    func optionsIgnoresTusResumable() {
        #expect(Self.classify(.OPTIONS, "/", []) == .options)
        #expect(Self.classify(.OPTIONS, "/", [("Tus-Resumable", "0.2.2")]) == .options)
        #expect(Self.classify(.OPTIONS, Self.url, [("Tus-Resumable", "9.9.9")]) == .options)
        // The draft's discovery is not tus's.
        #expect(Self.classify(.OPTIONS, "/", [("Upload-Draft-Interop-Version", "8")]) == .notTus)
    }

    @Test("core: a successful OPTIONS response MUST contain Tus-Version, sorted by preference")
    func optionsContainsTusVersion() {
        let options = M.options(maxSize: nil)
        #expect(options.status == 204)
        #expect(options["Tus-Version"] == "1.0.0")
    }

    @Test("core: Tus-Extension MUST be a comma-separated list of the extensions supported")
    func tusExtensionList() {
        let listed = M.options(maxSize: nil)["Tus-Extension"]?.split(separator: ",").map(String.init) ?? []
        #expect(
            listed == [
                "creation", "creation-with-upload", "creation-defer-length", "termination", "expiration", "checksum",
                "concatenation",
            ])
    }

    @Test("core: Tus-Max-Size MUST be a non-negative integer (left out without a limit)")
    func tusMaxSizeInteger() {
        #expect(M.options(maxSize: 1_000_000)["Tus-Max-Size"] == "1000000")
        #expect(M.options(maxSize: 0)["Tus-Max-Size"] == "0")
        #expect(M.options(maxSize: nil)["Tus-Max-Size"] == nil)
    }

    @Test("core: HEAD MUST always include Upload-Offset, even if the offset is 0")
    func headIncludesOffsetAtZero() {
        #expect(Self.classify(.HEAD, Self.url, [Self.tus]) == .offset(id: Self.id))
        let head = M.offset(Self.record(offset: 0), finished: false)
        #expect(head.status == 200)
        #expect(head["Upload-Offset"] == "0")
    }

    @Test("core: HEAD MUST include Upload-Offset even if the upload is already considered completed")
    func headIncludesOffsetWhenCompleted() {
        let head = M.offset(Self.record(offset: 100, length: 100), finished: true)
        #expect(head.status == 200)
        #expect(head["Upload-Offset"] == "100")
        #expect(head["Upload-Length"] == "100")
    }

    @Test("core: if the size of the upload is known, HEAD MUST include Upload-Length")
    func headIncludesKnownLength() {
        #expect(M.offset(Self.record(offset: 5, length: 77), finished: false)["Upload-Length"] == "77")
    }

    @Test("core: HEAD MUST prevent caching with Cache-Control: no-store")
    func headIsNoStore() {
        #expect(M.offset(Self.record(), finished: false)["Cache-Control"] == "no-store")
        #expect(M.offset(Self.record(offset: 100), finished: true)["Cache-Control"] == "no-store")
        // An unknown upload: 404, no offset, not cached either.
        let missing = M.notFound(head: true)
        #expect(missing.status == 404)
        #expect(missing["Upload-Offset"] == nil)
        #expect(missing["Cache-Control"] == "no-store")
    }

    @Test("core: all PATCH requests MUST use Content-Type application/offset+octet-stream (else 415)")
    func patchContentType() {
        for type in [nil, "application/octet-stream", "text/plain"] {
            var fields = [Self.tus, ("Upload-Offset", "0")]
            if let type { fields.append(("Content-Type", type)) }
            #expect(Self.status(Self.classify(.PATCH, Self.url, fields)) == 415, "\(String(describing: type))")
        }
        #expect(
            Self.classify(
                .PATCH, Self.url,
                [Self.tus, ("Content-Type", "Application/Offset+Octet-Stream"), ("Upload-Offset", "0")])
                == .append(Self.append(offset: 0)))
    }

    @Test("core: Upload-Offset MUST be a non-negative integer")
    func uploadOffsetInteger() {
        for value in ["-1", "x", "", "1.5", "0x10"] {
            #expect(
                Self.status(Self.classify(.PATCH, Self.url, [Self.tus, Self.body, ("Upload-Offset", value)])) == 400,
                "\(value)")
        }
        #expect(Self.status(Self.classify(.PATCH, Self.url, [Self.tus, Self.body])) == 400)
        #expect(
            Self.classify(.PATCH, Self.url, [Self.tus, Self.body, ("Upload-Offset", "42")])
                == .append(Self.append(offset: 42)))
    }

    @Test("core: if the offsets do not match, the server MUST respond 409 without modifying the upload")
    func offsetMismatchIs409() {
        let record = Self.record(offset: 40)
        for offset: Int64 in [0, 39, 41, 100] {
            let answer = M.admit(
                Self.append(offset: offset), contentLength: 10, record: record, finished: false, maxSize: nil)
            #expect(answer?.status == 409, "\(offset)")
            #expect(answer?["Upload-Offset"] == "40")
        }
        // Finished, asked at another offset: the same.
        #expect(
            M.admit(
                Self.append(offset: 0), contentLength: 0, record: Self.record(offset: 100), finished: true, maxSize: nil
            )?.status == 409)
    }

    @Test(
        "core: a successful PATCH MUST be answered 204 with the new Upload-Offset, the old offset plus the bytes stored"
    )
    func patchAcknowledgedWith204() {
        var record = Self.record(offset: 40)
        #expect(
            M.admit(Self.append(offset: 40), contentLength: 25, record: record, finished: false, maxSize: nil) == nil)
        record.offset += 25
        let answer = M.appended(record, created: false, finished: false)
        #expect(answer.status == 204)
        #expect(answer["Upload-Offset"] == "65")
        #expect(answer["Location"] == nil)
    }

    @Test("core: a PATCH to an upload the server does not hold is 404 (a draft upload's id included)")
    func patchUnknownIs404() {
        var draft = Self.record(offset: 0)
        draft.kind = .ietf
        #expect(
            M.admit(Self.append(offset: 0), contentLength: 1, record: draft, finished: false, maxSize: nil)?.status
                == 404)
        #expect(M.notFound().status == 404)
        #expect(M.notFound()["Upload-Offset"] == nil)
    }

    @Test("core: a PATCH at the final offset of a completed upload is answered 204 with that offset again")
    func patchAtFinalOffsetOfCompletedUpload() {
        let done = Self.record(offset: 100, length: 100)
        let again = M.admit(Self.append(offset: 100), contentLength: 0, record: done, finished: true, maxSize: nil)
        #expect(again?.status == 204)
        #expect(again?["Upload-Offset"] == "100")
        #expect(again?["Upload-Expires"] == nil)
        #expect(
            M.admit(Self.append(offset: 100), contentLength: nil, record: done, finished: true, maxSize: nil)?.status
                == 204)
        // Bytes past its end: refused, the upload as it was.
        #expect(
            M.admit(Self.append(offset: 100), contentLength: 1, record: done, finished: true, maxSize: nil)?.status
                == 400)
    }

    @Test(
        "core: X-HTTP-Method-Override MUST be interpreted as the request's method — on tus requests, as tus's methods")
    func methodOverride() {
        func method(_ line: String, _ override: String?, tus: Bool = true) -> String {
            MethodOverride.effective(requestMethod: line, override: override, isTus: tus)
        }
        #expect(method("GET", "OPTIONS", tus: false) == "OPTIONS")
        #expect(method("POST", " patch ") == "PATCH")
        #expect(method("POST", "delete") == "DELETE")
        #expect(method("GET", "HEAD") == "HEAD")
        #expect(method("GET", "POST") == "POST")
        // Not a tus request, or not one of tus's methods: the request line's method stands, so a write stays a write.
        #expect(method("PUT", "GET") == "PUT")
        #expect(method("PUT", "HEAD", tus: false) == "PUT")
        #expect(method("POST", "GET", tus: false) == "POST")
        #expect(method("PATCH", "PUT") == "PATCH")
        #expect(method("PUT", "\u{131}OPTIONS") == "PUT")
        #expect(method("PUT", nil) == "PUT")
        // The machine reads the method it is given: what the override made of it.
        #expect(Self.classify(.OPTIONS, "/", []) == .options)
        #expect(
            Self.classify(.PATCH, Self.url, [Self.tus, Self.body, ("Upload-Offset", "3")])
                == .append(Self.append(offset: 3)))
        #expect(Self.classify(.GET, "/inbox/", [Self.tus, ("X-HTTP-Method-Override", "POST")]) == .notTus)
    }

    // MARK: creation

    @Test("creation: the request MUST include Upload-Length or Upload-Defer-Length: 1, not both")
    func creationNeedsOneLength() {
        #expect(Self.status(Self.creation([])) == 400)
        #expect(Self.status(Self.creation([("Upload-Length", "5"), ("Upload-Defer-Length", "1")])) == 400)
        #expect(
            Self.creation([("Upload-Length", "5")])
                == .create(M.Creation(length: 5, metadata: nil, withBody: false, checksum: nil)))
        #expect(
            Self.creation([("Upload-Defer-Length", "1")])
                == .create(M.Creation(length: nil, metadata: nil, withBody: false, checksum: nil)))
    }

    @Test("creation: Upload-Length MUST be a non-negative integer")
    func uploadLengthInteger() {
        for value in ["-1", "ten", "", "1e3"] {
            #expect(Self.status(Self.creation([("Upload-Length", value)])) == 400, "\(value)")
        }
        #expect(
            Self.creation([("Upload-Length", "0")])
                == .create(M.Creation(length: 0, metadata: nil, withBody: false, checksum: nil)))
    }

    @Test("creation: a length over the maximum (Tus-Max-Size) MUST be answered 413")
    func lengthOverMaximumIs413() {
        #expect(Self.status(Self.creation([("Upload-Length", "1001")], maxSize: 1000)) == 413)
        #expect(Self.status(Self.creation([("Upload-Length", "1000")], maxSize: 1000)) == nil)
        // A deferred length given past it, by a later PATCH, too.
        let deferred = Self.record(offset: 0, length: nil)
        #expect(
            M.admit(
                Self.append(offset: 0, length: 1001), contentLength: 0, record: deferred, finished: false, maxSize: 1000
            )?.status == 413)
    }

    @Test("creation: success MUST be 201 with the new upload's URL in Location")
    func creationIs201WithLocation() {
        let created = M.appended(Self.record(), created: true, finished: false)
        #expect(created.status == 201)
        #expect(created["Location"] == Self.url)
    }

    @Test("creation: responses to HEAD MUST include Upload-Metadata as the creation gave it")
    func headIncludesMetadata() {
        let metadata = "filename YS5iaW4=,private"
        #expect(
            Self.creation([("Upload-Length", "5"), ("Upload-Metadata", metadata)])
                == .create(M.Creation(length: 5, metadata: metadata, withBody: false, checksum: nil)))
        #expect(M.offset(Self.record(metadata: metadata), finished: false)["Upload-Metadata"] == metadata)
        #expect(M.offset(Self.record(offset: 100, metadata: metadata), finished: true)["Upload-Metadata"] == metadata)
        #expect(M.offset(Self.record(), finished: false)["Upload-Metadata"] == nil)
    }

    @Test("creation: Upload-Metadata keys MUST be unique and not empty, values MUST be base64")
    func metadataFormat() {
        for bad in ["a YQ==,a Yg==", "a YQ==,,b", "a not*base64", "a YQ", "a YQ== Yg==", ","] {
            #expect(Self.status(Self.creation([("Upload-Length", "5"), ("Upload-Metadata", bad)])) == 400, "\(bad)")
        }
        for good in ["filename YS5iaW4=", "a YQ==,b", "a YQ==, b Yg==", "empty"] {
            #expect(Self.status(Self.creation([("Upload-Length", "5"), ("Upload-Metadata", good)])) == nil, "\(good)")
        }
    }

    // MARK: creation-with-upload

    @Test("creation-with-upload: a creation carrying bytes MUST say Content-Type application/offset+octet-stream")
    func creationWithUploadContentType() {
        #expect(
            Self.creation([("Upload-Length", "5"), Self.body, ("Content-Length", "5")])
                == .create(M.Creation(length: 5, metadata: nil, withBody: true, checksum: nil)))
        #expect(
            Self.creation([("Upload-Length", "5"), ("Content-Type", "text/plain")])
                == .create(M.Creation(length: 5, metadata: nil, withBody: false, checksum: nil)))
        // More bytes than the length given.
        #expect(Self.status(Self.creation([("Upload-Length", "5"), Self.body, ("Content-Length", "6")])) == 400)
    }

    @Test("creation-with-upload: the 201 MUST include Upload-Offset, the bytes of the creation accepted")
    func creationWithUploadReportsOffset() {
        let created = M.appended(Self.record(offset: 60), created: true, finished: false)
        #expect(created.status == 201)
        #expect(created["Upload-Offset"] == "60")
        let whole = M.appended(Self.record(offset: 100), created: true, finished: true)
        #expect(whole["Upload-Offset"] == "100")
    }

    // MARK: creation-defer-length

    @Test("creation-defer-length: Upload-Defer-Length's value MUST be 1")
    func deferLengthIsOne() {
        for value in ["0", "2", "true", ""] {
            #expect(Self.status(Self.creation([("Upload-Defer-Length", value)])) == 400, "\(value)")
        }
    }

    @Test("creation-defer-length: the server MUST add creation-defer-length to Tus-Extension")
    func deferLengthListed() {
        #expect(
            M.options(maxSize: nil)["Tus-Extension"]?.split(separator: ",").contains("creation-defer-length") == true)
    }

    @Test("creation-defer-length: while the length is unknown, HEAD MUST carry Upload-Defer-Length: 1")
    func headCarriesDeferLength() {
        let head = M.offset(Self.record(offset: 30, length: nil), finished: false)
        #expect(head["Upload-Defer-Length"] == "1")
        #expect(head["Upload-Length"] == nil)
    }

    @Test("creation-defer-length: once known, the client MUST set Upload-Length in the next PATCH; the upload takes it")
    func patchSetsDeferredLength() {
        #expect(
            Self.classify(.PATCH, Self.url, [Self.tus, Self.body, ("Upload-Offset", "30"), ("Upload-Length", "50")])
                == .append(Self.append(offset: 30, length: 50)))
        #expect(
            Self.status(
                Self.classify(.PATCH, Self.url, [Self.tus, Self.body, ("Upload-Offset", "30"), ("Upload-Length", "x")]))
                == 400)
        let deferred = Self.record(offset: 30, length: nil)
        let append = Self.append(offset: 30, length: 50)
        #expect(M.admit(append, contentLength: 20, record: deferred, finished: false, maxSize: nil) == nil)
        #expect(M.length(of: append, deferred) == 50)
        // Shorter than what is already held, or than this PATCH would make it.
        #expect(
            M.admit(
                Self.append(offset: 30, length: 29), contentLength: 0, record: deferred, finished: false, maxSize: nil)?
                .status == 400)
        #expect(M.admit(append, contentLength: 21, record: deferred, finished: false, maxSize: nil)?.status == 400)
        // A PATCH without it leaves the length unknown.
        #expect(M.length(of: Self.append(offset: 30), deferred) == nil)
    }

    @Test("creation-defer-length: once set, the length MUST NOT be changed")
    func lengthNeverChanges() {
        let known = Self.record(offset: 30, length: 50)
        #expect(
            M.admit(
                Self.append(offset: 30, length: 60), contentLength: 0, record: known, finished: false, maxSize: nil)?
                .status == 400)
        #expect(
            M.admit(
                Self.append(offset: 30, length: 50), contentLength: 20, record: known, finished: false, maxSize: nil)
                == nil)
    }

    @Test("creation-defer-length: once the length is known, Upload-Defer-Length MUST be omitted")
    func deferLengthOmittedOnceKnown() {
        #expect(M.offset(Self.record(offset: 30, length: 50), finished: false)["Upload-Defer-Length"] == nil)
        #expect(M.offset(Self.record(offset: 50, length: 50), finished: true)["Upload-Defer-Length"] == nil)
    }

    // MARK: expiration

    @Test("expiration: Upload-Expires MUST be an RFC 9110 date")
    func expiresIsHTTPDate() throws {
        let value = try #require(M.appended(Self.record(offset: 10), created: false, finished: false)["Upload-Expires"])
        // 1_800_000_000 s after the epoch.
        #expect(value == "Fri, 15 Jan 2027 08:00:00 GMT")
    }

    @Test("expiration: Upload-Expires MUST be in every PATCH response while the upload may expire")
    func expiresInEveryPatchResponse() {
        #expect(M.appended(Self.record(offset: 10), created: false, finished: false)["Upload-Expires"] != nil)
        #expect(M.offset(Self.record(offset: 10), finished: false)["Upload-Expires"] != nil)
    }

    @Test("expiration: Upload-Expires MUST be in the creation's response when the expiry is known")
    func expiresInCreationResponse() {
        #expect(M.appended(Self.record(offset: 0), created: true, finished: false)["Upload-Expires"] != nil)
    }

    // MARK: checksum

    @Test("checksum: the server MUST support sha1, listed in Tus-Checksum-Algorithm")
    func checksumAlgorithmsListed() {
        let options = M.options(maxSize: nil)
        #expect(options["Tus-Checksum-Algorithm"]?.split(separator: ",").contains("sha1") == true)
        #expect(options["Tus-Extension"]?.split(separator: ",").contains("checksum") == true)
        let hello = "qvTGHdzF6KLavt4PO0gs2a6pQ00="  // sha1("hello")
        var checksum = TusChecksum(header: "sha1 \(hello)")
        #expect(checksum != nil)
        Data("hello".utf8).withUnsafeBytes { checksum?.update($0) }
        #expect(checksum?.matches() == true)
    }

    @Test("checksum: Upload-Checksum MUST be the algorithm and the base64 checksum separated by a space")
    func checksumHeaderFormat() {
        for bad in ["sha1", "sha1:qvTGHdzF6KLavt4PO0gs2a6pQ00=", "sha1 qvTGHdzF6KLavt4PO0gs2a6pQ00= x", "sha1 ***"] {
            #expect(
                Self.status(
                    Self.classify(
                        .PATCH, Self.url, [Self.tus, Self.body, ("Upload-Offset", "0"), ("Upload-Checksum", bad)]))
                    == 400, "\(bad)")
        }
        let good = "sha1 qvTGHdzF6KLavt4PO0gs2a6pQ00="
        #expect(
            Self.classify(.PATCH, Self.url, [Self.tus, Self.body, ("Upload-Offset", "0"), ("Upload-Checksum", good)])
                == .append(M.Append(id: Self.id, offset: 0, length: nil, checksum: good)))
    }

    @Test("checksum: an algorithm the server does not support MUST be answered 400")
    func unsupportedAlgorithmIs400() {
        #expect(
            Self.status(
                Self.classify(
                    .PATCH, Self.url,
                    [Self.tus, Self.body, ("Upload-Offset", "0"), ("Upload-Checksum", "md5 XUFAKrxLKna5cZ2REBfFkg==")]))
                == 400)
        #expect(
            Self.status(Self.creation([("Upload-Length", "5"), Self.body, ("Upload-Checksum", "crc32 AAAAAA==")]))
                == 400)
    }

    @Test("checksum: a mismatch MUST be answered 460 and the chunk discarded")
    func mismatchIs460() {
        var checksum = TusChecksum(header: "sha1 qvTGHdzF6KLavt4PO0gs2a6pQ00=")
        Data("hellO".utf8).withUnsafeBytes { checksum?.update($0) }
        #expect(checksum?.matches() == false)
        #expect(M.checksumMismatch().status == 460)
        #expect(M.checksumMismatch()["Upload-Offset"] == nil)
    }

    // MARK: termination

    @Test("termination: DELETE on an upload MUST be answered 204; later requests 404")
    func deleteIs204() {
        #expect(Self.classify(.DELETE, Self.url, [Self.tus]) == .terminate(id: Self.id))
        #expect(M.terminated().status == 204)
        #expect(M.notFound().status == 404)
    }

    @Test("termination: the server MUST add termination to Tus-Extension")
    func terminationListed() {
        #expect(M.options(maxSize: nil)["Tus-Extension"]?.split(separator: ",").contains("termination") == true)
    }

    @Test("no other method on an upload URL: 405 naming the ones allowed")
    func otherMethodsAre405() {
        for method in [HTTPMethod.PUT, .GET, .POST] {
            guard case .answer(let answer) = Self.classify(method, Self.url, [Self.tus]) else {
                Issue.record("\(method) on an upload URL was taken")
                continue
            }
            #expect(answer.status == 405)
            #expect(answer["Allow"] == "OPTIONS, POST, HEAD, PATCH, DELETE")
        }
    }
}
