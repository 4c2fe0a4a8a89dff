// A download that survives dropped connections and restarts, through ResumeKit's public API.
//
//     swift run resumekit-example https://example.com/big.iso [PATH] [--cacert FILE]
//
// Run it, press Ctrl-C (or pull the cable), run it again: the second run continues from the bytes the first
// one committed, because the same URL and path find the same token. `make test` compiles this file.
import Glibc
import ResumeKit

@main
struct ResumeKitExample {
    static func main() async {
        var args = Array(CommandLine.arguments.dropFirst())
        var options = TransferOptions()
        options.retry = RetryPolicy(maxRetries: 5, baseDelay: 1)
        if let i = args.firstIndex(of: "--cacert"), i + 1 < args.count {
            options.transport.connection.caCert = args[i + 1]  // kept in the token: a resume trusts the same CA
            args.removeSubrange(i...(i + 1))
        }
        guard let url = args.first else {
            print("usage: resumekit-example URL [PATH] [--cacert FILE]")
            exit(64)
        }
        let client = TransferClient(store: TokenStore(directory: TokenStore.defaultDirectory()), options: options)
        let request = DownloadRequest(url: url, outputPath: args.count > 1 ? args[1] : nil)
        // Events as an AsyncSequence; a callback (`client.download(request, events:)`) works as well.
        let run = client.start(request)
        for await event in run.events {
            switch event {
            case .started(_, _, let path, let offset, _) where offset > 0:
                print("continuing \(path) from byte \(offset)")
            case .progress(let bytes, let total, _):
                print("\(bytes) of \(total.map(String.init) ?? "?") bytes")
            case .retry(let attempt, let delay, let error):
                print("\(error); retry \(attempt) in \(delay) s")
            default:
                break
            }
        }
        do {
            let result = try await run.result()
            print("done: \(result.path) (\(result.bytes) bytes)")
        } catch {
            // A resumable failure keeps its token: `client.resume(id)` (or `resumectl resume id`) continues.
            if error.isResumable, let id = error.tokenID {
                print("stopped (\(error.message)); continue later with token \(id)")
            } else {
                print("failed: \(error.message)")
            }
            exit(error.exitStatus)
        }
    }
}
