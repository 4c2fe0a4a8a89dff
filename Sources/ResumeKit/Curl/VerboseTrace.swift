import CCurl
import Glibc

/// `-v`: libcurl's trace on stderr, as curl prints it (`*` notes, `>` sent and `<` received headers), but
/// with the values of credential headers replaced: an S3 session token, a signature or a Basic login
/// must not end up in a pasted log.
enum VerboseTrace {
    static func install(on handle: EasyHandle) throws {
        try rctl_setopt_debug_cb(handle.raw, CURLOPT_DEBUGFUNCTION) { _, type, data, size, _ in
            let prefix: String
            switch type {
            case CURLINFO_TEXT: prefix = "* "
            case CURLINFO_HEADER_IN: prefix = "< "
            case CURLINFO_HEADER_OUT: prefix = "> "
            default: return 0
            }
            // By bytes: "\r\n" is one Character, which a split on "\n" would not see.
            let bytes = UnsafeRawBufferPointer(start: data, count: size)
            var out = ""
            for raw in bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: true) {
                let line = Substring(
                    String(decoding: raw.last == UInt8(ascii: "\r") ? raw.dropLast() : raw[...], as: UTF8.self))
                if line.isEmpty { continue }
                out += prefix + VerboseTrace.redacted(line, sent: type == CURLINFO_HEADER_OUT) + "\n"
            }
            _ = out.withUTF8 { writeAll(2, UnsafeRawBufferPointer($0)) }
            return 0
        }.check()
        try handle.set(CURLOPT_VERBOSE, 1)
    }

    static func redacted(_ line: Substring, sent: Bool) -> String {
        guard sent, let colon = line.firstIndex(of: ":") else { return String(line) }
        return Redact.isSecretHeader(line[..<colon]) ? String(line[..<colon]) + ": [redacted]" : String(line)
    }
}
