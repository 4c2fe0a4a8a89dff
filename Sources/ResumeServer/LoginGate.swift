import FoundationEssentials
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// What `--htpasswd` (and `--public-read`) ask of every request, shared by all connections.
struct Logins: Sendable {
    var passwords: PasswordFile
    var publicRead: Bool
    var throttle = LoginThrottle()
    var verified = VerifiedCredentials()
    var log: (@Sendable (String) -> Void)?

    static let realm = "resumectl"
}

/// Remembers `Authorization` values that passed, so that a client sending its login with each of
/// many requests (a resumed upload's HEAD and PATCHes, a page's chunks) costs one bcrypt, not one
/// per request. Only a keyed hash is kept (Swift's `Hasher`, seeded at random per process), never
/// the credentials; entries go after `lifetime`.
final class VerifiedCredentials: Sendable {
    private let entries = Mutex<[Int: ContinuousClock.Instant]>([:])
    private static let lifetime = Duration.seconds(300)
    private static let capacity = 4096

    func contains(_ authorization: String, now: ContinuousClock.Instant = .now) -> Bool {
        entries.withLock { entries in
            guard let added = entries[authorization.hashValue] else { return false }
            return now < added + Self.lifetime
        }
    }

    func insert(_ authorization: String, now: ContinuousClock.Instant = .now) {
        entries.withLock { entries in
            if entries.count >= Self.capacity { entries = entries.filter { now < $0.value + Self.lifetime } }
            if entries.count >= Self.capacity { entries.removeAll() }
            entries[authorization.hashValue] = now
        }
    }
}

/// Lets a request on only with a valid HTTP Basic login from the htpasswd file (or, with
/// `--public-read`, a GET or HEAD of a file without one).
///
/// A password is checked on the thread pool (bcrypt is slow on purpose); meanwhile the request's
/// parts are held and no more are read. A refused request is answered here (401, or 429 when its
/// address failed too often) and its body is read and dropped; the connection then closes.
/// Neither passwords nor `Authorization` values are logged: a failed login is, with its user
/// name and the client's address.
final class LoginGate: ChannelDuplexHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    private enum State {
        case idle
        case passing
        /// Waiting for the thread pool's verdict; parts are held, reads too.
        case checking(held: [HTTPServerRequestPart], readPending: Bool)
        /// Answered or being answered; the rest of the request is dropped.
        case refusing(requestEnded: Bool, answered: Bool)
    }

    private let logins: Logins
    private let threadPool: NIOThreadPool
    /// Paths of uploads in progress: a HEAD there is part of an upload, not a download.
    private let uploadPrefixes: [String]
    private var state = State.idle
    /// Whose login the request in progress passed with (`nil` when it needed none): an upload keeps it
    /// for its completion hook.
    private(set) var user: String?

    init(logins: Logins, threadPool: NIOThreadPool, uploadPrefixes: [String]) {
        self.logins = logins
        self.threadPool = threadPool
        self.uploadPrefixes = uploadPrefixes
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let part = unwrapInboundIn(data)
        switch (part, state) {
        case (.head(let head), _):
            admit(context: context, head: head)
        case (_, .passing):
            if case .end = part { state = .idle }
            context.fireChannelRead(data)
        case (_, .checking(var held, let readPending)):
            held.append(part)
            state = .checking(held: held, readPending: readPending)
        case (.end, .refusing(_, let answered)):
            state = .refusing(requestEnded: true, answered: answered)
            if answered { context.close(promise: nil) }
        case (_, _):
            break
        }
    }

    func read(context: ChannelHandlerContext) {
        if case .checking(let held, _) = state {
            state = .checking(held: held, readPending: true)
        } else {
            context.read()
        }
    }

    private func admit(context: ChannelHandlerContext, head: HTTPRequestHead) {
        user = nil
        // The method every handler reads: ExchangeObserver has already applied MethodOverride to it.
        let isRead = head.method == .GET || head.method == .HEAD || head.method == .OPTIONS
        if logins.publicRead && isRead && !uploadPrefixes.contains(where: { head.uri.hasPrefix($0) }) {
            pass(context: context, head: head)
            return
        }
        guard let authorization = head.headers["authorization"].first,
            let (user, password) = Self.basicCredentials(authorization)
        else {
            refuse(context: context, head: head, status: .unauthorized)
            return
        }
        let address = Self.address(of: context.channel)
        if let wait = logins.throttle.retryAfter(address) {
            refuse(context: context, head: head, status: .tooManyRequests, extra: [("Retry-After", "\(wait)")])
            return
        }
        if logins.verified.contains(authorization) {
            self.user = user
            pass(context: context, head: head)
            return
        }
        state = .checking(held: [.head(head)], readPending: false)
        let passwords = logins.passwords
        threadPool.runIfActive(eventLoop: context.eventLoop) {
            passwords.verify(user: user, password: password)
        }.assumeIsolated().whenComplete { result in
            guard case .checking(let held, let readPending) = self.state else { return }
            if case .success(true) = result {
                self.logins.verified.insert(authorization)
                self.state = .passing
                self.user = user
                for part in held {
                    if case .end = part { self.state = .idle }
                    context.fireChannelRead(self.wrapInboundOut(part))
                }
                context.fireChannelReadComplete()
                if readPending { context.read() }
                return
            }
            self.logins.throttle.recordFailure(address)
            self.logins.log?("login failed for user \(Self.printable(user)) from \(address)")
            let ended = held.contains { if case .end = $0 { true } else { false } }
            self.state = .refusing(requestEnded: ended, answered: false)
            self.refuse(context: context, head: head, status: .unauthorized)
            if readPending { context.read() }
        }
    }

    /// The login of the request in progress on `context`'s connection, as its ``LoginGate`` checked it.
    static func user(in context: ChannelHandlerContext) -> String? {
        (try? context.pipeline.syncOperations.handler(type: LoginGate.self))?.user
    }

    private func pass(context: ChannelHandlerContext, head: HTTPRequestHead) {
        state = .passing
        context.fireChannelRead(wrapInboundOut(.head(head)))
    }

    private func refuse(
        context: ChannelHandlerContext,
        head: HTTPRequestHead,
        status: HTTPResponseStatus,
        extra: [(String, String)] = []
    ) {
        if case .refusing = state {} else { state = .refusing(requestEnded: false, answered: false) }
        let text = "\(status.code) \(status.reasonPhrase)\n"
        var headers = HTTPHeaders([
            ("WWW-Authenticate", "Basic realm=\"\(Logins.realm)\", charset=\"UTF-8\""),
            ("Content-Type", "text/plain; charset=utf-8"),
            ("Content-Length", "\(text.utf8.count)"),
            ("Connection", "close"),
        ])
        headers.add(contentsOf: extra)
        let answer = HTTPResponseHead(version: head.version, status: status, headers: headers)
        context.writeAnswer(answer, text: text, method: head.method).assumeIsolated().whenComplete { result in
            guard case .refusing(let requestEnded, _) = self.state else { return }
            self.state = .refusing(requestEnded: requestEnded, answered: true)
            // Closing under an unread body could reset the connection and lose the answer.
            if requestEnded || (try? result.get()) == nil { context.close(promise: nil) }
        }
    }

    /// `user` and `password` of a `Basic` authorization; `nil` for any other scheme or bad base64.
    static func basicCredentials(_ value: String) -> (String, String)? {
        let parts = value.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "basic",
            let decoded = Base64.decode(Substring(parts[1].trimmingSpaces)),
            let text = String(validating: decoded, as: UTF8.self),
            let colon = text.firstIndex(of: ":")
        else { return nil }
        return (String(text[..<colon]), String(text[text.index(after: colon)...]))
    }

    private static func address(of channel: any Channel) -> String {
        channel.remoteAddress?.ipAddress ?? "-"
    }

    /// A user name from the network as a log may show it: control characters escaped.
    static func printable(_ user: String) -> String {
        var out = "\""
        for scalar in user.unicodeScalars.prefix(64) {
            if scalar.value < 0x20 || scalar.value == 0x7F || scalar == "\"" || scalar == "\\" {
                out += "\\u{\(String(scalar.value, radix: 16))}"
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}

/// Standard base64 (RFC 4648 §4), padding optional: Basic credentials, tus metadata and checksums.
enum Base64 {
    static func decode(_ text: Substring) -> [UInt8]? {
        let padding = String(repeating: "=", count: (4 - text.utf8.count % 4) % 4)
        return Data(base64Encoded: String(text) + padding).map { Array($0) }
    }
}
