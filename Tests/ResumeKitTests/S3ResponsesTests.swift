import Foundation
import Testing
import ResumeKit
@testable import ResumeMarkup

/// Bodies as S3's API reference documents them, read by the XML parser.
@Suite struct S3ResponsesTests {
    private func data(_ text: String) -> [UInt8] { Array(text.utf8) }

    @Test func initiateGivesTheUploadID() throws {
        let body = """
            <?xml version="1.0" encoding="UTF-8"?>
            <InitiateMultipartUploadResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
              <Bucket>bkt</Bucket><Key>big.iso</Key>
              <UploadId>VXBsb2FkIElEIGZvciA2aWWpbmcncyBteS1tb3ZpZS5tMnRzIHVwbG9hZA</UploadId>
            </InitiateMultipartUploadResult>
            """
        #expect(try S3Responses().uploadID(data(body)) == "VXBsb2FkIElEIGZvciA2aWWpbmcncyBteS1tb3ZpZS5tMnRzIHVwbG9hZA")
    }

    @Test func listPartsPagesAndEntities() throws {
        let body = """
            <ListPartsResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
              <Bucket>bkt</Bucket><Key>k</Key><UploadId>u</UploadId>
              <PartNumberMarker>0</PartNumberMarker><NextPartNumberMarker>2</NextPartNumberMarker>
              <MaxParts>2</MaxParts><IsTruncated>true</IsTruncated>
              <Part><PartNumber>1</PartNumber><LastModified>2010-11-10T20:48:34.000Z</LastModified>
                <ETag>&quot;7778aef83f66abc1fa1e8477f296d394&quot;</ETag><Size>10485760</Size></Part>
              <Part><PartNumber>2</PartNumber><ETag>"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"</ETag><Size>5</Size></Part>
            </ListPartsResult>
            """
        let page = try S3Responses().parts(data(body))
        #expect(
            page.parts == [
                ListedPart(number: 1, size: 10_485_760, etag: "\"7778aef83f66abc1fa1e8477f296d394\""),
                ListedPart(number: 2, size: 5, etag: "\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\""),
            ])
        #expect(page.nextMarker == "2")
        let last = try S3Responses().parts(data("<ListPartsResult><IsTruncated>false</IsTruncated></ListPartsResult>"))
        #expect(last.parts.isEmpty && last.nextMarker == nil)
    }

    @Test func completeMayCarryAnErrorWithA200() throws {
        let ok = """
            <CompleteMultipartUploadResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
              <Location>http://bkt.s3.amazonaws.com/k</Location><Bucket>bkt</Bucket><Key>k</Key>
              <ETag>"3858f62230ac3c915f300c664312c11f-9"</ETag>
            </CompleteMultipartUploadResult>
            """
        #expect(try S3Responses().completedETag(data(ok)) == "\"3858f62230ac3c915f300c664312c11f-9\"")
        let failed = """
            <?xml version="1.0" encoding="UTF-8"?>
            <Error><Code>InternalError</Code><Message>We encountered an internal error. Please try again.</Message>
            <RequestId>656c76696e6727732072657175657374</RequestId></Error>
            """
        #expect(
            throws: TransferError(
                .failed, "S3 answered InternalError: We encountered an internal error. Please try again.")
        ) {
            try S3Responses().completedETag(data(failed))
        }
        #expect(S3Responses().error(data(failed))?.code == "InternalError")
        #expect(S3Responses().error(data(ok)) == nil)
    }

    @Test func listObjectsV2() throws {
        let body = """
            <ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
              <Name>bkt</Name><Prefix>pre/</Prefix><KeyCount>2</KeyCount><MaxKeys>2</MaxKeys>
              <IsTruncated>true</IsTruncated>\
            <NextContinuationToken>1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=</NextContinuationToken>
              <Contents><Key>pre/a b.txt</Key><LastModified>2009-10-12T17:50:30.000Z</LastModified>
                <ETag>"fba9dede5f27731c9771645a39863328"</ETag><Size>434234</Size>\
            <StorageClass>STANDARD</StorageClass></Contents>
              <Contents><Key>pre/sub/&lt;c&gt;</Key><Size>0</Size></Contents>
            </ListBucketResult>
            """
        let page = try S3Responses().objects(data(body))
        #expect(page.objects.map(\.key) == ["pre/a b.txt", "pre/sub/<c>"])
        #expect(page.objects.map(\.size) == [434_234, 0])
        #expect(page.continuation == "1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=")
    }

    @Test func errorsAndNonsenseAreOneLine() {
        let denied =
            "<Error><Code>SignatureDoesNotMatch</Code><Message>The request signature we calculated does not "
            + "match</Message></Error>"
        #expect(
            throws: TransferError(
                .failed, "S3 answered SignatureDoesNotMatch: The request signature we calculated does not match")
        ) {
            try S3Responses().uploadID(data(denied))
        }
        #expect(throws: TransferError.self) { try S3Responses().uploadID(data("not xml <")) }
        #expect(throws: TransferError.self) { try S3Responses().uploadID(data("<Other/>")) }
        #expect(throws: TransferError.self) {
            try S3Responses().parts(data("<ListPartsResult><Part><PartNumber>x</PartNumber></Part></ListPartsResult>"))
        }
    }
}
