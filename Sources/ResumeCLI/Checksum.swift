import ArgumentParser
import ResumeKit

enum Checksum {
    /// `sha256=HEX` → the lowercase hex digest.
    static func parse(_ text: String) throws -> String {
        let parts = text.split(separator: "=", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "sha256" else {
            throw ValidationError("--checksum takes sha256=HEX")
        }
        let hex = parts[1].lowercased()
        guard hex.count == 64, hex.allSatisfy({ $0.isHexDigit }) else {
            throw ValidationError("--checksum: a sha256 is 64 hex digits")
        }
        return hex
    }
}
