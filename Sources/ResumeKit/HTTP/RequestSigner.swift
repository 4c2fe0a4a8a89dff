/// Signs each request just before it is sent (S3's SigV4): a signature carries the time, so one made when
/// a transfer began would be refused by a retry an hour later.
public protocol RequestSigner: Sendable {
    /// Adds the signature headers to `request`; may rewrite its URL into the form that was signed.
    func sign(_ request: inout TransferRequest)
    /// Identifies the signer in ``TransportSettings``'s equality (a key id and region, never a secret).
    var identity: String { get }
}

/// Holds the signer in ``TransportSettings``, which stays `Equatable`.
public struct SigningHook: Sendable, Equatable {
    public let signer: any RequestSigner

    public init(_ signer: any RequestSigner) { self.signer = signer }

    public static func == (a: SigningHook, b: SigningHook) -> Bool { a.signer.identity == b.signer.identity }
}
