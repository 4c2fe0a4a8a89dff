import Foundation
import Testing
@testable import ResumeKit

@Suite struct ConnectionSettingsTests {
    @Test func givenFieldsReplaceStoredOnesAndTheRestIsKept() {
        var stored = ConnectionSettings()
        stored.caCert = "/etc/ca.pem"
        stored.insecure = true
        stored.httpVersion = .http1_1
        var given = ConnectionSettings()
        given.caCert = "/other/ca.pem"
        given.ipVersion = .v6
        let merged = stored.overridden(by: given)
        #expect(merged.caCert == "/other/ca.pem")
        #expect(merged.insecure == true, "-k is not dropped by a resume that does not repeat it")
        #expect(merged.httpVersion == .http1_1)
        #expect(merged.ipVersion == .v6)
        #expect(ConnectionSettings().overridden(by: ConnectionSettings()).isEmpty)
    }

    @Test func aProxyLosesItsPasswordBeforeStoring() {
        var s = ConnectionSettings()
        s.proxy = "http://bob:pa:ss@proxy.example:3128/"
        #expect(s.storable.proxy == "http://proxy.example:3128/")
        s.proxy = "socks5h://proxy.example:1080"
        #expect(s.storable.proxy == "socks5h://proxy.example:1080")
        s.proxy = "proxy.example:3128"
        #expect(s.storable.proxy == "proxy.example:3128")
        s.proxy = "http://proxy.example/path@x"
        #expect(s.storable.proxy == "http://proxy.example/path@x")
    }

    @Test func connectionRoundTripsInTheTokenAndOldTokensHaveNone() throws {
        var t = TokenStoreTests.sample()
        #expect(!TokenStore.json(t).contains("connection"), "defaults add nothing: the golden file stays as it is")
        var c = ConnectionSettings()
        c.caCert = "/etc/ca.pem"
        c.resolve = ["example.com:443:127.0.0.1"]
        c.connectTimeout = 2.5
        c.httpVersion = .http2
        t.connection = c
        let decoded = try TokenStore.decode(Data(TokenStore.json(t).utf8), path: "t.json")
        #expect(decoded.connection == c)
        #expect(
            TokenStore.json(t).contains("\"httpVersion\" : \"2\"")
                || TokenStore.json(t).contains("\"httpVersion\":\"2\""))
    }

    @Test func a401ExplainsThatLoginsAreNotKept() {
        let client = TransferClient(store: TokenStore(directory: "/nonexistent"))
        let error = client.explainingLogin(
            TransferError(.failed, "the server answered 401 Unauthorized for https://x/y", status: 401, tokenID: "d-1"))
        #expect(error.message.hasSuffix("pass -u USER[:PASSWORD] or --netrc (credentials are never kept in the token)"))
        var withLogin = client
        withLogin.options.transport.credentials.user = "alice"
        #expect(
            withLogin.explainingLogin(TransferError(.failed, "the server answered 401", status: 401)).message.hasSuffix(
                "the login was refused"))
        #expect(
            client.explainingLogin(TransferError(.failed, "the server answered 404", status: 404)).message
                == "the server answered 404")
    }
}
