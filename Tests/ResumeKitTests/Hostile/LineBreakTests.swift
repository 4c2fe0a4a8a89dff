import Testing
@testable import ResumeKit

/// "\r\n" is one Character in Swift, so `contains("\r")` and `contains("\n")` both miss it: a `-H` value
/// or an S3 key holding CR LF passed those checks and could have added a header line to the request.
@Suite struct LineBreakTests {
    @Test(arguments: ["X-A: 1\r\nHost: evil", "X-A: 1\rb", "X-A: 1\nb", "X-A: a\u{0}b"])
    func headerValueWithALineBreakIsRefused(line: String) {
        #expect(throws: TransferError.self) { try HeaderLines.parse([line]) }
    }

    @Test func s3KeyWithCRLFIsRefused() {
        #expect(throws: TransferError.self) { try S3Location.parse("s3://bucket/a\r\nb") }
    }
}
