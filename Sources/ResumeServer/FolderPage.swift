import Glibc
import FoundationEssentials
import ResumeKit

/// The page a browser gets for a folder: its listing (folders first, then files, each name
/// escaped) and, unless the server is read-only, an upload area whose uploads resume (tus from the
/// page's script; see ``FolderPageAssets``).
enum FolderPage {
    struct Entry: Equatable {
        var name: String
        var isFolder: Bool
        var size: Int64
        var modified: Int64
        /// The file's entity tag as a GET of it answers (nil for folders).
        var etag: String? = nil
    }

    /// What a folder is asked for as: a browser's page, or a machine listing (`Accept: application/json`,
    /// for `resumectl download URL/`); a folder asked for as neither is not found, as before.
    enum Format {
        case html, json

        init?(accept: [String]) {
            if accept.contains(where: { $0.contains("application/json") }) {
                self = .json
            } else if accept.contains(where: { $0.contains("text/html") }) {
                self = .html
            } else {
                return nil
            }
        }
    }

    /// The listing in `format`, and its content type.
    static func answer(_ format: Format, path: [String], entries: [Entry], uploads: Bool) -> (
        body: String, contentType: String
    ) {
        switch format {
        case .html: (render(path: path, entries: entries, uploads: uploads), "text/html; charset=utf-8")
        case .json: (json(entries), "application/json")
        }
    }

    /// nginx's `autoindex_format json` (name, type, mtime, size), plus each file's ETag: one reader in the
    /// client takes both.
    static func json(_ entries: [Entry]) -> String {
        struct Item: Encodable {
            var name: String
            var type: String
            var mtime: String
            var size: Int64?
            var etag: String?
        }
        let items = entries.map {
            Item(
                name: $0.name, type: $0.isFolder ? "directory" : "file",
                mtime: IMFDate.format(epochSeconds: $0.modified),
                size: $0.isFolder ? nil : $0.size, etag: $0.etag)
        }
        return String(decoding: (try? JSONEncoder().encode(items)) ?? Data("[]".utf8), as: UTF8.self)
    }

    /// The served entries of the open folder `fd` (which this closes): no dot-names (by their first
    /// byte, as ``SafePath`` refuses them), no names a request cannot spell (not UTF-8), no links (never
    /// followed, so never served), no temporary upload files; blocking.
    static func entries(of fd: CInt) -> [Entry]? {
        guard let dir = fdopendir(fd) else {
            close(fd)
            return nil
        }
        defer { closedir(dir) }
        var entries: [Entry] = []
        while let entry = readdir(dir) {
            let decoded = withUnsafeBytes(of: entry.pointee.d_name) { raw -> String? in
                let bytes = raw.prefix { $0 != 0 }
                guard bytes.first != UInt8(ascii: ".") else { return nil }
                return String(validating: bytes, as: UTF8.self)
            }
            guard let name = decoded else { continue }
            var info = stat()
            guard fstatat(dirfd(dir), name, &info, AT_SYMLINK_NOFOLLOW) == 0 else { continue }
            let kind = info.st_mode & S_IFMT
            guard kind == S_IFDIR || kind == S_IFREG else { continue }
            let identity = FileIdentity(
                inode: UInt64(info.st_ino), size: Int64(info.st_size), modifiedSeconds: Int64(info.st_mtim.tv_sec),
                modifiedNanoseconds: Int64(info.st_mtim.tv_nsec))
            entries.append(
                Entry(
                    name: name, isFolder: kind == S_IFDIR, size: identity.size, modified: identity.modifiedSeconds,
                    etag: kind == S_IFDIR ? nil : identity.etag))
        }
        return entries.sorted { a, b in
            a.isFolder != b.isFolder ? a.isFolder : a.name.lowercased() < b.name.lowercased()
        }
    }

    /// The page; `path` is the folder's decoded path below the root, `uploads` whether to offer them.
    static func render(path components: [String], entries: [Entry], uploads: Bool) -> String {
        let title = "/" + components.map { $0 + "/" }.joined()
        var rows = ""
        if !components.isEmpty {
            rows += "<tr><td><a href=\"../\">../</a></td><td></td><td></td></tr>\n"
        }
        for entry in entries {
            let link = FolderListing.percentEncoded(entry.name) + (entry.isFolder ? "/" : "")
            let shown = escaped(entry.name) + (entry.isFolder ? "/" : "")
            let size = entry.isFolder ? "" : "\(entry.size)"
            rows +=
                "<tr><td><a href=\"\(escaped(link))\">\(shown)</a></td><td class=\"size\">\(size)</td>"
                + "<td>\(IMFDate.format(epochSeconds: entry.modified))</td></tr>\n"
        }
        let uploadArea =
            uploads
            ? """
            <section id="upload" class="drop">
            <label>Upload files: <input type="file" id="picker" multiple></label>
            <p>or drop them here. An upload that stops (a lost connection, a closed tab) continues
            when you choose the same file again.</p>
            <ul id="uploads"></ul>
            </section>
            <script src="/.resumectl/page.js"></script>
            """
            : ""
        return """
            <!doctype html>
            <html lang="en">
            <head>
            <meta charset="utf-8">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <title>\(escaped(title))</title>
            <link rel="stylesheet" href="/.resumectl/page.css">
            </head>
            <body>
            <h1>\(escaped(title))</h1>
            <table>
            <thead><tr><th>Name</th><th>Size</th><th>Modified</th></tr></thead>
            <tbody>
            \(rows)</tbody>
            </table>
            \(uploadArea)
            </body>
            </html>

            """
    }

    /// Text for HTML content and attribute values.
    static func escaped(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for character in text {
            switch character {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.append(character)
            }
        }
        return out
    }

    /// Keeps the page's script and styles to its own origin.
    static let contentSecurityPolicy =
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; "
        + "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
}
