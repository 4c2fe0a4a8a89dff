import Crypto
import Foundation
import Testing
@testable import ResumeKit
import ResumeMarkup

private let MiB: Int64 = 1 << 20
private let endpoint = try! S3Endpoint(endpoint: "http://127.0.0.1:9000", region: "us-east-1")

private func xml(_ text: String) -> [UInt8] { Array(text.utf8) }

private func state(uploadId: String? = nil, parts: [S3Part] = [], checksum: S3Checksum = .md5, parallel: Int = 2)
    -> ResumeToken.S3State
{
    var s = ResumeToken.S3State(
        endpoint: "http://127.0.0.1:9000", region: "us-east-1", bucket: "b", key: "k", profile: nil,
        pathStyle: true, uploadId: uploadId, partSize: 5 * MiB, parts: parts)
    s.parallel = parallel
    s.checksum = checksum
    return s
}

private func machine(_ s: ResumeToken.S3State, size: Int64 = 12 * MiB) -> S3MultipartMachine {
    S3MultipartMachine(state: s, size: size, headers: ["x-amz-meta-a": "1"], endpoint: endpoint, answers: S3Responses())
}

private func md5(_ byte: UInt8) -> [UInt8] { Array(Insecure.MD5.hash(data: [byte])) }
private func etag(_ byte: UInt8) -> String { "\"\(md5(byte).hex)\"" }

private let created = xml("<InitiateMultipartUploadResult><UploadId>U1</UploadId></InitiateMultipartUploadResult>")

/// Sends every part the machine plans as answered with the MD5 of the part's number, then completes.
private func sendParts(_ m: inout S3MultipartMachine) -> [Int] {
    var sent: [Int] = []
    while case .part(let n) = m.plans(besides: []).first {
        #expect(
            m.response(head(200, [("ETag", etag(UInt8(n)))]), body: [], checksum: md5(UInt8(n)), to: .part(n))
                == .proceed)
        sent.append(n)
    }
    return sent
}

private func completed(_ tag: String) -> [UInt8] {
    xml("<CompleteMultipartUploadResult><ETag>\(tag)</ETag></CompleteMultipartUploadResult>")
}

@Suite struct S3MultipartMachineTests {
    @Test func createsSendsPartsInParallelThenCompletes() {
        var m = machine(state())
        #expect(m.plans(besides: []) == [.create])
        let create = m.exchange(for: .create)
        #expect(create?.method == "POST" && create?.url == "http://127.0.0.1:9000/b/k?uploads=")
        #expect(create?.headers["x-amz-meta-a"] == "1" && create?.userHeaders == false)
        #expect(m.response(head(200), body: created, checksum: nil, to: .create) == .proceed)
        var token = ResumeToken.UploadPart(
            source: .init(path: "f", size: 12 * MiB, mtime: 0, inode: 0, edgeHash: ""), wire: .s3(state()))
        m.record(into: &token)
        #expect(token.s3?.uploadId == "U1")

        // Two at once (parallel 2); the third only once one is done.
        #expect(m.plans(besides: []) == [.part(1), .part(2)])
        #expect(m.plans(besides: [.part(1), .part(2)]) == [])
        #expect(m.plans(besides: [.part(1)]) == [.part(2)])
        let part3 = m.exchange(for: .part(3))
        #expect(part3?.url == "http://127.0.0.1:9000/b/k?partNumber=3&uploadId=U1")
        #expect(part3?.body == BodyRange(offset: 10 * MiB, length: 2 * MiB))
        #expect(part3?.checksum?.header == "Content-MD5" && part3?.headers["x-amz-meta-a"] == nil)
        // A part over 1 MiB waits for 100 Continue; one of 1 MiB or less is sent at once.
        #expect(part3?.headers["Expect"] == "100-continue")
        #expect(machine(state(), size: 5 * MiB + MiB).exchange(for: .part(2))?.headers["Expect"] == nil)
        #expect(sendParts(&m) == [1, 2, 3])
        #expect(m.acknowledgedBytes == 12 * MiB)
        m.record(into: &token)
        #expect(token.s3?.parts?.map { $0.md5 } == [md5(1).hex, md5(2).hex, md5(3).hex])

        #expect(m.plans(besides: []) == [.complete])
        let complete = m.exchange(for: .complete)
        let document = String(decoding: complete?.document ?? [], as: UTF8.self)
        #expect(document.contains("<PartNumber>3</PartNumber><ETag>&quot;\(md5(3).hex)&quot;</ETag>"))
        let expected = MultipartPlan.expectedETag(token.s3!.parts!)!
        #expect(m.response(head(200), body: completed(expected), checksum: nil, to: .complete) == .completed)
    }

    @Test func aFileOfOnePartIsOnePutButAStreamIsMultipart() {
        var m = machine(state(checksum: .crc32c), size: 1000)
        #expect(m.plans(besides: []) == [.put])
        let put = m.exchange(for: .put)
        #expect(put?.checksum?.header == "x-amz-checksum-crc32c" && put?.headers["x-amz-meta-a"] == "1")
        #expect(put?.headers["Expect"] == nil, "a small object is not worth a 100-continue round trip")
        let sum: [UInt8] = [1, 2, 3, 4]
        #expect(
            m.response(head(200, [("x-amz-checksum-crc32c", "AQIDBA==")]), body: [], checksum: sum, to: .put)
                == .completed)
        var other = machine(state(checksum: .crc32c), size: 1000)
        guard
            case .corrupt = other.response(
                head(200, [("x-amz-checksum-crc32c", "AAAAAA==")]), body: [], checksum: sum, to: .put)
        else {
            Issue.record("an echo that differs is corruption")
            return
        }
        let stream = S3MultipartMachine(
            state: state(), size: 1000, final: true, stream: true, endpoint: endpoint, answers: S3Responses())
        #expect(stream.plans(besides: []) == [.create])
    }

    @Test func aResumeListsPagesKeepsMatchingPartsAndVerifiesUnrecordedOnes() {
        let recorded = [
            S3Part(number: 1, size: 5 * MiB, md5: md5(1).hex, etag: etag(1)),
            S3Part(number: 2, size: 5 * MiB, md5: md5(2).hex, etag: etag(2)),
        ]
        var m = machine(state(uploadId: "U1", parts: recorded))
        #expect(m.acknowledgedBytes == 0, "nothing counts before the listing")
        #expect(m.plans(besides: []) == [.list(marker: nil)])
        #expect(m.exchange(for: .list(marker: nil))?.url == "http://127.0.0.1:9000/b/k?uploadId=U1")
        let page1 = xml(
            """
            <ListPartsResult><IsTruncated>true</IsTruncated><NextPartNumberMarker>1</NextPartNumberMarker>
            <Part><PartNumber>1</PartNumber><ETag>\(etag(1))</ETag><Size>5242880</Size></Part></ListPartsResult>
            """)
        guard case .step = m.response(head(200), body: page1, checksum: nil, to: .list(marker: nil)) else {
            Issue.record("another page is a step")
            return
        }
        #expect(m.plans(besides: []) == [.list(marker: "1")])
        // Part 2 holds other bytes now; part 3 was sent before the token could record it.
        let page2 = xml(
            """
            <ListPartsResult><IsTruncated>false</IsTruncated>
            <Part><PartNumber>2</PartNumber><ETag>\(etag(9))</ETag><Size>5242880</Size></Part>
            <Part><PartNumber>3</PartNumber><ETag>\(etag(3))</ETag><Size>2097152</Size></Part></ListPartsResult>
            """)
        #expect(
            m.response(head(200), body: page2, checksum: nil, to: .list(marker: "1"))
                == .noted(["part 2 on S3 is not the one this upload sent; sending it again"]))
        let listed3 = ListedPart(number: 3, size: 2 * MiB, etag: etag(3))
        #expect(m.plans(besides: []) == [.verify(listed3)])
        #expect(m.exchange(for: .verify(listed3)) == nil)
        #expect(
            m.digests(for: .verify(listed3))
                == SourceDigests(range: BodyRange(offset: 10 * MiB, length: 2 * MiB), algorithms: [.md5]))
        #expect(m.digested([md5(3)], for: .verify(listed3)) == .proceed)
        #expect(m.acknowledgedBytes == 7 * MiB)
        #expect(m.plans(besides: []) == [.part(2)])
    }

    @Test func aListedPartIsTakenOverByItsChecksum() {
        var m = machine(state(uploadId: "U1", checksum: .crc32c))
        let page = xml(
            """
            <ListPartsResult><Part><PartNumber>1</PartNumber><ETag>"x"</ETag><Size>5242880</Size>
            <ChecksumCRC32C>AQIDBA==</ChecksumCRC32C></Part></ListPartsResult>
            """)
        #expect(m.response(head(200), body: page, checksum: nil, to: .list(marker: nil)) == .proceed)
        guard case .verify(let listed) = m.plans(besides: []).first else {
            Issue.record("expected a verification")
            return
        }
        #expect(m.digests(for: .verify(listed))?.algorithms == [.crc32c])
        _ = m.digested([[1, 2, 3, 4]], for: .verify(listed))
        #expect(m.plans(besides: []) == [.part(2), .part(3)])
    }

    @Test func noSuchUploadRestartsWithANewUpload() {
        var m = machine(
            state(uploadId: "U1", parts: [S3Part(number: 1, size: 5 * MiB, md5: md5(1).hex, etag: etag(1))]))
        let gone = xml("<Error><Code>NoSuchUpload</Code><Message>gone</Message></Error>")
        guard case .restarted(let reason) = m.response(head(404), body: gone, checksum: nil, to: .list(marker: nil))
        else {
            Issue.record("NoSuchUpload restarts")
            return
        }
        #expect(reason.contains("NoSuchUpload") && reason.contains("U1"))
        #expect(m.plans(besides: []) == [.create])
        var token = ResumeToken.UploadPart(
            source: .init(path: "f", size: 12 * MiB, mtime: 0, inode: 0, edgeHash: ""), acknowledgedBytes: 5 * MiB,
            wire: .s3(state(uploadId: "U1")))
        m.record(into: &token)
        #expect(token.s3?.uploadId == nil && token.s3?.parts == [] && token.acknowledgedBytes == 0)
        #expect(!m.failureKeepsToken)
    }

    @Test func anErrorInsideA200CompleteIsRetriedOrFails() {
        var m = machine(state())
        _ = m.response(head(200), body: created, checksum: nil, to: .create)
        _ = sendParts(&m)
        let busy = xml("<Error><Code>InternalError</Code><Message>try again</Message></Error>")
        guard case .retry(let reason, _) = m.response(head(200), body: busy, checksum: nil, to: .complete) else {
            Issue.record("an InternalError in a 200 is retried")
            return
        }
        #expect(reason.contains("InternalError"))
        let denied = xml("<Error><Code>AccessDenied</Code><Message>no</Message></Error>")
        guard case .fail(let why) = m.response(head(200), body: denied, checksum: nil, to: .complete) else {
            Issue.record("AccessDenied in a 200 fails")
            return
        }
        #expect(why.contains("cannot complete s3://b/k") && why.contains("AccessDenied"))
        #expect(m.failureKeepsToken, "the multipart upload stays for resume or cancel")
        guard case .corrupt = m.response(head(200), body: completed("\"0123-3\""), checksum: nil, to: .complete) else {
            Issue.record("an ETag other than the parts' is corruption")
            return
        }
    }

    @Test func aLostCompleteAnsweredNoSuchUploadIsCheckedWithHead() {
        var m = machine(state())
        _ = m.response(head(200), body: created, checksum: nil, to: .create)
        _ = sendParts(&m)
        #expect(
            m.exchangeFailed("connection reset", during: .complete)
                == .retry(reason: "CompleteMultipartUpload: connection reset", retryAfter: nil))
        let gone = xml("<Error><Code>NoSuchUpload</Code><Message>gone</Message></Error>")
        guard case .step = m.response(head(404), body: gone, checksum: nil, to: .complete) else {
            Issue.record("a second Complete's NoSuchUpload is checked")
            return
        }
        #expect(m.plans(besides: []) == [.head])
        #expect(m.exchange(for: .head)?.method == "HEAD")
        var checked = m
        let parts = [1, 2, 3].map { S3Part(number: $0, size: 0, md5: md5(UInt8($0)).hex, etag: "") }
        let expected = MultipartPlan.expectedETag(parts)!
        #expect(checked.response(head(200, [("ETag", expected)]), body: [], checksum: nil, to: .head) == .completed)
        guard case .restarted = m.response(head(404), body: [], checksum: nil, to: .head) else {
            Issue.record("no object: the upload starts anew")
            return
        }
    }

    @Test func invalidPartForgetsThePartsAndFails() {
        var m = machine(state())
        _ = m.response(head(200), body: created, checksum: nil, to: .create)
        _ = sendParts(&m)
        let invalid = xml("<Error><Code>InvalidPart</Code><Message>one is missing</Message></Error>")
        guard case .fail = m.response(head(400), body: invalid, checksum: nil, to: .complete) else {
            Issue.record("InvalidPart fails")
            return
        }
        #expect(m.acknowledgedBytes == 0 && m.failureKeepsToken)
    }

    @Test func aStreamSendsWholePartsUntilItsEnd() throws {
        var m = S3MultipartMachine(
            state: state(), size: 0, final: false, stream: true, endpoint: endpoint, answers: S3Responses())
        try m.extend(to: 11 * MiB, final: false)
        #expect(m.size == 10 * MiB)
        _ = m.response(head(200), body: created, checksum: nil, to: .create)
        #expect(sendParts(&m) == [1, 2])
        #expect(m.plans(besides: []) == [] && m.acknowledgedBytes >= m.size)
        try m.extend(to: 11 * MiB, final: true)
        #expect(sendParts(&m) == [3])
        #expect(m.plans(besides: []) == [.complete])
        #expect(throws: TransferError.self) { try m.extend(to: 10_001 * 5 * MiB, final: false) }
    }

    @Test func transientRefusalsAreRetriedOthersFail() {
        var m = machine(state(uploadId: "U1"))
        _ = m.response(
            head(200), body: xml("<ListPartsResult></ListPartsResult>"), checksum: nil, to: .list(marker: nil))
        let slow = xml("<Error><Code>SlowDown</Code><Message>slow</Message></Error>")
        #expect(
            m.response(head(503, [("Retry-After", "2")]), body: slow, checksum: nil, to: .part(1))
                == .retry(reason: "part 1 of s3://b/k: S3 answered SlowDown: slow", retryAfter: "2"))
        guard case .fail(let reason) = m.response(head(403), body: [], checksum: nil, to: .part(1)) else {
            Issue.record("a 403 fails")
            return
        }
        #expect(reason == "part 1 of s3://b/k: S3 answered 403")
        #expect(
            m.response(head(200), body: [], checksum: nil, to: .part(1))
                == .fail(reason: "S3 acknowledged part 1 without an ETag"))
    }
}
