import Glibc

/// posix_spawn of this very binary (`/proc/self/exe`): no fork() of a multithreaded Swift process.
public enum Spawner {
    public struct Failure: Error, CustomStringConvertible { public var description: String }

    /// Starts this binary with `arguments`, stdin from /dev/null, the descriptors given as 1, 2 and 3 and no
    /// others, signals at their defaults; `newSession` puts it in a session of its own (setsid).
    public static func spawn(
        _ arguments: [String], stdout: Int32? = nil, stderr: Int32? = nil, ready: Int32? = nil, newSession: Bool
    ) throws -> pid_t {
        let exe = executable()
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        if let stdout { posix_spawn_file_actions_adddup2(&actions, stdout, 1) }
        if let stderr { posix_spawn_file_actions_adddup2(&actions, stderr, 2) }
        if let ready { posix_spawn_file_actions_adddup2(&actions, ready, 3) }
        if let closeFrom = addCloseFrom { _ = closeFrom(&actions, ready == nil ? 3 : 4) }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t(), all = sigset_t()
        sigemptyset(&none)
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        let setsid: Int32 = 0x80  // POSIX_SPAWN_SETSID (glibc 2.26+), hidden from Swift behind _GNU_SOURCE
        posix_spawnattr_setflags(
            &attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | (newSession ? setsid : 0)))
        let argv = ([exe] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid = pid_t()
        let status = posix_spawn(&pid, exe, &actions, &attributes, argv, environ)
        guard status == 0 else {
            throw Failure(description: "cannot start \(exe): \(String(cString: strerror(status)))")
        }
        return pid
    }

    /// The path of this binary.
    public static func executable() -> String {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        return n > 0
            ? String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self) : CommandLine.arguments[0]
    }

    private typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>?, Int32) -> Int32
    private static let addCloseFrom: AddCloseFrom? = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np").map {
        unsafeBitCast($0, to: AddCloseFrom.self)
    }
}
