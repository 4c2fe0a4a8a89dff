import CCurl

/// A libcurl result code with libcurl's own message (the error buffer when it has one).
struct CurlError: Error, Sendable, CustomStringConvertible {
    var code: Int
    var message: String
    var description: String { message }

    init(_ code: CURLcode, detail: String = "") {
        self.code = Int(code.rawValue)
        let generic = String(cString: curl_easy_strerror(code))
        message = detail.isEmpty ? generic : detail
    }
}

extension CURLcode {
    func check() throws {
        if self != CURLE_OK { throw CurlError(self) }
    }
}
