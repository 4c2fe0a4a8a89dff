import FoundationEssentials
import Testing
@testable import ResumeKit

/// The state folder's times: written as Foundation's `.iso8601` wrote them, read back only in that form.
@Suite struct ISOTimeTests {
    @Test func writesUTCWholeSeconds() {
        #expect(ISOTime.string(Date(timeIntervalSince1970: 0)) == "1970-01-01T00:00:00Z")
        #expect(ISOTime.string(Date(timeIntervalSince1970: 1_795_774_560.9)) == "2026-11-27T10:16:00Z")
        #expect(ISOTime.string(Date(timeIntervalSince1970: 951_782_400)) == "2000-02-29T00:00:00Z")  // a leap day
    }

    @Test func readsWhatItWrites() {
        for seconds in [0, 951_782_400, 1_795_774_560, 4_102_444_799] as [Double] {
            let date = Date(timeIntervalSince1970: seconds)
            #expect(ISOTime.date(ISOTime.string(date)) == date)
        }
    }

    @Test(arguments: [
        "2026-11-20T10:05:0.6-11-105:00Z", "2026-11-20T10:05:00.5Z", "2026-11-20T10:05:00+01:00",
        "2026-13-01T00:00:00Z", "2026-11-20T24:00:00Z", "2026-11-20 10:05:00Z", "1969-12-31T23:59:59Z",
        "２026-11-20T10:05:00Z", "",
    ])
    func refusesAnyOtherForm(_ text: String) {
        #expect(ISOTime.date(text) == nil)
    }
}
