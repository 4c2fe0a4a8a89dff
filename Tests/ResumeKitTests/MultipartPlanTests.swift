import Crypto
import Testing
@testable import ResumeKit

@Suite struct MultipartPlanTests {
    @Test func partSizeDefaultsLimitsAndRaising() throws {
        #expect(try MultipartPlan.partSize(fileSize: 1 << 30, requested: nil) == (8 << 20, false))
        #expect(try MultipartPlan.partSize(fileSize: 1 << 30, requested: 16 << 20) == (16 << 20, false))
        // 100 GiB in 8 MiB parts would be 12,800 parts: raised to whole MiB so that 10,000 suffice.
        let raised = try MultipartPlan.partSize(fileSize: 100 << 30, requested: nil)
        #expect(raised.raised)
        #expect(raised.size == 11 << 20)
        #expect(MultipartPlan.partCount(fileSize: 100 << 30, partSize: raised.size) <= 10_000)
        #expect(throws: TransferError.self) { try MultipartPlan.partSize(fileSize: 1, requested: 4 << 20) }
        #expect(throws: TransferError.self) { try MultipartPlan.partSize(fileSize: 1, requested: 6 << 30) }
        #expect(throws: TransferError.self) { try MultipartPlan.partSize(fileSize: 60_000 << 30, requested: nil) }
    }

    @Test func partsCoverTheFileExactly() {
        let size: Int64 = 20 << 20 + 123
        let count = MultipartPlan.partCount(fileSize: size, partSize: 8 << 20)
        #expect(count == 3)
        let ranges = (1...count).map { MultipartPlan.range(ofPart: $0, fileSize: size, partSize: 8 << 20) }
        #expect(ranges == [0..<(8 << 20), (8 << 20)..<(16 << 20), (16 << 20)..<size])
        #expect(MultipartPlan.partCount(fileSize: 0, partSize: 8 << 20) == 1)
    }

    @Test func resumeTrustsOnlyPartsWhoseSizeAndETagMatchOurMD5() {
        let recorded = [
            S3Part(number: 1, size: 10, md5: "aa", etag: "\"aa\""),
            S3Part(number: 2, size: 10, md5: "bb", etag: "\"bb\""),
            S3Part(number: 3, size: 10, md5: "cc", etag: "\"cc\""),
            S3Part(number: 4, size: 5, md5: "dd", etag: "\"dd\""),
        ]
        let listed = [
            ListedPart(number: 1, size: 10, etag: "\"AA\""),  // same MD5, upper-case hex
            ListedPart(number: 2, size: 10, etag: "\"b0\""),  // other bytes
            ListedPart(number: 4, size: 6, etag: "\"dd\""),  // other size
            ListedPart(number: 5, size: 1, etag: "\"ee\""),  // not ours
        ]  // part 3: lost
        let kept = MultipartPlan.trusted(recorded: recorded, listed: listed)
        #expect(kept.map(\.number) == [1])
        #expect(MultipartPlan.missing(partCount: 4, done: kept) == [2, 3, 4])
    }

    @Test func completionBodyIsAscendingAndEscaped() {
        let body = MultipartPlan.completionBody([
            S3Part(number: 2, size: 1, md5: "b", etag: "\"b\""), S3Part(number: 1, size: 1, md5: "a", etag: "\"a\""),
        ])
        #expect(
            body == "<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
                + "<Part><PartNumber>1</PartNumber><ETag>&quot;a&quot;</ETag></Part>"
                + "<Part><PartNumber>2</PartNumber><ETag>&quot;b&quot;</ETag></Part></CompleteMultipartUpload>")
    }

    @Test func expectedETagIsTheMD5OfThePartMD5s() {
        let one: [UInt8] = Array(repeating: 1, count: 100)
        let two: [UInt8] = Array(repeating: 2, count: 50)
        let md5s = [Insecure.MD5.hash(data: one), Insecure.MD5.hash(data: two)]
        let parts = [
            S3Part(number: 2, size: 50, md5: md5s[1].hex, etag: ""),
            S3Part(number: 1, size: 100, md5: md5s[0].hex, etag: ""),
        ]
        let joined = Array(md5s[0]) + Array(md5s[1])
        #expect(MultipartPlan.expectedETag(parts) == "\"\(Insecure.MD5.hash(data: joined).hex)-2\"")
    }
}
