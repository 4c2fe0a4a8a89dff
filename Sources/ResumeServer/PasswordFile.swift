import Glibc
import CCrypt

/// The logins of `--htpasswd FILE`: `user:hash` lines as Apache's `htpasswd -B` (bcrypt) and
/// `openssl passwd -5/-6` (SHA-crypt) write them, checked with the system's libcrypt rather than
/// with hashing code of our own.
///
/// Any other kind of line (Apache's MD5 `$apr1$`, SHA-1 `{SHA}`, plain DES, plain text) is refused
/// when the server starts, naming its line, instead of locking that user out at the first request.
struct PasswordFile: Sendable {
    private let hashes: [String: String]
    /// What an unknown user's password is checked against: the file's costliest entry, so that an unknown
    /// name takes as long as the slowest known one and timing does not tell which users exist.
    let decoy: String

    /// The prefixes of the formats accepted: bcrypt's variants, then SHA-256-crypt and SHA-512-crypt.
    static let acceptedPrefixes = ["$2y$", "$2b$", "$2a$", "$5$", "$6$"]

    var users: Int { hashes.count }

    init(hashes: [String: String]) {
        self.hashes = hashes
        decoy = hashes.values.max { Self.cost($0) < Self.cost($1) } ?? Self.fallbackDecoy
    }

    /// How costly a hash is to check, for ordering only: bcrypt over SHA-512-crypt over SHA-256-crypt, then
    /// bcrypt's cost or SHA-crypt's `rounds=` (5,000 when absent, crypt(5)).
    static func cost(_ hash: String) -> (Int, Int) {
        let fields = hash.split(separator: "$", omittingEmptySubsequences: true)
        guard let kind = fields.first else { return (0, 0) }
        if kind.hasPrefix("2") { return (3, fields.count > 1 ? Int(fields[1]) ?? 0 : 0) }
        let rounds = fields.count > 1 && fields[1].hasPrefix("rounds=") ? Int(fields[1].dropFirst(7)) ?? 0 : 5000
        return (kind == "6" ? 2 : 1, rounds)
    }

    /// Reads and checks the file; blank lines and `#` comments are allowed.
    static func load(path: String) throws(ServeError) -> PasswordFile {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw .unreadableFile(path: path, reason: String(cString: strerror(errno))) }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n >= 0 else { throw .unreadableFile(path: path, reason: String(cString: strerror(errno))) }
            if n == 0 { break }
            bytes += chunk[0..<n]
        }
        return try parse(String(decoding: bytes, as: UTF8.self), path: path)
    }

    static func parse(_ text: String, path: String) throws(ServeError) -> PasswordFile {
        var hashes: [String: String] = [:]
        // isNewline: a CRLF is one Character in Swift, so splitting on "\n" alone would keep it in the hash.
        for (index, line) in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).enumerated() {
            if line.allSatisfy({ $0 == " " || $0 == "\t" }) || line.hasPrefix("#") { continue }
            let number = index + 1
            guard let colon = line.firstIndex(of: ":"), colon != line.startIndex else {
                throw .badPasswordFile(path: path, line: number, reason: "not a user:hash line")
            }
            let user = String(line[..<colon])
            let hash = String(line[line.index(after: colon)...])
            guard acceptedPrefixes.contains(where: { hash.hasPrefix($0) }) else {
                throw .badPasswordFile(
                    path: path,
                    line: number,
                    reason:
                        "the entry for \(user) is neither bcrypt (htpasswd -B) nor SHA-crypt (openssl passwd -5 or -6)"
                )
            }
            // libcrypt's own verdict on the setting: a malformed or disabled hash is refused now.
            let verdict = crypt_checksalt(hash)
            guard verdict == CRYPT_SALT_OK || verdict == CRYPT_SALT_TOO_CHEAP || verdict == CRYPT_SALT_METHOD_LEGACY,
                isComplete(hash)
            else {
                throw .badPasswordFile(path: path, line: number, reason: "the hash for \(user) is malformed")
            }
            guard hashes[user] == nil else {
                throw .badPasswordFile(path: path, line: number, reason: "\(user) is listed twice")
            }
            hashes[user] = hash
        }
        return PasswordFile(hashes: hashes)
    }

    /// crypt_checksalt judges only the setting: a line cut after the salt (`$6$salt`) would pass it and
    /// then match no password. A whole hash has its digest: 31 characters after bcrypt's 22 of salt
    /// (60 in all), 43 after SHA-256-crypt's last `$`, 86 after SHA-512-crypt's.
    private static func isComplete(_ hash: String) -> Bool {
        if hash.hasPrefix("$2") { return hash.utf8.count == 60 }
        let digest = hash.split(separator: "$", omittingEmptySubsequences: false).last?.utf8.count ?? 0
        return digest == (hash.hasPrefix("$5$") ? 43 : 86)
    }

    /// Whether `password` is `user`'s. Blocking (bcrypt is slow on purpose): run it off the event loop.
    func verify(user: String, password: String) -> Bool {
        let hash = hashes[user] ?? decoy
        let data = UnsafeMutableRawPointer.allocate(byteCount: MemoryLayout<crypt_data>.size, alignment: 16)
        defer {
            data.initializeMemory(as: UInt8.self, repeating: 0, count: MemoryLayout<crypt_data>.size)
            data.deallocate()
        }
        data.initializeMemory(as: UInt8.self, repeating: 0, count: MemoryLayout<crypt_data>.size)
        guard let result = crypt_r(password, hash, data.assumingMemoryBound(to: crypt_data.self)) else { return false }
        let computed = Array(String(cString: result).utf8)
        let expected = Array(hash.utf8)
        guard computed.count == expected.count else { return false }
        var difference: UInt8 = 0
        for (a, b) in zip(computed, expected) { difference |= a ^ b }
        return difference == 0 && hashes[user] != nil
    }

    /// A valid SHA-512-crypt hash of nothing anyone knows, for a file without entries.
    private static let fallbackDecoy =
        "$6$resumectlDecoy$GYttSUzFTmSaJ3oGYpHpYu6WcXsVvPgdq1amC.DA5JJC7Fu0zhLrSMBjKixjSBNcpy3N6XDnuPbNJ0JFNFlQ4."
}
