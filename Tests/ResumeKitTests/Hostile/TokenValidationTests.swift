import Foundation
import Testing
@testable import ResumeKit

/// Tokens whose JSON decodes but whose values cannot be true are refused on load, naming the field
/// (issue 22: a negative `committedBytes` used to reach `pread` and end in 73 "Invalid argument").
@Suite struct TokenValidationTests {
    /// The golden download token with one JSON value replaced.
    static func download(_ edit: (inout [String: Any]) -> Void) throws -> Data {
        let url = try #require(Bundle.module.url(forResource: "Fixtures/token-v1", withExtension: "json"))
        var json = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any])
        edit(&json)
        return try JSONSerialization.data(withJSONObject: json)
    }

    static func field(_ name: String, _ value: Any) -> (inout [String: Any]) -> Void {
        { json in
            var d = json["download"] as! [String: Any]
            d[name] = value
            json["download"] = d
        }
    }

    static func refusal(_ data: Data) -> String? {
        do {
            _ = try TokenStore.decode(data, path: "t.json")
            return nil
        } catch TokenStoreError.invalid(_, let violation) {
            return violation.field
        } catch {
            return "other: \(error)"
        }
    }

    /// Each case: a field of `download`, its new value as JSON, the field the refusal names.
    @Test(arguments: [
        ("committedBytes", "-1", "download.committedBytes"),
        ("committedBytes", "2000000000", "download.committedBytes"),
        ("totalBytes", "-5", "download.totalBytes"),
        ("effectiveURL", "\"file:///etc/passwd\"", "download.effectiveURL"),
        ("path", "\"relative/x\"", "download.path"),
        ("onChange", "\"sometimes\"", "download.onChange"),
        ("expectedSHA256", "\"zz\"", "download.expectedSHA256"),
    ])
    func downloadFieldsThatCannotBeTrue(name: String, json: String, field: String) throws {
        let value = try JSONSerialization.jsonObject(with: Data(json.utf8), options: .fragmentsAllowed)
        #expect(Self.refusal(try Self.download(Self.field(name, value))) == field)
    }

    @Test func fileURLIsRefusedAsTheTokensOwnSentence() throws {
        let data = try Self.download { $0["url"] = "file:///etc/passwd" }
        #expect(Self.refusal(data) == "url")
        do {
            _ = try TokenStore.decode(data, path: "t.json")
        } catch {
            #expect("\(error)" == "token t.json is malformed: url is not an http or https URL ('file:///etc/passwd')")
        }
    }

    @Test(arguments: ["../../etc/x", "", "a/b", "d-\u{0}"])
    func idThatWouldLeaveTheTokensFolder(id: String) throws {
        #expect(Self.refusal(try Self.download { $0["id"] = id }) == "id")
    }

    @Test func headerWithALineBreakIsRefused() throws {
        #expect(Self.refusal(try Self.download { $0["headers"] = ["X: 1\r\nHost: evil"] }) == "headers[0]")
    }

    @Test(
        arguments: [
            // overlapping
            ([[0, 99, 0], [50, 199, 0]], "download.segments[1].start"),
            // out of order
            ([[100, 199, 0], [0, 99, 0]], "download.segments[1].start"),
            // beyond the total (1073741824)
            ([[0, 1_073_741_824, 0]], "download.segments[0].end"),
            // more committed than the segment holds
            ([[0, 99, 101]], "download.segments[0].committed"),
            ([[0, 99, -1]], "download.segments[0].committed"),
            ([[-1, 99, 0]], "download.segments[0].start"),
            ([[10, 9, 0]], "download.segments[0].end"),
        ] as [([[Int64]], String)])
    func segmentsMustBeInOrderInsideTheFile(segments: [[Int64]], field: String) throws {
        let list = segments.map { ["start": $0[0], "end": $0[1], "committed": $0[2]] }
        #expect(Self.refusal(try Self.download(Self.field("segments", list))) == field)
    }

    @Test func orderedSegmentsLoad() throws {
        let list: [[String: Int64]] = [
            ["start": 0, "end": 99, "committed": 100], ["start": 100, "end": 1_073_741_823, "committed": 7],
        ]
        #expect(Self.refusal(try Self.download(Self.field("segments", list))) == nil)
    }

    static func upload(_ edit: (inout [String: Any]) -> Void) throws -> Data {
        let url = try #require(
            Bundle.module.url(forResource: "Fixtures/upload-token-v1-pre-protocol", withExtension: "json"))
        var json = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any])
        var u = json["upload"] as! [String: Any]
        edit(&u)
        json["upload"] = u
        return try JSONSerialization.data(withJSONObject: json)
    }

    @Test func uploadFieldsThatCannotBeTrue() throws {
        #expect(Self.refusal(try Self.upload { $0["acknowledgedBytes"] = -1 }) == "upload.acknowledgedBytes")
        #expect(Self.refusal(try Self.upload { $0["acknowledgedBytes"] = 3_000_001 }) == "upload.acknowledgedBytes")
        #expect(Self.refusal(try Self.upload { $0["uploadURL"] = "gopher://h/x" }) == "upload.uploadURL")
        #expect(Self.refusal(try Self.upload { $0["interopVersion"] = 4 }) == "upload.interopVersion")
        #expect(Self.refusal(try Self.upload { $0["protocol"] = "ftp" }) == "upload.protocol")
        #expect(
            Self.refusal(
                try Self.upload { u in
                    var s = u["source"] as! [String: Any]
                    s["size"] = -3
                    u["source"] = s
                }) == "upload.source.size")
        #expect(Self.refusal(try Self.upload { $0["acknowledgedBytes"] = 3_000_000 }) == nil)
    }

    /// A stream's ledger must cover what a replay is checked against, and `synced` can only be part of `durable`.
    @Test func streamFieldsThatCannotBeTrue() throws {
        func stream(_ edit: (inout [String: Any]) -> Void) throws -> Data {
            try Self.upload { u in
                var s: [String: Any] = [
                    "spool": "/tmp/s", "start": 1_048_576, "durable": 2_500_000, "ended": false, "spoolMax": 8_388_608,
                    "ledger": ["blockSize": 1_048_576, "blocks": ["00000000", "11111111"], "algorithm": "crc32c"],
                    "synced": 0, "tail": "22222222",
                ]
                edit(&s)
                u["stream"] = s
                u["acknowledgedBytes"] = 1_500_000
                var source = u["source"] as! [String: Any]
                source["path"] = "-"
                u["source"] = source
            }
        }
        #expect(Self.refusal(try stream { _ in }) == nil)
        #expect(
            Self.refusal(
                try stream {
                    $0["tail"] = nil; $0["synced"] = 2_500_000
                }) == nil, "every byte synced: no tail needed")
        #expect(Self.refusal(try stream { $0["tail"] = nil }) == "upload.stream.tail")
        #expect(Self.refusal(try stream { $0["synced"] = 2_500_001 }) == "upload.stream.synced")
        #expect(Self.refusal(try stream { $0["start"] = 1_000_000 }) == "upload.stream.start")
        #expect(
            Self.refusal(try stream { $0["ledger"] = ["blockSize": 1_048_576, "blocks": ["00000000"]] })
                == "upload.stream.ledger.blocks")
        #expect(
            Self.refusal(try stream { $0["ledger"] = ["blockSize": 0, "blocks": []] })
                == "upload.stream.ledger.blockSize")
        // Ended without its last fsync: only when the server acknowledged every byte.
        #expect(Self.refusal(try stream { $0["ended"] = true }) == "upload.stream.synced")
    }

    @Test func s3PartsNeverRepeatANumber() throws {
        let s3: [String: Any] = [
            "endpoint": "http://127.0.0.1:9000", "region": "us-east-1", "bucket": "b", "key": "k", "pathStyle": true,
            "uploadId": "x", "partSize": 5_242_880,
            "parts": [
                ["number": 1, "size": 5, "md5": "00", "etag": "\"a\""],
                ["number": 1, "size": 5, "md5": "00", "etag": "\"a\""],
            ],
        ]
        #expect(
            Self.refusal(
                try Self.upload {
                    $0["s3"] = s3; $0["protocol"] = "s3"
                }) == "upload.s3.parts[1].number")
    }

    /// A token holds one direction's state and one protocol's: any other mixture cannot have been written.
    @Test func stateOfAnotherDirectionOrProtocolIsRefused() throws {
        let upload = try JSONSerialization.jsonObject(with: try Self.upload { _ in }) as! [String: Any]
        #expect(Self.refusal(try Self.download { $0["upload"] = upload["upload"] }) == "upload")
        #expect(Self.refusal(try Self.download { $0["download"] = nil }) == "download")
        let s3: [String: Any] = [
            "endpoint": "http://127.0.0.1:9000", "region": "us-east-1", "bucket": "b", "key": "k", "pathStyle": true,
        ]
        #expect(Self.refusal(try Self.upload { $0["s3"] = s3 }) == "upload.s3")
        #expect(Self.refusal(try Self.upload { $0["protocol"] = "s3" }) == "upload.s3")
        #expect(
            Self.refusal(
                try Self.upload {
                    $0["protocol"] = "tus"; $0["checksumAlgorithm"] = "rot13"
                }) == "upload.checksumAlgorithm")
        #expect(
            Self.refusal(
                try Self.upload {
                    $0["protocol"] = "tus"; $0["checksumAlgorithm"] = "sha1"
                }) == nil)
    }

    @Test func goldenTokensStillLoad() throws {
        #expect(Self.refusal(try Self.download { _ in }) == nil)
        #expect(Self.refusal(try Self.upload { _ in }) == nil)
    }

    /// Through the client: 65 (bad token), and a sentence that names the field.
    @Test func clientRefusesWithBadTokenStatus() throws {
        let dir = scratchPath("rk-hostile")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = TokenStore(directory: dir)
        try store.ensureDirectory()
        let data = try Self.download(Self.field("committedBytes", -7))
        try data.write(to: URL(fileURLWithPath: store.path(forID: "d-0123456789abcdef")))
        let client = TransferClient(store: store)
        do {
            _ = try client.loadToken("d-0123456789abcdef")
            Issue.record("a negative committedBytes loaded")
        } catch {
            #expect(error.exitStatus == 65)
            #expect(error.message.contains("download.committedBytes is -7: must not be negative"))
        }
    }
}
