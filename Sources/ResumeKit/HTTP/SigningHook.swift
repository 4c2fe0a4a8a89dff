/// Holds the signer in ``TransportSettings``, which stays `Equatable`.
public struct SigningHook: Sendable, Equatable {
    public let signer: any RequestSigner

    public init(_ signer: any RequestSigner) { self.signer = signer }

    public static func == (a: SigningHook, b: SigningHook) -> Bool { a.signer.identity == b.signer.identity }
}
