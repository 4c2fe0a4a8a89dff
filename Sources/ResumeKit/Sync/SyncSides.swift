import FoundationEssentials
import Glibc

/// The sides of a sync other than a remote listing: the local folder's files, their hashes where the other
/// side offers some, and the deletes of the delete phase (a local file, a URL, S3 keys).
enum SyncSides {
    /// The folder's regular files (none while it does not exist), not following links. A `.part` of a file the
    /// source has is that file's download under way, not an extra.
    static func local(_ folder: String, source: Set<String>) throws(TransferError) -> [SyncFile] {
        guard BatchRequest.isFolder(folder) else { return [] }
        return try BatchTree(root: folder, follow: false).files.filter {
            !($0.relative.hasSuffix(".part") && source.contains(String($0.relative.dropLast(5))))
        }.map(\.syncFile)
    }

    /// `--checksum`: the hashes the other side offers of each local file, computed only where the sizes agree
    /// (a size that differs decides alone), each once: `cache` (the batch's, in the state folder) keeps them by
    /// inode, size and time, and is written back unless `cache.write` is false (a dry run writes nothing).
    static func hash(
        _ files: inout [SyncFile], folder: String, other: [SyncFile], cache: (path: String, write: Bool)
    ) throws(TransferError) {
        let offered = Dictionary(other.map { ($0.path, $0) }, uniquingKeysWith: { first, _ in first })
        let stored = FileManager.default.contents(atPath: cache.path)
        var known = stored.flatMap { try? JSONDecoder().decode([String: String].self, from: $0) } ?? [:]
        var kept: [String: String] = [:]
        for i in files.indices {
            guard let twin = offered[files[i].path], twin.size == files[i].size else { continue }
            let path = folder + "/" + files[i].path
            let fd = open(path, O_RDONLY | O_CLOEXEC)
            var st = stat()
            guard fd >= 0, fstat(fd, &st) == 0 else {
                throw TransferError(.inputMissing, "cannot read \(path): \(String(cString: strerror(errno)))")
            }
            defer { close(fd) }
            for name in twin.hashes.keys {
                guard let algorithm = DigestAlgorithm(rawValue: name) else { continue }
                let key = "\(name) \(st.st_ino) \(st.st_size) \(st.st_mtim.tv_sec).\(st.st_mtim.tv_nsec)"
                let range = BodyRange(offset: 0, length: Int64(st.st_size))
                if known[key] == nil {
                    known[key] = try FileDigest.digest(fd: fd, ranges: [range], algorithm, path: path).hex
                }
                (files[i].hashes[name], kept[key]) = (known[key], known[key])
            }
        }
        guard cache.write, !kept.isEmpty, let data = try? JSONEncoder().encode(kept) else { return }
        try? TokenStore.writeDurably(data, to: cache.path, folder: Paths.parent(of: cache.path), sync: false)
    }

    /// `--checksum` against a listing that gives no hashes (serve's): a HEAD with `Want-Repr-Digest` for each file
    /// whose size the other side matches; the SHA-256 of a `Repr-Digest` answer becomes the file's hash.
    static func reprDigests(
        _ files: inout [SyncFile], urls: [String: String], other: [SyncFile], headers: HeaderFields,
        session: any TransportSession, settings: TransportSettings, cancellation: Cancellation
    ) {
        let sizes = Dictionary(other.map { ($0.path, $0.size) }, uniquingKeysWith: { first, _ in first })
        var headers = headers
        headers.set("Want-Repr-Digest", "sha-256=10")
        for i in files.indices where files[i].hashes.isEmpty && sizes[files[i].path] == files[i].size {
            guard let url = urls[files[i].path] else { continue }
            let result = session.headOnly(
                TransferRequest(method: "HEAD", url: url, headers: headers), settings: settings,
                cancellation: cancellation)
            guard let head = result.head, (200..<300).contains(head.status),
                let sum = StructuredField.byteSequenceDictionary(head.headers["Repr-Digest"])["sha-256"]
            else { continue }
            files[i].hashes["sha256"] = sum.hex
        }
    }

    /// Deletes `relative` below `folder`, then each folder above it that is left empty.
    static func deleteLocal(_ folder: String, _ relative: String) throws(TransferError) {
        let path = folder + "/" + relative
        guard unlink(path) == 0 || errno == ENOENT else {
            throw TransferError(.localIO, "cannot delete \(path): \(String(cString: strerror(errno)))")
        }
        var parts = relative.split(separator: "/").dropLast()
        while !parts.isEmpty, rmdir(folder + "/" + parts.joined(separator: "/")) == 0 { parts = parts.dropLast() }
    }

    /// With `--delete` down, once the rest is done: every folder below `folder` with nothing in it goes, deepest
    /// first (a listing names no empty folders, so none is SRC's); `rmdir` takes nothing else.
    static func removeEmptyFolders(_ folder: String) {
        for relative in ((try? FileManager.default.subpathsOfDirectory(atPath: folder)) ?? []).sorted(by: >) {
            rmdir(folder + "/" + relative)
        }
    }

    /// DELETE of one file at a URL, retried as a transfer is; one that is gone already counts as deleted.
    static func deleteURL(
        _ url: String, headers: HeaderFields, session: any TransportSession, options: TransferOptions,
        cancellation: Cancellation
    ) throws(TransferError) {
        let _: Void = try Retrier.run(
            options, cancellation: cancellation, events: { _ in }, stopped: "stopped while deleting"
        ) {
            () throws(TransferError) in
            let result = session.headOnly(
                TransferRequest(method: "DELETE", url: url, headers: headers), settings: options.transport,
                cancellation: cancellation)
            if case .cancelled = result.outcome {
                throw TransferError(.stopped(cancellation.reason ?? .interrupt), "stopped while deleting \(url)")
            }
            guard result.outcome == .completed, let head = result.head else {
                return .failed(Fault.of(result.outcome, stallSeconds: options.transport.stallTimeout) ?? .lost(url))
            }
            if (200..<300).contains(head.status) || head.status == 404 { return .done(()) }
            let what = "cannot delete \(url): the server answered \(head.status)"
            guard RetryPolicy.isRetryable(status: head.status) else {
                throw TransferError(.failed, what, status: head.status)
            }
            return .failed(Fault.answered(head.status, retryAfter: head.headers["Retry-After"], what))
        }
    }

    /// DeleteObjects, 1,000 keys a request (S3's most), quiet: the answer lists only the keys it could not delete.
    static func deleteKeys(
        _ keys: [String], call: S3Call, target: S3Target, session: any TransportSession, options: TransferOptions,
        cancellation: Cancellation
    ) throws(TransferError) {
        let what = "cannot delete from s3://\(target.location.bucket)/\(target.location.key)"
        for start in stride(from: 0, to: keys.count, by: 1_000) {
            var xml = "<Delete xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Quiet>true</Quiet>"
            for key in keys[start..<min(keys.count, start + 1_000)] {
                xml += "<Object><Key>\(MultipartPlan.escaped(key))</Key></Object>"
            }
            let body = Array((xml + "</Delete>").utf8)
            var headers = HeaderFields()
            headers.set("Content-MD5", Data(DigestAlgorithm.md5.digest(body)).base64EncodedString())
            headers.set("Content-Type", "application/xml")
            let url = target.url(key: "", query: [("delete", "")])
            let _: Void = try Retrier.run(
                options, cancellation: cancellation, events: { _ in }, stopped: "stopped while deleting"
            ) {
                () throws(TransferError) in
                switch call.send(
                    session, method: "POST", url: url, headers: headers, body: RequestBody(bytes: body),
                    cancellation: cancellation)
                {
                case .ok(_, let answer):
                    let failed = String(decoding: answer, as: UTF8.self).ranges(of: "<Error>").count
                    if failed > 0 { throw TransferError(.failed, "\(what): S3 kept \(failed) of the objects") }
                    return .done(())
                case .refused(let status, let error, let after)
                where RetryPolicy.isRetryable(status: status, errorCode: error?.code):
                    return .failed(.status(status, retryAfter: after, message: S3Call.failure(status, error, what)))
                case .refused(let status, let error, _):
                    throw TransferError(.failed, S3Call.failure(status, error, what), status: status)
                case .lost(let fault):
                    return .failed(fault.withMessage("\(what): \(fault.message)"))
                case .stopped:
                    throw TransferError(.stopped(cancellation.reason ?? .interrupt), "stopped while deleting")
                }
            }
        }
    }
}

extension BatchTree.File {
    var syncFile: SyncFile { SyncFile(path: relative, size: size, mtime: stamp.mtime / 1_000_000_000) }
}
