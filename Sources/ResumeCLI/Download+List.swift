import ArgumentParser
import FoundationEssentials
import Glibc
import ResumeKit

extension Download {
    /// `-i LIST`: every entry on its own token, written into `-o` (made when missing, as `wget -P` and
    /// `aws s3 cp --recursive` do); one line per file on stdout, one per failure on stderr.
    func runList(_ listPath: String) async throws {
        let json = options.json
        guard let data = FileManager.default.contents(atPath: listPath) else {
            throw Runner.fail(TransferError(.inputMissing, "cannot read \(listPath)"), json: json)
        }
        let list = DownloadList(parsing: String(decoding: data, as: UTF8.self))
        let folder = output ?? "."
        do { try OutputPath.makeFolders(folder) } catch { throw Runner.fail(error, json: json) }
        for problem in list.problems { Output.stderr("resumectl: \(listPath): \(problem)\n") }
        // Nothing in it can be fetched (every line a non-http(s) URL or a bad name): a usage error, as on the command
        // line.
        if list.entries.isEmpty, !list.problems.isEmpty { throw ExitCode(64) }
        if !options.quiet, !list.duplicates.isEmpty {
            Output.stderr(
                "resumectl: \(listPath): skipped repeated lines "
                    + "\(list.duplicates.map(String.init).joined(separator: ", "))\n"
            )
        }
        var configured = options.client()
        let sums = try loadChecksums(configured)
        let requests = list.entries.map { entry in
            var request = DownloadRequest(
                url: entry.url, outputPath: folder + "/" + (entry.name ?? ""), headers: options.header,
                onChange: onChange, force: force)
            if let sums {
                let name = entry.name ?? OutputPath.defaultName(url: entry.url)
                request.expectedSHA256 = sums.sha256(for: name)
                if request.expectedSHA256 == nil { noteUnlisted(name) }
            }
            return request
        }
        configured.options.connections = connections ?? 1
        let (client, quiet, problems) = (configured, options.quiet, list.problems.count)
        // Only JSON events carry the token id; working it out costs a path resolution and a hash per file.
        let store = client.store
        let records = client.results
        let answers: @Sendable (String) -> Bool = { id in
            store.exists(id: id) || access(records.path(forID: id), F_OK) == 0
        }
        let reporters = requests.map { request in
            Reporter(
                json: json, quiet: true, tokenID: json ? client.downloadTokenID(request) ?? "" : "", answers: answers)
        }
        let parallel = self.parallel
        let results = try await Runner.run(reporter: Reporter(json: json, quiet: quiet)) {
            cancellation throws(TransferError) in
            await client.downloadAll(requests, parallel: parallel, cancellation: cancellation) { i, event in
                reporters[i].handle(event)
            }
        }
        // A line of the list that names no usable download fails for good, before any result.
        var statuses: [Int32] = Array(repeating: 1, count: problems)
        // The paths go out in pieces of up to 64 KiB, not a write each; a failure's line keeps its place.
        var paths = ""
        for (i, result) in results.enumerated() {
            switch result {
            case .success(let done):
                guard !json else { continue }
                paths += done.path + "\n"
                if paths.utf8.count >= 1 << 16 { Output.stdout(paths); paths = "" }
            case .failure(let error):
                var error = error
                error.message = "\(requests[i].url): \(error.message)"
                if !paths.isEmpty { Output.stdout(paths); paths = "" }
                reporters[i].failure(error)
                statuses.append(error.exitStatus)
            }
        }
        if !paths.isEmpty { Output.stdout(paths) }
        if !statuses.isEmpty {
            if !quiet {
                Output.stderr("resumectl: \(statuses.count) of \(requests.count + problems) downloads failed\n")
            }
            throw ExitCode(ExitStatus.combined(statuses))
        }
    }
}
