import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A child started by `spawnChild`, with our ends of its pipes.
struct SpawnedChild {
    let pid: pid_t
    let stdout: Int32
    let stderr: Int32
    /// Our write end of its stdin, or -1 when stdin is /dev/null.
    let stdin: Int32
}

/// Starts a program with `posix_spawn`, the way a shell would: **no blocked and no ignored signals**, and
/// no file descriptors but 0, 1 and 2.
///
/// Foundation's `Process` is not used because on Linux its children inherit the signal mask of the thread
/// that launched them; from Swift's cooperative pool that blocks SIGINT, SIGTERM, SIGHUP… in the child, so
/// `pause` and Ctrl-C tests would test nothing. It also leaks non-close-on-exec descriptors of the test
/// process into the child.
func spawnChild(
    _ executable: String,
    _ arguments: [String],
    environment: [String: String],
    currentDirectory: String?,
    withStdin: Bool
) throws -> SpawnedChild {
    let out = try makePipe(), err = try makePipe()
    let input = withStdin ? try makePipe() : nil
    defer {
        close(out.write)
        close(err.write)
        if let input { close(input.read) }
    }

    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    if let input {
        posix_spawn_file_actions_adddup2(&actions, input.read, 0)
    } else {
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    }
    posix_spawn_file_actions_adddup2(&actions, out.write, 1)
    posix_spawn_file_actions_adddup2(&actions, err.write, 2)
    if let closeFrom = GlibcExtras.addCloseFrom {
        _ = closeFrom(&actions, 3)
    }
    if let currentDirectory {
        guard let addChdir = GlibcExtras.addChdir else {
            throw SupportError("posix_spawn_file_actions_addchdir_np is not available")
        }
        _ = addChdir(&actions, currentDirectory)
    }

    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    var noSignals = sigset_t(), allSignals = sigset_t()
    sigemptyset(&noSignals)
    sigfillset(&allSignals)
    posix_spawnattr_setsigmask(&attributes, &noSignals)
    posix_spawnattr_setsigdefault(&attributes, &allSignals)
    posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

    let argv = ([executable] + arguments).map { strdup($0) } + [nil]
    let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
    defer {
        for pointer in argv { free(pointer) }
        for pointer in envp { free(pointer) }
    }
    var pid = pid_t()
    let status = posix_spawnp(&pid, executable, &actions, &attributes, argv, envp)
    guard status == 0 else {
        for fd in [out.read, err.read] + (input.map { [$0.write] } ?? []) { close(fd) }
        throw SupportError("cannot start \(executable): \(String(cString: strerror(status)))")
    }
    return SpawnedChild(pid: pid, stdout: out.read, stderr: err.read, stdin: input?.write ?? -1)
}

/// A close-on-exec pipe, so that children spawned concurrently by other tests never inherit it.
private func makePipe() throws -> (read: Int32, write: Int32) {
    var fds: [Int32] = [-1, -1]
    let result = fds.withUnsafeMutableBufferPointer { buffer in
        if let pipe2 = GlibcExtras.pipe2 { return pipe2(buffer.baseAddress!, O_CLOEXEC) }
        let result = pipe(buffer.baseAddress!)
        if result == 0 { for fd in buffer { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) } }
        return result
    }
    guard result == 0 else { throw SupportError("pipe: \(String(cString: strerror(errno)))") }
    return (fds[0], fds[1])
}

/// `waitpid` status decoding (the `WIFEXITED` family are macros Swift cannot import).
func decodeWaitStatus(_ status: Int32) -> (status: Int32, signaled: Bool) {
    let low = status & 0x7F
    return low == 0 ? ((status >> 8) & 0xFF, false) : (low, true)
}

/// GNU extensions that Glibc's Swift module hides behind `_GNU_SOURCE`, looked up at run time.
enum GlibcExtras {
    typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>?, Int32) -> Int32
    typealias AddChdir =
        @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>?, UnsafePointer<CChar>?) -> Int32
    typealias Pipe2 = @convention(c) (UnsafeMutablePointer<Int32>?, Int32) -> Int32

    static let addCloseFrom: AddCloseFrom? = symbol("posix_spawn_file_actions_addclosefrom_np")
    static let addChdir: AddChdir? = symbol("posix_spawn_file_actions_addchdir_np")
    static let pipe2: Pipe2? = symbol("pipe2")

    static func symbol<T>(_ name: String) -> T? {
        dlsym(nil, name).map { unsafeBitCast($0, to: T.self) }
    }
}
