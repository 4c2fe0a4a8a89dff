import ArgumentParser
import Dispatch
import ResumeServer
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// `resumectl serve [DIR]`: ranged downloads and resumable uploads for one folder.
@main
struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "resumectl serve",
        abstract: "Serve a folder over HTTP: ranged downloads and resumable uploads.",
        discussion: """
            GET and HEAD serve the files below <dir> with strong ETags and single byte ranges \
            (Range, If-Range). PUT or POST to a path stores the body there; with the headers of \
            draft-ietf-httpbis-resumable-upload (interop versions 3, 5 and 6) an interrupted upload \
            can be resumed. Dot-files are never served. Prints `listening on URL` once ready, then \
            one line per request on standard error; SIGINT or SIGTERM stops it.
            """
    )

    /// Usage errors are one line on stderr, as for every resumectl command.
    static func main() async {
        do {
            var command = try parseAsRoot()
            if var asyncCommand = command as? AsyncParsableCommand { try await asyncCommand.run() } else { try command.run() }
        } catch {
            let code = exitCode(for: error)
            let message = fullMessage(for: error)
            if code == .success {
                if !message.isEmpty { print(message) }
            } else if !message.isEmpty {
                let line = (message.split(separator: "\n").first.map(String.init) ?? message).replacingPrefix("Error: ")
                Standard.error("resumectl: \(line) (see 'resumectl serve --help')")
            }
            Glibc.exit(code.rawValue)
        }
    }

    @Argument(help: ArgumentHelp("Folder to serve.", valueName: "dir"), completion: .directory)
    var directory: String = "."

    @Option(help: "Address to listen on.")
    var host: String = "127.0.0.1"

    @Option(help: "Port to listen on; 0 picks a free one.")
    var port: Int = 8080

    @Flag(help: "Refuse uploads.")
    var readOnly: Bool = false

    @Option(help: ArgumentHelp("Seconds an interrupted upload is kept for its client to resume.", valueName: "seconds"))
    var uploadTimeout: Double = 3600

    func validate() throws {
        guard (0...65535).contains(port) else {
            throw ValidationError("--port must be between 0 and 65535.")
        }
        guard uploadTimeout > 0, uploadTimeout <= 365 * 86400 else {
            throw ValidationError("--upload-timeout must be a positive number of seconds, at most a year.")
        }
    }

    func run() async throws {
        let configuration = ServerConfiguration(
            directory: directory,
            host: host,
            port: port,
            readOnly: readOnly,
            uploadTimeout: .milliseconds(Int64(uploadTimeout * 1000)),
            log: { line in Standard.error(line) }
        )
        let server: ResumeServer
        do {
            server = try await ResumeServer.start(configuration)
        } catch let error as ServeError {
            Standard.error("resumectl: \(error)")
            switch error {
            case .directoryNotFound, .notADirectory:
                throw ExitCode(66)
            case .addressInUse, .cannotListen:
                throw ExitCode(73)
            }
        }
        // Scripts read the port from this line, often through a pipe: flush it now.
        print("listening on \(server.url)")
        fflush(nil)

        await TerminationSignal.wait()
        try await server.shutdown()
    }
}

private enum Standard {
    /// One line to standard error in a single write(2), so lines from several threads never interleave.
    static func error(_ line: String) {
        let bytes = Array((line + "\n").utf8)
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let n = write(STDERR_FILENO, buffer.baseAddress! + offset, buffer.count - offset)
                if n <= 0 { if n < 0 && errno == EINTR { continue }; return }
                offset += n
            }
        }
    }
}

/// Suspends until SIGINT or SIGTERM arrives.
private enum TerminationSignal {
    static func wait() async {
        let sources = [SIGINT, SIGTERM].map { number in
            // Ignored at the process level so that only the dispatch source sees it.
            signal(number, SIG_IGN)
            return DispatchSource.makeSignalSource(signal: number, queue: .global())
        }
        let fired = Once()
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            for source in sources {
                source.setEventHandler {
                    if fired.claim() { continuation.resume() }
                }
                source.resume()
            }
        }
        for source in sources { source.cancel() }
    }

    private final class Once: Sendable {
        private let done = Mutex(false)

        func claim() -> Bool {
            done.withLock { done in
                defer { done = true }
                return !done
            }
        }
    }
}


extension String {
    fileprivate func replacingPrefix(_ prefix: String) -> String {
        hasPrefix(prefix) ? String(dropFirst(prefix.count)) : self
    }
}
