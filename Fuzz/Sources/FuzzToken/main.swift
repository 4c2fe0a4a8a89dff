import FoundationEssentials
import FuzzCheck
@testable import ResumeKit

/// Token files as a user, an editor or a disk fault may leave them. Properties: a token that loads passes
/// its own validation, re-encodes to a token that loads equal, and a download's numbers fit its file.
func fuzzToken(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard let token = try? TokenStore.decode(Data(bytes(data, size)), path: "fuzz.json") else { return 0 }
    let encoded = Data(TokenStore.json(token).utf8)
    guard let again = try? TokenStore.decode(encoded, path: "fuzz.json") else {
        require(false, "a loaded token re-encodes to one that does not load")
        return 0
    }
    require(again == token, "a loaded token re-encodes to another token")
    if let d = token.download {
        require(d.committedBytes >= 0, "negative committedBytes loaded")
        if let total = d.totalBytes { require(d.committedBytes <= total, "committed beyond the total") }
    }
    if let u = token.upload { require(u.acknowledgedBytes >= 0, "negative acknowledgedBytes loaded") }
    require(!token.id.contains("/") && !token.id.contains(".."), "id \(token.id) leaves the tokens folder")
    return 0
}

fuzz { data, size in data.map { fuzzToken($0, size) } ?? 0 }
