import CCurl

extension EasyHandle {
    /// Applies TLS trust, proxy, address family, HTTP version and credentials to the next exchange.
    /// - Parameter url: the request's URL: `-u` credentials go only to the origin the user named.
    func apply(_ connection: ConnectionSettings, _ credentials: Credentials, origin: String?, url: String) throws {
        if let v = connection.caCert { try set(CURLOPT_CAINFO, v) }
        if let v = connection.caPath { try set(CURLOPT_CAPATH, v) }
        if let v = connection.clientCert { try set(CURLOPT_SSLCERT, v) }
        if let v = connection.clientKey { try set(CURLOPT_SSLKEY, v) }
        if let v = credentials.keyPassword { try set(CURLOPT_KEYPASSWD, v) }
        if connection.insecure == true {
            try set(CURLOPT_SSL_VERIFYPEER, 0)
            try set(CURLOPT_SSL_VERIFYHOST, 0)
        }
        if let v = connection.pinnedPublicKey { try set(CURLOPT_PINNEDPUBLICKEY, v) }
        // Without -x libcurl reads http_proxy, https_proxy and no_proxy itself, by its own rules.
        if let v = connection.proxy { try set(CURLOPT_PROXY, v) }
        if let v = connection.connectTimeout { try set(CURLOPT_CONNECTTIMEOUT_MS, Int((v * 1000).rounded(.up))) }
        if let v = connection.ipVersion {
            try set(CURLOPT_IPRESOLVE, Int(v == .v4 ? CURL_IPRESOLVE_V4 : CURL_IPRESOLVE_V6))
        }
        if let v = connection.resolve, !v.isEmpty { try set(CURLOPT_RESOLVE, list: v) }
        switch connection.httpVersion {
        case .http1_1: try set(CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_1_1)
        case .http2: try set(CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_2_0)
        case nil: try set(CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_2TLS)
        }

        // netrc is keyed by host name, so libcurl only ever sends a host its own entry, redirects included.
        switch credentials.netrc {
        case .required: try set(CURLOPT_NETRC, Int(CURL_NETRC_REQUIRED.rawValue))
        case .optional: try set(CURLOPT_NETRC, Int(CURL_NETRC_OPTIONAL.rawValue))
        case nil:
            try set(
                CURLOPT_NETRC, Int((credentials.netrcFile != nil ? CURL_NETRC_OPTIONAL : CURL_NETRC_IGNORED).rawValue))
        }
        if let v = credentials.netrcFile { try set(CURLOPT_NETRC_FILE, v) }
        // -u belongs to the origin the user named: an upload's Location elsewhere does not get it, and
        // libcurl itself drops it on a redirect to another host, port or scheme (CURLOPT_UNRESTRICTED_AUTH stays off).
        if let user = credentials.user, origin.map({ Origin.same(url, $0) }) ?? true {
            try set(CURLOPT_USERNAME, user)
            try set(CURLOPT_PASSWORD, credentials.password ?? "")  // HTTP Basic, libcurl's default, as with curl -u
        }
    }
}
