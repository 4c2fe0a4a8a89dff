import CCurl

/// A libcurl result code with libcurl's own message (the error buffer when it has one).
struct CurlError: Error, Sendable, CustomStringConvertible {
    var code: Int
    var message: String
    var description: String { message }

    init(_ code: CURLcode, detail: String = "") {
        self.code = Int(code.rawValue)
        message = detail.isEmpty ? String(cString: curl_easy_strerror(code)) : detail
    }
}

extension CURLcode {
    func check() throws {
        if self != CURLE_OK { throw CurlError(self) }
    }
}
