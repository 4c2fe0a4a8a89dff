import NIOHTTP1
import Testing

@testable import ResumeServer

/// `serve`'s own server side of the resumable-upload draft, driven by request heads alone: every
/// interop version's requests and answers, offset conflicts, limits, DELETE, a finished upload asked again.
@Suite("serve draft machine")
struct ServeDraftMachineTests {
    typealias M = DraftMachine

    static func classify(_ method: HTTPMethod, _ target: String, _ fields: [(String, String)]) -> M.Request {
        M.classify(method: method, target: target, headers: HTTPHeaders(fields))
    }

    static func record(offset: Int64, length: Int64?) -> UploadRecord {
        UploadRecord(
            id: "0123456789abcdef0123456789abcdef", kind: .ietf, interop: 8, target: ["a.bin"],
            length: length, offset: offset, expires: 0)
    }

    static func field(_ answer: M.Answer, _ name: String) -> String? {
        answer.fields.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    @Test("creations: the completion field of each version, lengths from Upload-Length or Content-Length")
    func creations() {
        #expect(
            Self.classify(
                .POST, "/a.bin",
                [("Upload-Draft-Interop-Version", "8"), ("Upload-Complete", "?1"), ("Content-Length", "10")])
                == .create(version: 8, complete: true, length: 10))
        #expect(
            Self.classify(
                .PUT, "/a.bin",
                [
                    ("Upload-Draft-Interop-Version", "6"), ("Upload-Complete", "?0"), ("Upload-Length", "99"),
                    ("Content-Length", "10"),
                ])
                == .create(version: 6, complete: false, length: 99))
        // Interop 3 says the opposite, in another field.
        #expect(
            Self.classify(
                .POST, "/a.bin",
                [("Upload-Draft-Interop-Version", "3"), ("Upload-Incomplete", "?0"), ("Content-Length", "4")])
                == .create(version: 3, complete: true, length: 4))
        #expect(
            Self.classify(.POST, "/a.bin", [("Upload-Draft-Interop-Version", "5"), ("Upload-Complete", "?0")])
                == .create(version: 5, complete: false, length: nil))
        // No completion field: a plain upload, whatever else it says.
        #expect(
            Self.classify(.POST, "/a.bin", [("Upload-Draft-Interop-Version", "6"), ("Content-Length", "4")])
                == .notDraft)
        #expect(Self.classify(.PUT, "/a.bin", [("Content-Length", "4")]) == .notDraft)
        // A complete creation whose two lengths disagree, or one that starts past 0.
        let bad = M.Request.answer(M.Answer(status: 400, fields: [M.Field("Upload-Draft-Interop-Version", "8")]))
        #expect(
            Self.classify(
                .POST, "/a.bin",
                [
                    ("Upload-Draft-Interop-Version", "8"), ("Upload-Complete", "?1"), ("Upload-Length", "5"),
                    ("Content-Length", "4"),
                ]) == bad)
        #expect(
            Self.classify(
                .POST, "/a.bin",
                [("Upload-Draft-Interop-Version", "8"), ("Upload-Complete", "?1"), ("Upload-Offset", "3")]) == bad)
    }

    @Test("an unknown interop version is 400 naming the newest one spoken; so is a missing one below the upload prefix")
    func versions() {
        let newest = M.Request.answer(M.Answer(status: 400, fields: [M.Field("Upload-Draft-Interop-Version", "9")]))
        for version in ["4", "7", "10", "x", "-1"] {
            #expect(
                Self.classify(.POST, "/a.bin", [("Upload-Draft-Interop-Version", version), ("Upload-Complete", "?1")])
                    == newest)
        }
        #expect(Self.classify(.HEAD, M.prefix + "abc", []) == newest)
        for version in [3, 5, 6, 8, 9] {
            #expect(
                Self.classify(.HEAD, M.prefix + "abc", [("Upload-Draft-Interop-Version", "\(version)")])
                    == .offset(version: version, id: "abc"))
        }
    }

    @Test("appends: Upload-Offset required, the partial-upload type from 6 on, a missing flag completes")
    func appends() {
        let url = M.prefix + "abc"
        #expect(
            Self.classify(
                .PATCH, url,
                [
                    ("Upload-Draft-Interop-Version", "8"), ("Upload-Complete", "?0"), ("Upload-Offset", "100"),
                    ("Content-Type", "application/partial-upload"), ("Content-Length", "50"),
                ])
                == .append(version: 8, id: "abc", offset: 100, complete: false, length: nil))
        #expect(
            Self.classify(
                .PATCH, url,
                [
                    ("Upload-Draft-Interop-Version", "6"), ("Upload-Complete", "?1"), ("Upload-Offset", "100"),
                    ("Content-Type", "application/partial-upload"), ("Content-Length", "50"),
                ])
                == .append(version: 6, id: "abc", offset: 100, complete: true, length: 150))
        #expect(
            Self.classify(
                .PATCH, url, [("Upload-Draft-Interop-Version", "5"), ("Upload-Offset", "7"), ("Content-Length", "3")])
                == .append(version: 5, id: "abc", offset: 7, complete: true, length: 10))
        let missingOffset = Self.classify(
            .PATCH, url,
            [
                ("Upload-Draft-Interop-Version", "8"), ("Upload-Complete", "?1"),
                ("Content-Type", "application/partial-upload"),
            ])
        #expect(missingOffset == .answer(M.Answer(status: 400, fields: [M.Field("Upload-Draft-Interop-Version", "8")])))
        let wrongType = Self.classify(
            .PATCH, url,
            [
                ("Upload-Draft-Interop-Version", "6"), ("Upload-Offset", "0"),
                ("Content-Type", "application/octet-stream"),
            ])
        guard case .answer(let answer) = wrongType else {
            Issue.record("a v6 PATCH of another type was taken: \(wrongType)")
            return
        }
        #expect(answer.status == 415)
        // HEAD and DELETE carry none of the upload fields.
        #expect(
            Self.classify(.HEAD, url, [("Upload-Draft-Interop-Version", "8"), ("Upload-Offset", "1")])
                == .answer(M.Answer(status: 400, fields: [M.Field("Upload-Draft-Interop-Version", "8")])))
        #expect(Self.classify(.DELETE, url, [("Upload-Draft-Interop-Version", "6")]) == .cancel(version: 6, id: "abc"))
        guard case .answer(let post) = Self.classify(.POST, url, [("Upload-Draft-Interop-Version", "6")]) else {
            Issue.record("POST to an upload URL was taken")
            return
        }
        #expect(post.status == 405)
    }

    @Test(
        """
        admission of an append: the offset must match (409 with the server's), lengths must agree, a finished upload \
        replays
        """
    )
    func admission() {
        let record = Self.record(offset: 100, length: 300)
        #expect(
            M.admit(version: 8, offset: 100, length: nil, contentLength: 50, record: record, finished: false) == nil)
        let conflict = M.admit(version: 8, offset: 50, length: nil, contentLength: 50, record: record, finished: false)
        #expect(conflict?.status == 409)
        #expect(conflict.flatMap { Self.field($0, "Upload-Offset") } == "100")
        #expect(conflict.flatMap { Self.field($0, "Upload-Complete") } == "?0")
        #expect(
            M.admit(version: 8, offset: 100, length: 400, contentLength: 50, record: record, finished: false)?.status
                == 400)
        #expect(
            M.admit(version: 8, offset: 100, length: nil, contentLength: 201, record: record, finished: false)?.status
                == 400)
        // Its client lost the final answer: an empty append at the end gets it again, anything else 409.
        let finished = Self.record(offset: 300, length: 300)
        let replay = M.admit(version: 6, offset: 300, length: nil, contentLength: 0, record: finished, finished: true)
        #expect(replay?.status == 201)
        #expect(replay.flatMap { Self.field($0, "Upload-Complete") } == "?1")
        #expect(
            M.admit(version: 6, offset: 0, length: nil, contentLength: 300, record: finished, finished: true)?.status
                == 409)
    }

    @Test("answers: 104 with a path-only Location, HEAD with the durable offset, limits by version, v3's inverted flag")
    func answers() {
        let record = Self.record(offset: 100, length: 300)
        let interim = M.informational(version: 6, id: record.id, maxSize: 1000)
        #expect(interim.status == 104)
        #expect(Self.field(interim, "Location") == "/resumable_upload/" + record.id)
        #expect(Self.field(interim, "Upload-Limit") == "max-size=1000")
        #expect(Self.field(M.informational(version: 3, id: record.id, maxSize: 1000), "Upload-Limit") == nil)

        let head8 = M.offset(version: 8, record: record, finished: false, maxSize: 1000)
        #expect(head8.status == 204)
        #expect(Self.field(head8, "Upload-Offset") == "100")
        #expect(Self.field(head8, "Upload-Length") == "300")
        #expect(Self.field(head8, "Upload-Limit") == "max-size=1000")
        #expect(Self.field(head8, "Cache-Control") == "no-store")
        let head3 = M.offset(version: 3, record: record, finished: false, maxSize: nil)
        #expect(Self.field(head3, "Upload-Incomplete") == "?1")
        #expect(Self.field(head3, "Upload-Length") == nil)

        let progress = M.progress(version: 5, record: record, created: true, maxSize: nil)
        #expect(progress.status == 201)
        #expect(Self.field(progress, "Upload-Complete") == "?0")
        #expect(Self.field(progress, "Location") != nil)
        #expect(M.progress(version: 8, record: record, created: false, maxSize: nil).status == 204)

        let done = M.done(version: 6, record: Self.record(offset: 300, length: 300), created: false)
        #expect(done.status == 201)
        #expect(Self.field(done, "Upload-Complete") == "?1")
        #expect(Self.field(done, "Upload-Offset") == "300")

        #expect(M.options(version: 8, maxSize: nil).fields.contains(M.Field("Upload-Limit", "min-size=0")))
        #expect(M.options(version: 8, maxSize: 5).fields.contains(M.Field("Upload-Limit", "min-size=0, max-size=5")))
        #expect(M.cancelled(version: 6).status == 204)
        #expect(M.notFound(version: 6).status == 404)
    }

    // MARK: Interop 9 (draft -12)

    @Test(
        """
        interop 9: the offset by GET as well as HEAD (PR #3467); before 9, GET stays 405 with the methods \
        that are allowed
        """
    )
    func interop9OffsetByGet() {
        let v9 = [("Upload-Draft-Interop-Version", "9")]
        #expect(Self.classify(.GET, M.prefix + "abc", v9) == .offset(version: 9, id: "abc"))
        #expect(Self.classify(.HEAD, M.prefix + "abc", v9) == .offset(version: 9, id: "abc"))
        guard case .answer(let old) = Self.classify(.GET, M.prefix + "abc", [("Upload-Draft-Interop-Version", "8")])
        else {
            Issue.record("GET at interop 8 is not refused")
            return
        }
        #expect(old.status == 405 && Self.field(old, "Allow") == "HEAD, PATCH, DELETE")
        guard case .answer(let put) = Self.classify(.PUT, M.prefix + "abc", v9) else {
            Issue.record("PUT at interop 9 is not refused")
            return
        }
        #expect(put.status == 405 && Self.field(put, "Allow") == "GET, HEAD, PATCH, DELETE")
    }

    @Test(
        """
        interop 9: an append to a completed upload gets the final answer again, whatever its offset (PR #3405); \
        at 8 a different offset is still 409
        """
    )
    func interop9ReplaysTheFinalAnswer() {
        let finished = Self.record(offset: 300, length: 300)
        for (offset, body) in [(Int64(300), Int64(0)), (0, 300), (120, 10)] {
            let again = M.admit(
                version: 9, offset: offset, length: nil, contentLength: body, record: finished, finished: true)
            #expect(again?.status == 201, "offset \(offset)")
            #expect(again.flatMap { Self.field($0, "Upload-Complete") } == "?1")
            #expect(again.flatMap { Self.field($0, "Upload-Offset") } == "300")
        }
        let old = M.admit(version: 8, offset: 0, length: nil, contentLength: 300, record: finished, finished: true)
        #expect(old?.status == 409)
    }

    @Test(
        """
        interop 9: every answer of the upload protocol to a creation or append says Upload-Complete: ?0 (PR \
        #3404) — a conflict with the server's offset, a malformed or wrongly typed request, a length that \
        disagrees, a failure of the store; only the completed upload's own answer says ?1; 8 is unchanged
        """
    )
    func interop9SaysWhoseAnswer() {
        let record = Self.record(offset: 100, length: 300)
        let conflict = M.admit(version: 9, offset: 50, length: nil, contentLength: 5, record: record, finished: false)
        #expect(conflict?.status == 409)
        #expect(conflict.flatMap { Self.field($0, "Upload-Complete") } == "?0")
        #expect(conflict.flatMap { Self.field($0, "Upload-Offset") } == "100")
        let disagrees = M.admit(version: 9, offset: 100, length: 400, contentLength: 5, record: record, finished: false)
        #expect(disagrees?.status == 400 && disagrees.flatMap { Self.field($0, "Upload-Complete") } == "?0")
        let v9 = ("Upload-Draft-Interop-Version", "9")
        let untyped = Self.classify(.PATCH, M.prefix + "abc", [v9, ("Upload-Offset", "0")])
        let startsLate = Self.classify(.POST, "/a.bin", [v9, ("Upload-Complete", "?1"), ("Upload-Offset", "3")])
        for request in [untyped, startsLate] {
            guard case .answer(let answer) = request else {
                Issue.record("not refused: \(request)")
                continue
            }
            #expect(answer.status >= 400 && Self.field(answer, "Upload-Complete") == "?0", "\(answer)")
        }
        let busy = UploadRequest.Dialect.draft(version: 9).failed(UploadFailure(status: 503, "no slot"))
        #expect(busy.status == 503 && busy["Upload-Complete"] == "?0" && busy["Retry-After"] != nil)
        let old = UploadRequest.Dialect.draft(version: 8).failed(UploadFailure(status: 503, "no slot"))
        #expect(old.status == 503 && old["Upload-Complete"] == nil)
        #expect(M.done(version: 9, record: record, created: false)["Upload-Complete"] == "?1")
    }

    @Test("interop 9: OPTIONS names the limits, min-size=0 when there are none, and no Accept-Patch (PR #3440)")
    func interop9Options() {
        let open = M.options(version: 9, maxSize: nil)
        #expect(open.status == 200 && open["Upload-Limit"] == "min-size=0" && open["Accept-Patch"] == nil)
        #expect(M.options(version: 9, maxSize: 1000)["Upload-Limit"] == "min-size=0, max-size=1000")
    }
}
