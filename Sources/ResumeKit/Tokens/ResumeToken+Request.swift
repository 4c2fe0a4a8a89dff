extension ResumeToken {
    /// A new download's token: nothing committed yet.
    init(download request: DownloadRequest, id: String, path: String, s3: S3State?) {
        var part = DownloadPart(
            path: path, committedBytes: 0, expectedSHA256: request.expectedSHA256?.lowercased(),
            onChange: request.onChange.rawValue, s3: s3)
        if !request.mirrors.isEmpty || request.pieces != nil {
            part.mirrors = ([request.url] + request.mirrors).map { Mirror(url: $0) }
        }
        part.pieces = request.pieces
        self.init(id: id, url: request.url, headers: request.headers, transfer: .download(part))
    }

    /// A new upload's token.
    init(upload request: UploadRequest, id: String, part: UploadPart) {
        var part = part
        part.batch = request.batch
        self.init(id: id, url: request.url, headers: request.headers, transfer: .upload(part))
    }
}
