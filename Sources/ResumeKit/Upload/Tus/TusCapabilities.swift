/// What a tus server said about itself in its OPTIONS answer.
public struct TusCapabilities: Sendable, Equatable {
    public var versions = [TusStateMachine.version]
    public var extensions: Set<String> = []
    /// `Tus-Max-Size`: the largest upload it takes.
    public var maxSize: Int64?
    public var checksumAlgorithms: [String] = []
}

extension TusCapabilities {
    /// The capabilities in a response, nil when it is not a tus answer (no `Tus-Version`, no `Tus-Resumable`).
    public init?(_ head: ResponseHead) {
        let versions = Self.list(head.headers["Tus-Version"])
        guard !versions.isEmpty || head.headers["Tus-Resumable"] != nil else { return nil }
        self.versions = versions.isEmpty ? [TusStateMachine.version] : versions
        extensions = Set(Self.list(head.headers["Tus-Extension"]).map { $0.lowercased() })
        // Digits only: `Int64("-1")` would make every file too large, `+5` is no tus number either.
        maxSize = head.headers["Tus-Max-Size"].flatMap { ContentLength.decimal($0.trimmingSpaces()) }
        checksumAlgorithms = Self.list(head.headers["Tus-Checksum-Algorithm"])
    }

    /// The algorithm for `Upload-Checksum`: the strongest the server lists, when it offers the extension.
    public var checksum: DigestAlgorithm? {
        extensions.contains("checksum") ? DigestAlgorithm.strongest(of: checksumAlgorithms) : nil
    }

    private static func list(_ value: String?) -> [String] {
        (value ?? "").split(separator: ",").map { $0.trimmingSpaces() }.filter { !$0.isEmpty }
    }
}
