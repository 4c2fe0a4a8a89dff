import ArgumentParser
import Glibc

@main
struct Resumectl: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "resumectl",
        abstract: "Large HTTP transfers that survive dropped connections, Ctrl-C, kill -9 and reboots.",
        discussion: """
            Exit status: 0 done, 1 failed, 64 usage, 65 bad data, 66 input missing, 73 cannot create output,
            74 local I/O error, 75 interrupted and resumable, 130 Ctrl-C. 'resumectl help SUBCOMMAND' for more.

            EXAMPLES:
              resumectl download https://example.com/big.iso
              resumectl download --connections 4 https://example.com/big.iso
              resumectl download --cacert ca.pem -u alice https://intranet.example/a.tar
              resumectl upload backup.tar https://uploads.example.com/files/backup.tar
              resumectl list
              resumectl resume d-1a2b3c4d5e6f7a8b
            """,
        version: "0.1.0",
        subcommands: [
            Download.self, Upload.self, Pause.self, Resume.self, Wait.self, List.self, Show.self, Log.self, Cancel.self, Serve.self,
        ]
    )

    /// Like ArgumentParser's own `main`, but a usage error is one line on stderr (scripts read it),
    /// with `--help` for the long story.
    static func main() async {
        do {
            var command = try parseAsRoot()
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
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
