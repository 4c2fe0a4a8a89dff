import FoundationEssentials
import Glibc

/// The files under a folder URL: its listing, and its subfolders' to `depth`, read once each. Only down and
/// only inside (as `wget -np`): a link is followed when it stays on the folder's scheme, host and port and
/// under its path, without a query or fragment, and each of its segments decodes to a plain name; every
/// other link (a listing's parent and sort links too) gets a line. A link back to a folder read is ignored.
struct FolderWalk: Sendable {
    struct File: Sendable, Equatable {
        /// Decoded path below the folder, `/`-separated.
        var relative: String
        var url: String
        var size: Int64?
        var mtime: Int64?
        /// The listing's precision of `mtime`, in seconds.
        var mtimeStep: Int64 = 1
        var stamp: String
        /// Content hashes the listing gives (a single-part S3 object's MD5 ETag).
        var hashes: [String: String] = [:]

        var syncFile: SyncFile {
            SyncFile(path: relative, size: size, mtime: mtime, mtimeStep: mtimeStep, hashes: hashes)
        }
    }

    static let maxFiles = 100_000
    static let maxListingBytes = 64 << 20

    private(set) var files: [File] = []
    private(set) var leftOut: [String] = []
    /// False when a page did not reach its end (``FolderListing/isWhole(_:contentType:)``): a sync with
    /// `--delete` then refuses, as it does for an empty listing.
    private(set) var complete = true

    /// Files found otherwise (an S3 prefix's objects).
    init(files: [File], leftOut: [String]) throws(TransferError) {
        guard files.count <= Self.maxFiles else {
            throw TransferError(
                .badListing, "more than \(Self.maxFiles) files; narrow them with --include, --exclude or --depth")
        }
        (self.files, self.leftOut) = (files, leftOut)
    }

    /// - Parameter read: GETs one listing (its body and content type).
    init(
        root: String, depth: Int?, include: [String], exclude: [String], html: (any HTMLLinkReader)?,
        read: (String) throws(TransferError) -> (body: [UInt8], contentType: String?)
    ) throws(TransferError) {
        guard let base = URLComponents(string: root), base.query == nil, base.fragment == nil else {
            throw TransferError(.usage, "\(root) is no folder URL")
        }
        let rootPath = base.percentEncodedPath.hasSuffix("/") ? base.percentEncodedPath : base.percentEncodedPath + "/"
        var pending = [(url: Self.with(base, path: rootPath), level: 0)]
        var visited: Set<String> = [rootPath]
        var names: Set<String> = []
        while !pending.isEmpty {
            let (page, level) = pending.removeFirst()
            let listing = try read(page)
            complete = complete && FolderListing.isWhole(listing.body, contentType: listing.contentType)
            for entry in try FolderListing.entries(listing.body, contentType: listing.contentType, html: html) {
                guard
                    let link = URL(string: entry.href, relativeTo: URL(string: page)).flatMap({
                        URLComponents(url: $0, resolvingAgainstBaseURL: true)
                    })
                else {
                    leftOut.append("\(entry.href): skipped, not a URL")
                    continue
                }
                let path = link.percentEncodedPath
                let shown = link.string ?? entry.href
                if link.query == nil, link.fragment == nil, visited.contains(path) {
                    continue  // a folder read already: this one, or one above it (a loop, or a parent link)
                } else if link.query != nil || link.fragment != nil {
                    leftOut.append("\(shown): skipped, a link with a query or fragment")
                } else if !Origin.same(root, shown) {
                    leftOut.append("\(shown): skipped, on another host")
                } else if !path.hasPrefix(rootPath) {
                    leftOut.append("\(shown): skipped, outside \(root)")
                } else if let relative = Self.relative(String(path.dropFirst(rootPath.count))) {
                    if entry.isFolder {
                        if visited.insert(path).inserted, depth.map({ level < $0 }) ?? true {
                            pending.append((Self.with(base, path: path), level + 1))
                        }
                    } else if names.insert(relative).inserted, Self.wanted(relative, include: include, exclude: exclude)
                    {
                        files.append(
                            File(
                                relative: relative, url: Self.with(base, path: path), size: entry.size,
                                mtime: entry.mtime,
                                mtimeStep: entry.mtimeStep, stamp: entry.stamp))
                        guard files.count <= Self.maxFiles else {
                            throw TransferError(
                                .badListing,
                                "more than \(Self.maxFiles) files under \(root); narrow it with --include, --exclude "
                                    + "or --depth"
                            )
                        }
                    }
                } else {
                    leftOut.append("\(shown): skipped, its name would leave the folder")
                }
            }
        }
    }

    private static func with(_ base: URLComponents, path: String) -> String {
        var url = base
        url.percentEncodedPath = path
        return url.string ?? path
    }

    /// The decoded path of `encoded` (below the folder), or nil when a segment is empty, `.`, `..`, or holds
    /// a `/`, a backslash or a NUL once decoded.
    static func relative(_ encoded: String) -> String? {
        var segments = encoded.split(separator: "/", omittingEmptySubsequences: false)
        if segments.last == "" { segments.removeLast() }
        var decoded: [String] = []
        for segment in segments {
            let name = OutputPath.percentDecoded(String(segment))
            guard !name.isEmpty, name != ".", name != "..",
                !name.contains(where: { $0 == "/" || $0 == "\\" || $0 == "\0" })
            else { return nil }
            decoded.append(name)
        }
        return decoded.isEmpty ? nil : decoded.joined(separator: "/")
    }

    /// `--include` (any of them, when given) and `--exclude` (none of them), as shell globs on the relative path.
    static func wanted(_ relative: String, include: [String], exclude: [String]) -> Bool {
        (include.isEmpty || include.contains { fnmatch($0, relative, 0) == 0 })
            && !exclude.contains { fnmatch($0, relative, 0) == 0 }
    }
}
