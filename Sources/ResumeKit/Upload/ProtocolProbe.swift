/// What one `OPTIONS` answer says about the upload protocol a server speaks (`--protocol auto`).
public enum ProtocolProbe: Sendable, Equatable {
    case tus(TusCapabilities)
    /// The draft: `Upload-Limit`, or an interop version named (a 400 naming one we speak counts: it is
    /// NIOResumableUpload's answer to a version it does not know, and says which to use).
    case ietf(InteropVersion?)
    /// Nothing recognisable: create with the draft and let a plain server take it as a plain upload.
    case unknown

    /// The headers of the probe: our newest interop version, so a draft server answers with its own.
    public static var requestHeaders: HeaderFields { [InteropVersion.header: String(InteropVersion.newest.rawValue)] }

    /// A tus server's capabilities, when that is what the answer showed.
    var tusCapabilities: TusCapabilities? { if case .tus(let found) = self { found } else { nil } }

    /// Reads the probe's answer; nil (no answer at all) is `unknown`.
    public static func decide(_ head: ResponseHead?) -> ProtocolProbe {
        guard let head else { return .unknown }
        if let tus = TusCapabilities(head) { return .tus(tus) }
        let named = head.headers[InteropVersion.header].flatMap { Int($0.trimmingSpaces()) }.flatMap(
            InteropVersion.init(rawValue:))
        if head.headers["Upload-Limit"] != nil || named != nil { return .ietf(named) }
        return .unknown
    }
}
