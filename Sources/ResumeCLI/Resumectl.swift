import ArgumentParser
import Glibc
import ResumeKit

struct Resumectl: AsyncParsableCommand {
    // Every command names itself (`commandName`): otherwise ArgumentParser derives each name from the type's name
    // with `String(describing:)`, a protocol-conformance lookup through the whole binary per command, every run.
    static let configuration = CommandConfiguration(
        commandName: "resumectl",
        abstract: "Large HTTP transfers that survive dropped connections, Ctrl-C, kill -9 and reboots.",
        discussion: """
            Exit status: 0 done, 1 failed, 64 usage, 65 bad data, 66 input missing, 73 cannot create output, \
            74 local I/O error, 75 interrupted and resumable, 130 Ctrl-C. 'resumectl help SUBCOMMAND' for more.

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
            Download.self, Upload.self, Pause.self, Resume.self, Wait.self, List.self, Show.self, Log.self, Cancel.self, Serve.self,
        ]
    )

    /// Like ArgumentParser's own `main`, but a usage error is one line on stderr (scripts read it),
    /// with `--help` for the long story.
    static func main() async {
        do {
            if let quick = QuickDownload(Array(CommandLine.arguments.dropFirst())) { return try await quick.run() }
            var command = try parseNamed() ?? parseAsRoot()
            if S3Support.answers == nil, S3Handoff.needed(command) { try S3Handoff.exec() }
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

/// The entry point of the `resumectl` and `resumectl-s3` programs.
public enum CommandLineTool {
    /// - Parameter s3: S3's XML reader, in `resumectl-s3`; `resumectl` passes nil and hands S3 work over.
    @MainActor
    public static func main(s3: (any S3Answers)?) async {
        // `--version` alone is answered before ArgumentParser builds its command tree (that reflects over every
        // subcommand's options: Mirror and protocol-conformance lookups through the whole binary), and on the
        // main thread, before the first hop to Swift's thread pool starts a thread.
        if CommandLine.arguments.count == 2, CommandLine.arguments[1] == "--version" {
            Output.stdout(Resumectl.configuration.version + "\n")
            Glibc.exit(0)
        }
        S3Support.answers = s3
        await Resumectl.main()
    }
}

/// `resumectl` hands an `s3://` transfer (and the resume or cancel of one) to `resumectl-s3` beside it,
/// with the same arguments: S3's XML parser costs a plain HTTP download about 4.5 MiB it never needs.
enum S3Handoff {
    static func needed(_ command: ParsableCommand) -> Bool {
        switch command {
        case let download as Download:
            return download.url.map(Route.isS3) ?? false
        case let upload as Upload:
            return Route.isS3(upload.url)
        case let resume as Resume:
            return resume.token.map { isS3Token($0, stateDir: resume.options.stateDir) } ?? false
        case let cancel as Cancel:
            return isS3Token(cancel.token, stateDir: cancel.state.stateDir)
        default:
            return false
        }
    }

    private static func isS3Token(_ reference: String, stateDir: String?) -> Bool {
        let store = TokenStore(directory: stateDir ?? TokenStore.defaultDirectory())
        if let batch = TransferClient(store: store).batchRecord(reference) { return batch.s3 != nil }
        guard let token = try? TransferClient(store: store).loadToken(reference) else { return false }
        return token.s3 != nil
    }

    static func exec() throws -> Never {
        let program = Serve.siblingPath("resumectl-s3")
        var cArgs = CommandLine.arguments.map { strdup($0) } + [nil]
        execv(program, &cArgs)
        throw Runner.fail(TransferError(.inputMissing, "cannot run \(program) for S3: \(String(cString: strerror(errno)))"), json: false)
    }
}
