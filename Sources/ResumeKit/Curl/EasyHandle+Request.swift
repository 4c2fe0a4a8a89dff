import CCurl

extension EasyHandle {
    /// Sets every option of one exchange but its callbacks: the URL, method, headers, limits, TLS and login.
    func configure(for request: TransferRequest, _ settings: TransportSettings) throws {
        try set(CURLOPT_URL, request.url)
        try set(CURLOPT_PROTOCOLS_STR, "http,https")
        // Redirects are CurlSession's to follow (libcurl's FOLLOWLOCATION stays off): it strips credentials.
        try set(CURLOPT_USERAGENT, settings.connection.userAgent ?? CurlTransport.userAgent)
        try set(CURLOPT_SUPPRESS_CONNECT_HEADERS, 1)
        try set(CURLOPT_TCP_KEEPALIVE, 1)
        // Under a rate limit libcurl moves a whole buffer at once, then sleeps: a buffer of 1/16 of a second keeps
        // the rate even and a 104 noticed within a fraction of a second. It also reads up to 100 buffers in one go
        // while the socket has more (libcurl 7.88, lib/transfer.c), so a receive buffer of 1/128 of a second:
        // with 1/16, a fast server's first 3 MiB came at once under a limit of 500 kB/s.
        func buffer(_ size: Int, limit: Int64, parts: Int64, least: Int64) -> Int {
            limit > 0 ? Int(min(Int64(size), max(least, limit / parts))) : size
        }
        let receive = buffer(settings.receiveBufferSize, limit: settings.maxReceiveRate, parts: 128, least: 1024)
        try set(CURLOPT_BUFFERSIZE, receive)
        let send = buffer(settings.uploadBufferSize, limit: settings.maxSendRate, parts: 16, least: 16 << 10)
        try set(CURLOPT_UPLOAD_BUFFERSIZE, send)
        try set(CURLOPT_CONNECTTIMEOUT, settings.connectTimeout)
        // A stall is less than one byte a second for the whole stall window.
        try set(CURLOPT_LOW_SPEED_LIMIT, 1)
        try set(CURLOPT_LOW_SPEED_TIME, settings.stallTimeout)
        if settings.maxReceiveRate > 0 { try set(CURLOPT_MAX_RECV_SPEED_LARGE, offset: settings.maxReceiveRate) }
        if settings.maxSendRate > 0 { try set(CURLOPT_MAX_SEND_SPEED_LARGE, offset: settings.maxSendRate) }
        if settings.verbose { try VerboseTrace.install(on: self) }
        try apply(settings.connection, settings.credentials, origin: settings.credentialOrigin, url: request.url)

        var headers = request.headers
        switch request.method {
        case "GET": try set(CURLOPT_HTTPGET, 1)
        case "HEAD": try set(CURLOPT_NOBODY, 1)
        default:
            try set(CURLOPT_CUSTOMREQUEST, request.method)
            guard request.body != nil || request.method == "PATCH" else { break }
            // Upload mode streams the body from the read callback and keeps libcurl's form defaults out.
            try set(CURLOPT_UPLOAD, 1)
            // -1 (a stream, a growing body): libcurl sends the body chunked.
            try set(CURLOPT_INFILESIZE_LARGE, offset: request.body.map { $0.lengthUnknown ? -1 : $0.length } ?? 0)
            if !headers.contains("Content-Type") { headers.append("Content-Type", "application/octet-stream") }
            // A 104 does not release libcurl's 100-continue wait: never ask for one, unless the request does
            // (S3 parts: a refusal then costs no body).
            if !headers.contains("Expect") { headers.set("Expect", "") }
        }
        try set(
            CURLOPT_HTTPHEADER,
            list: headers.fields.map { field in
                field.value.isEmpty ? "\(field.name):" : "\(field.name): \(field.value)"
            })
    }
}
