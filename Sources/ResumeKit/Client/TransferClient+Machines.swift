extension TransferClient {
    /// Every upload's protocol machine is built here: the token's protocol, for a file (`stream` nil) or
    /// for a stream at the bytes its spool made durable, with the options its requests go with (an S3
    /// upload's are signed).
    /// - Parameters:
    ///   - versionPinned: the draft's interop version may not be negotiated down (pinned, or the upload exists).
    ///   - capabilities: what a tus server's OPTIONS said, when this run asked.
    func uploadMachine(
        _ token: ResumeToken, versionPinned: Bool, chunkSize: Int64? = nil, capabilities: TusCapabilities?, options: TransferOptions
    ) throws(TransferError) -> (machine: any UploadMachine, options: TransferOptions) {
        let part = try token.uploadPart()
        let stream = part.stream
        let size = stream?.durable ?? part.source.size
        let lengthKnown = stream?.ended ?? true
        switch part.wire {
        case .undecided:
            throw TransferError(.badToken, "token \(token.id) names no upload protocol")
        case .ietf(let version):
            return (IETFStateMachine(
                size: size, version: version, versionPinned: versionPinned || part.uploadURL != nil, uploadURL: part.uploadURL,
                chunkSize: chunkSize, lengthKnown: lengthKnown), options)
        case .tus(let expires, let checksum):
            let filename = stream == nil ? String(part.source.path.split(separator: "/").last ?? "upload") : "stdin"
            return (TusStateMachine(
                size: size, creationURL: token.url, filename: filename, capabilities: capabilities, uploadURL: part.uploadURL,
                checksum: checksum, expires: expires, chunkSize: chunkSize, lengthKnown: lengthKnown), options)
        case .plain:
            return (PlainUploadMachine(size: size), options)  // not for a stream: see runStream
        case .s3:
            return try s3Machine(token, options: options)
        }
    }
}
