/// Signs each request just before it is sent (S3's SigV4): a signature carries the time, so one made when
/// a transfer began would be refused by a retry an hour later.
public protocol RequestSigner: Sendable {
    /// Adds the signature headers to `request`; may rewrite its URL into the form that was signed.
    func sign(_ request: inout TransferRequest)
    /// Identifies the signer in ``TransportSettings``'s equality (a key id and region, never a secret).
    var identity: String { get }
}
