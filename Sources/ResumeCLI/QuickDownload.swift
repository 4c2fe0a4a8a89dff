import ResumeKit

/// `download URL [-o PATH] [-q] [--json] [--force] [-H LINE]… [--state-dir DIR]`, the shape a script that
/// fetches file by file runs, and the same with `-i LIST [--parallel N]` instead of the URL, read without
/// ArgumentParser: its parse reflects over all 45 options of `download` (Mirror, type demangling and
/// protocol-conformance scans through the whole binary), a third of a 4 KiB download's time. Any other shape,
/// and anything the full parse would refuse, is left to ArgumentParser, which words the error;
/// `QuickDownloadTests` checks that both read every accepted line alike.
struct QuickDownload: Equatable {
    var url: String?
    var inputFile: String?
    var parallel: Int?
    var output: String?
    var force = false
    var settings = TransferSettings()

    /// nil unless `arguments` (what follows the program name) is `download` in the shape above.
    init?(_ arguments: [String]) {
        guard arguments.first == "download" else { return nil }
        var url: String?
        var rest = arguments.dropFirst().makeIterator()
        while let argument = rest.next() {
            switch argument {
            // A flag given twice is left to ArgumentParser's rules.
            case "-q", "--quiet":
                guard !settings.quiet else { return nil }
                settings.quiet = true
            case "--json":
                guard !settings.json else { return nil }
                settings.json = true
            case "--force":
                guard !force else { return nil }
                force = true
            case "-o", "--output", "-H", "--header", "--state-dir", "-i", "--input-file", "--parallel":
                guard let value = rest.next(), !value.hasPrefix("-") else { return nil }
                switch argument {
                case "-o", "--output":
                    guard output == nil else { return nil }
                    output = value
                case "-i", "--input-file":
                    guard inputFile == nil else { return nil }
                    inputFile = value
                case "--parallel":
                    guard parallel == nil, let n = Int(value), (1...64).contains(n) else { return nil }
                    parallel = n
                case "--state-dir":
                    guard settings.stateDir == nil else { return nil }
                    settings.stateDir = value
                default: settings.headers.append(value)
                }
            default:
                guard url == nil, !argument.hasPrefix("-"), Self.isHTTP(argument) else { return nil }
                url = argument
            }
        }
        // One URL, or a list (into a folder, never stdout) with its --parallel.
        guard (url == nil) != (inputFile == nil), inputFile == nil ? parallel == nil : output != "-",
            (try? HeaderLines.parse(settings.headers)) != nil
        else { return nil }
        self.url = url
    }

    var request: DownloadRequest { DownloadRequest(url: url ?? "", outputPath: output, headers: settings.headers, force: force) }

    /// Runs the list `-i` named; `runOne` runs the one URL.
    func runList(_ inputFile: String) async throws {
        try await ManyDownloads(client: settings.client(), json: settings.json, quiet: settings.quiet, parallel: parallel ?? 4)
            .runList(inputFile, folder: output, headers: settings.headers, onChange: .restart, force: force)
    }

    /// Runs the download on this thread: the full command's path (`Download.run`) hops to Swift's thread
    /// pool and to a transfer thread, which costs a small download more than its bytes. Its live status and
    /// signal rules are the same.
    func runOne() throws {
        let client = settings.client()
        let reporter = Reporter(json: settings.json, quiet: settings.quiet)
        let request = request
        let id = client.downloadTokenID(request)
        if let id { reporter.setToken(id) }
        let live = id.map { LiveStatusWriter(stateDir: client.store.directory, id: $0) }
        defer { live?.finish() }
        let result = try Runner.runBlocking(reporter: reporter) { cancellation throws(TransferError) in
            try client.downloadBlocking(request, cancellation: cancellation) { event in
                live?.handle(event)
                reporter.handle(event)
            }
        }
        reporter.result(result.path)
    }

    private static func isHTTP(_ url: String) -> Bool {
        let scheme = url.prefix { $0 != ":" }.lowercased()
        return (scheme == "http" || scheme == "https") && url.dropFirst(scheme.count).hasPrefix("://")
    }
}
