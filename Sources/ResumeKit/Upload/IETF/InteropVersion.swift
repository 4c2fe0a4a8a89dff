/// The versions of draft-ietf-httpbis-resumable-upload this client speaks, in one table.
/// https://datatracker.ietf.org/doc/draft-ietf-httpbis-resumable-upload/ — interop 3 is draft -01,
/// 5 is -03, 6 is -04/-05, 8 is -09 to -11, 9 is -12 to -15 (httpwg/http-extensions PR #3476). Apple's
/// NIOResumableUpload speaks 3, 5, 6.
public enum InteropVersion: Int, Sendable, CaseIterable, Codable {
    case v3 = 3
    case v5 = 5
    case v6 = 6
    case v8 = 8
    case v9 = 9

    public static let newest = InteropVersion.v9

    /// The header carrying the interop number on every request and response.
    public static let header = "Upload-Draft-Interop-Version"

    /// The field that says whether a request carries the last byte (v3 names the opposite).
    public func completionField(complete: Bool) -> (name: String, value: String) {
        self == .v3
            ? ("Upload-Incomplete", StructuredField.serialize(!complete))
            : ("Upload-Complete", StructuredField.serialize(complete))
    }

    /// Reads the completion state a response states, nil when it states none.
    public func isComplete(_ headers: HeaderFields) -> Bool? {
        if self == .v3 { return StructuredField.boolean(headers["Upload-Incomplete"]).map { !$0 } }
        return StructuredField.boolean(headers["Upload-Complete"])
    }

    /// From -12 (interop 9) `Upload-Complete: ?1` on an error says the answer is the target resource's own,
    /// not the upload protocol's (PR #3404): the upload is over, not to be resumed; an offset beyond what was
    /// sent is the server's to report (PR #3317); a 413 asks for smaller appends (PR #3312).
    public var saysWhoseAnswer: Bool { rawValue >= 9 }

    /// `Upload-Length` exists from -05 (interop 6) on.
    public var sendsUploadLength: Bool { rawValue >= 6 }

    /// From -04 (interop 6) an append must be labelled as a partial upload.
    public var appendContentType: String {
        rawValue >= 6 ? "application/partial-upload" : "application/offset+octet-stream"
    }
}
