import ResumeKit

/// What `serve --store s3://` shows of its prefix: objects by `HEAD`, folders by `ListObjectsV2`
/// (dot names never listed, as on a folder), and object bodies streamed by a ranged `GET`.
/// Every method blocks; the static-file handler calls them on the thread pool.
struct S3Objects: Sendable {
    /// An object's identity, from its `HEAD`: S3's ETag is the strong validator.
    struct Info: Sendable {
        var size: Int64
        var etag: String
        var lastModified: String
    }

    let store: S3UploadStore
    /// Where a request S3 failed is said (its client hears only 502).
    let log: (@Sendable (String) -> Void)?

    var client: S3Client { store.client }

    func key(_ components: [String]) -> String { store.keys.object(components) }

    /// The object at `components`, or `nil` when there is none.
    func info(_ components: [String]) throws(UploadFailure) -> Info? {
        guard !components.isEmpty else { return nil }
        let head: S3Client.Response
        do {
            head = try client.send("HEAD", key: key(components))
        } catch {
            throw error.upload
        }
        if head.status == 404 || head.status == 403 { return nil }
        guard head.isSuccess, let size = head.headers["Content-Length"].flatMap({ Int64($0) }), let etag = head.etag
        else {
            throw UploadFailure(status: 502, "S3 answered \(head.status) to HEAD")
        }
        return Info(size: size, etag: etag, lastModified: head.headers["Last-Modified"] ?? "")
    }

    /// The entries of the folder `components` (folders first), or `nil` when nothing is below it (the
    /// prefix's own root always exists).
    func folder(_ components: [String]) throws(UploadFailure) -> [FolderPage.Entry]? {
        let prefix = components.isEmpty ? store.keys.prefix : key(components) + "/"
        var files: [FolderPage.Entry] = []
        var folders: Set<String> = []
        var token: String?
        var pages = 0
        repeat {
            var query = [("list-type", "2"), ("prefix", prefix)]
            if let token { query.append(("continuation-token", token)) }
            let page: S3Client.Response
            do {
                page = try client.send("GET", key: "", query: query)
            } catch {
                throw error.upload
            }
            guard page.isSuccess else {
                throw UploadFailure(status: 502, "S3 answered \(page.status) to ListObjectsV2")
            }
            do {
                let read = try client.answers.objects(page.body)
                // By bytes, as ``SafePath`` splits a request: a `/` or `.` byte counts whatever mark follows it.
                for object in read.objects where object.key.utf8.starts(with: prefix.utf8) {
                    let rest = object.key.utf8.dropFirst(prefix.utf8.count)
                    let first = rest.prefix { $0 != UInt8(ascii: "/") }
                    guard let byte = first.first, byte != UInt8(ascii: ".") else { continue }
                    let name = String(decoding: first, as: UTF8.self)
                    if rest.count > first.count {
                        folders.insert(name)
                    } else {
                        files.append(
                            FolderPage.Entry(
                                name: name, isFolder: false, size: object.size, modified: 0, etag: object.etag))
                    }
                }
                token = read.continuation
            } catch {
                throw UploadFailure(status: 502, "S3's ListObjectsV2 answer: \(error)")
            }
            pages += 1
        } while token != nil && pages < 100
        if files.isEmpty && folders.isEmpty && !components.isEmpty { return nil }
        let entries = folders.map { FolderPage.Entry(name: $0, isFolder: true, size: 0, modified: 0) } + files
        return entries.sorted { a, b in
            a.isFolder != b.isFolder ? a.isFolder : a.name.lowercased() < b.name.lowercased()
        }
    }
}
