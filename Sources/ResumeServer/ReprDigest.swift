import FoundationEssentials
import ResumeKit

/// RFC 9530's `Repr-Digest` of a served file, computed only when a HEAD asks for it with
/// `Want-Repr-Digest: sha-256=…`: a client that would send the file checks first whether the server holds
/// the same bytes (`resumectl upload --skip-existing`). It runs on the thread pool, never on an event loop.
enum ReprDigest {
    /// True when `Want-Repr-Digest` names sha-256 with a non-zero preference.
    static func wanted(_ values: [String]) -> Bool {
        values.joined(separator: ",").split(separator: ",").contains { member in
            let parts = member.split(separator: "=", maxSplits: 1).map {
                $0.filter { $0 != " " && $0 != "\t" }.lowercased()
            }
            return parts.first == "sha-256" && parts.last != "0"
        }
    }

    /// The field value, `sha-256=:BASE64:`, of the file open at `fd` (read with pread: the offset stays).
    static func sha256(fd: Int32) -> String? {
        FileDigest.sha256(fd: fd).map { "sha-256=:" + Data($0).base64EncodedString() + ":" }
    }
}
