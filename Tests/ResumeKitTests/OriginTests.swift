import Testing

@testable import ResumeKit

@Suite struct OriginTests {
    /// Scheme, host and port decide (default ports as written out); every secret header stays behind.
    @Test func secretHeadersStayWithTheNamedOrigin() {
        let given: HeaderFields = ["X-Api-Key": "k", "Authorization": "Bearer t", "X-Trace": "1", "My-Session-Id": "s"]
        #expect(Origin.headers(given, for: "HTTP://Host:80/b?q", named: "http://host/a") == given)
        #expect(Origin.headers(given, for: "https://host:443/x", named: "https://host/a") == given)
        for elsewhere in ["https://host/a", "http://host:8080/a", "http://other/a", "http://host.evil/a", "nonsense"] {
            #expect(Origin.headers(given, for: elsewhere, named: "http://host/a") == ["X-Trace": "1"], "\(elsewhere)")
        }
    }
}
