import FoundationEssentials
import Glibc

/// Signs each request as it is sent, with the time of sending: a retry an hour later is signed anew.
public struct S3RequestSigner: RequestSigner {
    let signer: SigV4Signer
    /// Seconds since 1970 at signing; tests fix it.
    var clock: @Sendable () -> Int64 = { Int64(time(nil)) }

    public var identity: String { "\(signer.credentials.accessKeyID)@\(signer.region)" }

    public func sign(_ request: inout TransferRequest) {
        guard let parts = Self.split(request.url) else { return }
        let hash =
            request.headers["x-amz-content-sha256"]
            ?? (request.body == nil ? SigV4Signer.emptyPayloadHash : SigV4Signer.unsignedPayload)
        var headers = request.headers
        headers.remove("x-amz-content-sha256")
        // Not signed (as AWS's SDKs leave it out): a proxy may drop or answer it.
        let expect = headers["Expect"]
        headers.remove("Expect")
        let signed = signer.sign(
            SigV4Signer.Request(
                method: request.method, host: parts.host, path: parts.path, query: parts.query,
                headers: headers, payloadHash: hash),
            at: clock())
        request.url = parts.origin + parts.path + (signed.query.isEmpty ? "" : "?" + signed.query)
        request.headers = signed.headers
        if let expect { request.headers.set("Expect", expect) }
    }

    /// `scheme://authority`, the authority, the (already encoded) path, and the query decoded into pairs.
    static func split(_ url: String) -> (origin: String, host: String, path: String, query: [(String, String)])? {
        guard let colon = url.firstIndex(of: ":"), url[colon...].hasPrefix("://") else { return nil }
        let schemeEnd = url.index(colon, offsetBy: 3)
        let afterScheme = url[schemeEnd...]
        let pathStart = afterScheme.firstIndex(where: { $0 == "/" || $0 == "?" }) ?? afterScheme.endIndex
        let host = String(afterScheme[..<pathStart])
        let rest = afterScheme[pathStart...]
        let queryStart = rest.firstIndex(of: "?")
        var path = String(rest[..<(queryStart ?? rest.endIndex)])
        if path.isEmpty { path = "/" }
        var query: [(String, String)] = []
        if let queryStart {
            for item in rest[rest.index(after: queryStart)...].split(separator: "&", omittingEmptySubsequences: true) {
                let pair = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                query.append(
                    (
                        OutputPath.percentDecoded(String(pair[0])),
                        pair.count > 1 ? OutputPath.percentDecoded(String(pair[1])) : ""
                    ))
            }
        }
        return (String(url[..<schemeEnd]) + host, host, path, query)
    }
}
