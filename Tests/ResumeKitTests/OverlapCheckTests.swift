import Testing
@testable import ResumeKit

/// The one check of resumed bytes, fed the body in pieces as libcurl hands it over.
@Suite struct OverlapCheckTests {
    private func feed(_ check: inout OverlapCheck, _ bytes: [UInt8]) -> (rest: [UInt8], differsAt: Int64?) {
        bytes.withUnsafeBytes { body in
            switch check.consume(body) {
            case .matched(let rest): (Array(rest), nil)
            case .differs(let offset): ([], offset)
            }
        }
    }

    @Test func heldBytesThatComeBackInPiecesLetTheRestThrough() {
        var check = OverlapCheck(held: [1, 2, 3, 4], from: 1000)
        #expect(feed(&check, [1, 2]).rest.isEmpty)
        #expect(!check.isComplete)
        let last = feed(&check, [3, 4, 9, 9])
        #expect(last.rest == [9, 9] && last.differsAt == nil)
        #expect(check.isComplete)
        #expect(feed(&check, [7]).rest == [7])
    }

    @Test func aDifferentByteIsNamedByItsOffsetInTheFile() {
        var check = OverlapCheck(held: [1, 2, 3, 4], from: 1000)
        _ = feed(&check, [1, 2])
        #expect(feed(&check, [3, 5]).differsAt == 1003)
    }

    @Test func nothingHeldComparesNothing() {
        var check = OverlapCheck.none
        #expect(check.isComplete)
        #expect(feed(&check, [5, 6]).rest == [5, 6])
    }
}
