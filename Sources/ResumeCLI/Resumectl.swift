import ArgumentParser
import Glibc
import ResumeKit

struct Resumectl: AsyncParsableCommand {
    static let name = "resumectl"

    // Every command names itself (`commandName`): otherwise ArgumentParser derives each name from the type's name
    // with `String(describing:)`, a protocol-conformance lookup through the whole binary per command, every run.
    static let configuration = CommandConfiguration(
        commandName: name,
        abstract: "Large HTTP transfers that survive dropped connections, Ctrl-C, kill -9 and reboots.",
        discussion: """
            'resumectl help SUBCOMMAND' for a command's options; 'man resumectl' for all of them.

            EXIT STATUS:
              0    done (also: it was already complete)
              1    failed and cannot be resumed
              64   usage: bad arguments, a malformed or non-http(s) URL
              65   bad data: checksum mismatch, unreadable token, changed source
              66   input missing: the upload's source, the token
              73   cannot create the output
              74   local I/O error, e.g. a full disk; the token is kept
              75   interrupted and resumable: paused, retries used up, network gone
              130  Ctrl-C; the token is kept
              141  -o - only: the reader of stdout went away

            Many transfers at once exit 0 when all succeeded, else with the worst status.

            EXAMPLES:
              resumectl download https://example.com/big.iso
              resumectl download --connections 4 https://example.com/big.iso
              resumectl download --cacert ca.pem -u alice https://intranet.example/a.tar
              resumectl upload backup.tar https://uploads.example.com/files/backup.tar
              resumectl upload backup.tar s3://my-bucket/backups/backup.tar
              resumectl download s3://my-bucket/photos/ -o photos/
              resumectl list
              resumectl resume d-1a2b3c4d5e6f7a8b
            """,
        version: "0.1.0",
        subcommands: [
            Download.self, Upload.self, Pause.self, Resume.self, Wait.self, List.self, Show.self, Log.self, Cancel.self,
            Serve.self, Sync.self,
        ]
    )

    /// Like ArgumentParser's own `main`, but a usage error is one line on stderr (scripts read it),
    /// with `--help` for the long story. On the main actor, as `CommandLineTool.main`: a command whose `run`
    /// is on it too (`download`) starts on this thread, without a hop to Swift's thread pool.
    @MainActor
    static func main() async {
        do {
            var command = try parseNamed() ?? parseAsRoot()
            if let asyncCommand = command as? AsyncParsableCommand {
                // The parsed command is this task's alone; a `run` on the main actor (download's) starts on this
                // thread.
                nonisolated(unsafe) var running = asyncCommand
                try await running.run()
            } else {
                try command.run()
            }
            // Output is unbuffered and every file is closed and synced: the libraries' exit handlers would only
            // free memory (OpenSSL's cleanup alone was 3% of a 4 KiB download's instructions).
            fflush(nil)
            Glibc._exit(0)
        } catch {
            let code = exitCode(for: error)
            let message = fullMessage(for: error)
            if code == .success {
                if !message.isEmpty { Output.stdout(message + "\n") }
            } else if !message.isEmpty {
                var line = message.split(separator: "\n").first.map(String.init) ?? message
                if line.hasPrefix("Error: ") { line.removeFirst(7) }
                Output.stderr("resumectl: \(line) (see 'resumectl --help')\n")
            }
            Glibc.exit(code.rawValue)
        }
    }
}

extension Resumectl {
    /// The command line as the one subcommand it names parses it (`download URL -o F` is parsed by `Download`
    /// alone): the root's parse reflects over every subcommand's options as well, about a quarter of a small
    /// download's CPU. Anything else that parse gives (help, a usage error, a completion request) is left to
    /// the root's, which words it as before.
    static func parseNamed() -> ParsableCommand? {
        let arguments = CommandLine.arguments.dropFirst()
        guard let name = arguments.first,
            let command = configuration.subcommands.first(where: { $0.configuration.commandName == name }),
            let parsed = try? command.parseAsRoot(Array(arguments.dropFirst())),
            ObjectIdentifier(type(of: parsed)) == ObjectIdentifier(command)
        else { return nil }
        return parsed
    }
}
