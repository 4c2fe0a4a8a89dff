import Glibc
import ResumeKit

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
        if let quick = QuickDownload(Array(CommandLine.arguments.dropFirst())) {
            // One URL stays on this thread: an `async` call would hop to Swift's thread pool first.
            do {
                if let list = quick.inputFile { try await quick.runList(list) } else { try quick.runOne() }
            } catch {
                Resumectl.exit(withError: error)
            }
            // Output is unbuffered and every file is closed and synced: the libraries' exit handlers would only
            // free memory (OpenSSL's cleanup alone was 3% of a 4 KiB download's instructions).
            Glibc._exit(0)
        }
        await Resumectl.main()
    }
}
