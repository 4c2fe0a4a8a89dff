import ResumeKit

/// Finds out at start whether the endpoint honours conditional writes, on which the S3 store's locks
/// rest: a probe object is written twice with `If-None-Match: *`; the second write must be refused.
/// An endpoint that lets it through would let two instances append to one upload at once.
enum S3ConditionalProbe {
    enum Support: Equatable, Sendable {
        case supported
        /// The second conditional write was accepted.
        case ignored
        /// S3 could not be used at all (the reason, for one line on stderr).
        case failed(String)
    }

    /// Blocks: two PUTs and a DELETE of `keys.probe(instance)`.
    static func run(_ client: S3Client, keys: S3UploadKeys, instance: String) -> Support {
        let key = keys.probe(instance)
        let body = Array("resumectl serve probe \(instance)".utf8)
        do {
            let first = try client.send("PUT", key: key, headers: ["If-None-Match": "*"], body: body)
            guard first.isSuccess else {
                let code = first.errorCode(client.answers).map { " \($0)" } ?? ""
                return .failed("S3 answered \(first.status)\(code) to a PUT in \(client.name)")
            }
            defer { _ = try? client.send("DELETE", key: key) }
            let second = try client.send("PUT", key: key, headers: ["If-None-Match": "*"], body: body)
            return second.status == 412 || second.status == 409 ? .supported : .ignored
        } catch {
            return .failed(error.reason)
        }
    }
}
