import FoundationEssentials
import FuzzCheck
@testable import ResumeKit

/// Token files as a user, an editor or a disk fault may leave them. Properties: a token that loads passes
/// its own validation, re-encodes (without secrets) to a token that loads and reads back as written, and a
/// download's numbers fit its file.
func fuzzToken(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard let token = try? TokenStore.decode(Data(bytes(data, size)), path: "fuzz.json") else { return 0 }
    // What is written is what Redact allows (no password, credential headers by name only): the first
    // round may drop secrets a hand-made file held; from then on a token reads back as it was written.
    let encoded = Data(TokenStore.json(token).utf8)
    guard let once = try? TokenStore.decode(encoded, path: "fuzz.json"),
        let again = try? TokenStore.decode(Data(TokenStore.json(once).utf8), path: "fuzz.json")
    else {
        require(false, "a loaded token re-encodes to one that does not load")
        return 0
    }
    require(again == once, "a token written and read back changes when written again")
    require(Redact.url(once.url) == once.url, "a written token keeps a URL's password")
    if let d = token.download {
        require(d.committedBytes >= 0, "negative committedBytes loaded")
        if let total = d.totalBytes { require(d.committedBytes <= total, "committed beyond the total") }
    }
    if let u = token.upload { require(u.acknowledgedBytes >= 0, "negative acknowledgedBytes loaded") }
    require(!token.id.contains("/") && !token.id.contains(".."), "id \(token.id) leaves the tokens folder")
    return 0
}

fuzz { data, size in data.map { fuzzToken($0, size) } ?? 0 }
