/// What a response, or a failed exchange, means to an upload. Shared by every protocol.
public enum UploadDecision: Sendable, Equatable {
    /// Go on with the next plan at once.
    case proceed
    /// A protocol step that is not a failure (a version switch, an offset to check first): go on at once
    /// with the next plan, saying nothing.
    case step(reason: String)
    case completed
    /// Transient: wait, then go on with the next plan.
    case retry(reason: String, retryAfter: String?)
    /// The server refused the bytes just sent as corrupt (tus 460): send them again after a backoff
    /// that does not count them as progress, so a link that corrupts every time still gives up.
    case resend(reason: String)
    /// The server no longer has the upload (or never had it): create it anew.
    case restarted(reason: String)
    case fail(reason: String)
    /// The server holds bytes other than the source's (a checksum it echoed, an object's ETag): no retry helps.
    case corrupt(reason: String)
    /// Go on at once, after telling the user each line (parts a resume found changed on the server).
    case noted([String])
}
