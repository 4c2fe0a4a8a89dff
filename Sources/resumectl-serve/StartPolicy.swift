/// Whether `serve` may start as asked: beyond loopback, a folder that anyone who can reach the
/// port may write to has to be asked for by name, and a password sent in clear text is worth a
/// word on stderr.
enum StartPolicy {
    /// Addresses only this machine can reach.
    static func isLoopback(_ host: String) -> Bool {
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        return bare == "localhost" || bare == "::1" || bare.hasPrefix("127.")
            || bare.lowercased() == "::ffff:127.0.0.1"
    }

    /// The sentence that refuses the start, or `nil` when it may go ahead.
    static func refusal(host: String, logins: Bool, readOnly: Bool, allowAnonymousUploads: Bool) -> String? {
        guard !isLoopback(host), !logins, !readOnly, !allowAnonymousUploads else { return nil }
        return "refusing to let anyone who can reach \(host) upload without a login: add --htpasswd FILE, "
            + "or --read-only, or --allow-anonymous-uploads if that is what you want"
    }

    /// A warning to print before listening, if any.
    static func warning(host: String, logins: Bool, tls: Bool) -> String? {
        guard !isLoopback(host), logins, !tls else { return nil }
        return "warning: passwords cross the network in clear text without --tls-cert and --tls-key"
    }
}
