import FoundationEssentials

// The JSON of schema version 1, unchanged since the first release: the direction is `kind` beside an
// optional `download` or `upload`; an S3 download's state sits at the top level (`s3`); an upload names its
// protocol in `protocol` with that protocol's fields beside it. Decoding builds the typed model and refuses
// what the model cannot hold (a download token with upload state, an unknown protocol), naming the field.

extension ResumeToken: Codable {
    enum CodingKeys: String, CodingKey {
        case version, id, kind, url, headers, withheldHeaders, createdAt, updatedAt, download, upload, connection, s3
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        version = try c.decode(Int.self, forKey: .version)
        id = try c.decode(String.self, forKey: .id)
        url = try c.decode(String.self, forKey: .url)
        headers = try c.decode([String].self, forKey: .headers)
        withheldHeaders = try c.decodeIfPresent([String].self, forKey: .withheldHeaders)
        createdAt = try c.decode(Date.self, forKey: .createdAt)
        updatedAt = try c.decode(Date.self, forKey: .updatedAt)
        connection = try c.decodeIfPresent(ConnectionSettings.self, forKey: .connection)
        let s3 = try c.decodeIfPresent(S3State.self, forKey: .s3)
        switch try c.decode(Kind.self, forKey: .kind) {
        case .download:
            if try c.holds(.upload) {
                throw TokenValidation.Violation(field: "upload", reason: "is not part of a download token")
            }
            guard var part = try c.decodeIfPresent(DownloadPart.self, forKey: .download) else {
                throw TokenValidation.Violation(field: "download", reason: "is missing in a download token")
            }
            part.s3 = s3
            transfer = .download(part)
        case .upload:
            if try c.holds(.download) {
                throw TokenValidation.Violation(field: "download", reason: "is not part of an upload token")
            }
            if s3 != nil {
                throw TokenValidation.Violation(
                    field: "s3", reason: "belongs to S3 downloads (an S3 upload keeps upload.s3)")
            }
            guard let part = try c.decodeIfPresent(UploadPart.self, forKey: .upload) else {
                throw TokenValidation.Violation(field: "upload", reason: "is missing in an upload token")
            }
            transfer = .upload(part)
        }
    }

    /// Writes what ``Redact`` allows, whatever the token holds in memory (credential headers: `withheldHeaders`).
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(version, forKey: .version)
        try c.encode(id, forKey: .id)
        try c.encode(kind, forKey: .kind)
        try c.encode(Redact.url(url), forKey: .url)
        try c.encode(Redact.storableHeaders(headers), forKey: .headers)
        let withheld = Redact.withheldHeaderNames(headers, adding: withheldHeaders ?? [])
        try c.encodeIfPresent(withheld.isEmpty ? nil : withheld, forKey: .withheldHeaders)
        try c.encode(createdAt, forKey: .createdAt)
        try c.encode(updatedAt, forKey: .updatedAt)
        try c.encodeIfPresent(connection, forKey: .connection)
        switch transfer {
        case .download(var part):
            part.effectiveURL = part.effectiveURL.map(Redact.url)
            try c.encode(part, forKey: .download)
            try c.encodeIfPresent(part.s3, forKey: .s3)
        case .upload(let part):
            try c.encode(part, forKey: .upload)
        }
    }
}

extension ResumeToken.UploadPart: Codable {
    enum CodingKeys: String, CodingKey {
        case uploadURL, interopVersion, source, acknowledgedBytes, resumable
        case protocolName = "protocol"
        case expires, checksumAlgorithm, s3, stream, batch, concat
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        uploadURL = try c.decodeIfPresent(String.self, forKey: .uploadURL)
        source = try c.decode(ResumeToken.SourceIdentity.self, forKey: .source)
        acknowledgedBytes = try c.decode(Int64.self, forKey: .acknowledgedBytes)
        resumable = try c.decode(Bool.self, forKey: .resumable)
        stream = try c.decodeIfPresent(ResumeToken.StreamState.self, forKey: .stream)
        batch = try c.decodeIfPresent(String.self, forKey: .batch)
        let version = try c.decodeIfPresent(Int.self, forKey: .interopVersion).map {
            number throws(TokenValidation.Violation) in
            guard let version = InteropVersion(rawValue: number) else {
                throw TokenValidation.Violation(
                    field: "upload.interopVersion",
                    reason: "is \(number), not one of "
                        + InteropVersion.allCases.map { String($0.rawValue) }.joined(separator: ", "))
            }
            return version
        }
        let s3 = try c.decodeIfPresent(ResumeToken.S3State.self, forKey: .s3)
        let name = try c.decodeIfPresent(String.self, forKey: .protocolName)
        if s3 != nil, name != UploadProtocol.s3.rawValue {
            throw TokenValidation.Violation(field: "upload.s3", reason: "belongs to S3 uploads only")
        }
        concat = try c.decodeIfPresent(ResumeToken.TusConcat.self, forKey: .concat)
        if concat != nil, name != UploadProtocol.tus.rawValue {
            throw TokenValidation.Violation(field: "upload.concat", reason: "belongs to tus uploads only")
        }
        switch name.map({ UploadProtocol(rawValue: $0) }) {
        case nil: wire = version.map { .ietf($0) } ?? .undecided
        case .ietf?: wire = .ietf(version ?? .newest)
        case .tus?:
            let algorithm = try c.decodeIfPresent(String.self, forKey: .checksumAlgorithm).map {
                name throws(TokenValidation.Violation) in
                guard let algorithm = DigestAlgorithm(rawValue: name) else {
                    throw TokenValidation.Violation(
                        field: "upload.checksumAlgorithm",
                        reason: "is not one this program sends ('\(name.prefix(40))')")
                }
                return algorithm
            }
            wire = .tus(expires: try c.decodeIfPresent(String.self, forKey: .expires), checksum: algorithm)
        case .plain?: wire = .plain
        case .s3?:
            guard let s3 else {
                throw TokenValidation.Violation(field: "upload.s3", reason: "is missing in an S3 upload")
            }
            wire = .s3(s3)
        case .some(nil):
            throw TokenValidation.Violation(
                field: "upload.protocol", reason: "must be ietf, tus, plain or s3, not '\(name!.prefix(40))'")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encodeIfPresent(uploadURL.map(Redact.url), forKey: .uploadURL)
        try c.encode(source, forKey: .source)
        try c.encode(acknowledgedBytes, forKey: .acknowledgedBytes)
        try c.encode(resumable, forKey: .resumable)
        try c.encodeIfPresent(stream, forKey: .stream)
        try c.encodeIfPresent(batch, forKey: .batch)
        try c.encodeIfPresent(concat?.redacted, forKey: .concat)
        try c.encodeIfPresent(wire.uploadProtocol?.rawValue, forKey: .protocolName)
        switch wire {
        case .undecided, .plain: break
        case .ietf(let version): try c.encode(version.rawValue, forKey: .interopVersion)
        case .tus(let expires, let checksum):
            try c.encodeIfPresent(expires, forKey: .expires)
            try c.encodeIfPresent(checksum?.rawValue, forKey: .checksumAlgorithm)
        case .s3(let state): try c.encode(state, forKey: .s3)
        }
    }
}

extension KeyedDecodingContainer {
    /// The key is there with a value other than null.
    fileprivate func holds(_ key: Key) throws -> Bool {
        try contains(key) && !decodeNil(forKey: key)
    }
}
