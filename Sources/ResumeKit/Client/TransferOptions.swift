/// Settings that hold for a whole transfer.
public struct TransferOptions: Sendable, Equatable {
    public var retry: RetryPolicy = .default
    public var transport = TransportSettings()
    /// Seconds between a download's checkpoints (fsync, then token): a crash costs at most this much time
    /// of transfer, however fast the link.
    public var checkpointInterval: Double = 1.0
    /// Compute the SHA-256 of the finished data even when nothing asks to verify it (for `--json`).
    public var computeSHA256 = false
    /// Parallel ranged connections for one download (`--connections`); 1 means a plain download.
    public var connections = 1
    /// When the name does not resolve or no connection can be made, wait for the network (capped backoff up
    /// to 60 s) without spending retries (`--wait-network`; detached transfers).
    public var waitForNetwork = false
    /// What retries sleep on and read the time from: the system's, or a test's.
    public var clock: any RetryClock {
        get { retryClock.clock }
        set { retryClock = ClockSetting(clock: newValue) }
    }
    private var retryClock = ClockSetting(clock: SystemRetryClock())

    public init() {}

    /// Options are equal whatever their clocks.
    private struct ClockSetting: Sendable, Equatable {
        let clock: any RetryClock
        static func == (a: Self, b: Self) -> Bool { true }
    }
}

/// Turns the user's `-H 'Name: value'` lines into header fields.
public enum HeaderLines {
    public static func parse(_ lines: [String]) throws(TransferError) -> HeaderFields {
        var fields = HeaderFields()
        for line in lines {
            guard let colon = line.firstIndex(of: ":"), colon != line.startIndex else {
                throw TransferError(.usage, "bad header '\(line)': expected 'Name: value'")
            }
            let name = line[..<colon].trimmingSpaces()
            guard name.allSatisfy({ $0.isASCII && !$0.isWhitespace && $0 != ":" }) else {
                throw TransferError(.usage, "bad header name in '\(line)'")
            }
            let value = line[line.index(after: colon)...].trimmingSpaces()
            // On bytes: "\r\n" is one Character, which `contains("\r")` and `contains("\n")` both miss.
            guard !value.utf8.contains(where: { $0 == 13 || $0 == 10 || $0 == 0 }) else {
                throw TransferError(.usage, "header '\(name)' contains a line break")
            }
            fields.append(name, value)
        }
        return fields
    }

    /// A download's header lines, less `Accept-Encoding`: ranges address the bytes as sent, and a body
    /// encoded on the fly cannot be resumed.
    static func forDownload(_ lines: [String]) throws(TransferError) -> HeaderFields {
        var fields = try parse(lines)
        fields.remove("Accept-Encoding")
        return fields
    }

    /// Headers from the token, overridden by headers given now (by name).
    public static func merge(stored: [String], given: [String]) -> [String] {
        let givenNames = Set(given.compactMap { $0.split(separator: ":", maxSplits: 1).first?.trimmingSpaces().lowercased() })
        let kept = stored.filter { line in
            !givenNames.contains(line.split(separator: ":", maxSplits: 1).first?.trimmingSpaces().lowercased() ?? "")
        }
        return kept + given
    }
}

/// Only http and https, and a URL that has a host.
public enum URLCheck {
    public static func validate(_ url: String) throws(TransferError) {
        let bytes = url.utf8
        let head = String(decoding: bytes.prefix(8), as: UTF8.self).lowercased()
        guard head.hasPrefix("http://") || head.hasPrefix("https://") else {
            let scheme = url.split(separator: ":", maxSplits: 1).first.map(String.init) ?? url
            if url.contains("://") { throw TransferError(.usage, "unsupported scheme '\(scheme)': only http and https") }
            throw TransferError(.usage, "'\(url)' is not an http or https URL")
        }
        let rest = bytes.drop(while: { $0 != UInt8(ascii: ":") }).dropFirst(3)
        let authority = rest.prefix(while: { $0 != UInt8(ascii: "/") && $0 != UInt8(ascii: "?") && $0 != UInt8(ascii: "#") })
        guard !authority.isEmpty, !bytes.contains(where: { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\n") }) else {
            throw TransferError(.usage, "malformed URL '\(url)'")
        }
    }
}
