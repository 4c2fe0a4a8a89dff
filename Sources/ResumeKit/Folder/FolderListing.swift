import FoundationEssentials

/// Reads the links of an HTML page. ResumeKit parses no HTML itself: a program passes a reader in
/// (`ResumeMarkup.HTMLLinks`, over libxml2, which is loaded only when a page is read).
public protocol HTMLLinkReader: Sendable {
    /// Each `<a href>` of the page in document order, with the text that follows it up to the next link;
    /// nil when the bytes are no HTML at all.
    func links(_ html: [UInt8]) -> [(href: String, after: String)]?
}

/// One entry of a folder listing as the server describes it.
struct ListedEntry: Equatable, Sendable {
    /// As linked: percent-encoded, relative to the listing (or absolute); a folder's ends in `/`.
    var href: String
    var size: Int64?
    /// Seconds since the epoch.
    var mtime: Int64?
    /// The listing's precision of `mtime`, in seconds (an HTML listing's is a minute).
    var mtimeStep: Int64 = 1
    /// What the listing says of the entry besides its name: when it changes, the file did.
    var stamp: String

    var isFolder: Bool { href.hasSuffix("/") }
}

/// The folder listings `resumectl download URL/` reads: nginx's `autoindex_format json` and `serve`'s (the
/// same array, with an `etag`), and any HTML page of links (nginx's and Apache's autoindex, a hand-made
/// page), read with libxml2's HTML parser. Sizes and times come from JSON, and from an HTML line that ends
/// in a byte count (nginx's `autoindex_exact_size`) and shows a time to the minute (nginx's, Apache's).
public enum FolderListing {
    private struct Item: Decodable {
        var name: String
        var type: String
        var mtime: String?
        var size: Int64?
        var etag: String?
    }

    static func entries(_ body: [UInt8], contentType: String?, html: (any HTMLLinkReader)?) throws(TransferError)
        -> [ListedEntry]
    {
        if isJSON(body, contentType: contentType) {
            guard let items = try? JSONDecoder().decode([Item].self, from: Data(body)) else {
                throw TransferError(.badListing, "the folder listing is not the JSON array nginx and serve send")
            }
            return items.map { item in
                let folder = item.type == "directory"
                let mtime = item.mtime.flatMap(HTTPDate.parse)
                return ListedEntry(
                    href: percentEncoded(item.name) + (folder ? "/" : ""), size: folder ? nil : item.size, mtime: mtime,
                    stamp: [item.size.map(String.init), mtime.map(String.init), item.etag].map { $0 ?? "" }.joined(
                        separator: " "))
            }
        }
        guard let html else {
            throw TransferError(.failed, "this program was built without an HTML reader for folder listings")
        }
        guard let links = html.links(body) else {
            throw TransferError(.badListing, "the folder listing is neither JSON nor HTML")
        }
        return links.map { link in
            let words = link.after.split(whereSeparator: \.isWhitespace)
            let size = words.last.flatMap { $0.allSatisfy(\.isASCII) ? Int64($0) : nil }
            let mtime = words.indices.lazy.compactMap { HTTPDate.listed(words[$0...]) }.first
            return ListedEntry(
                href: link.href, size: link.href.hasSuffix("/") ? nil : size, mtime: mtime, mtimeStep: 60,
                stamp: words.joined(separator: " "))
        }
    }

    static func isJSON(_ body: [UInt8], contentType: String?) -> Bool {
        contentType?.lowercased().contains("json") == true || body.first { ![9, 10, 13, 32].contains($0) } == 91
    }

    /// Whether a listing reached its end. JSON that stops early does not parse; an HTML page does, so it must
    /// close: nginx's and Apache's end in `</html>`, and a page cut short inside a length that hid the cut (a
    /// `Content-Length` that was the cut's, a body read to the close) does not.
    static func isWhole(_ body: [UInt8], contentType: String?) -> Bool {
        isJSON(body, contentType: contentType)
            || String(decoding: body.suffix(1_024), as: UTF8.self).lowercased().contains("</html")
    }

    /// A name as a path segment: everything but unreserved characters percent-encoded (serve's folder page
    /// links its entries so too).
    public static func percentEncoded(_ name: String) -> String {
        var out = ""
        for byte in name.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                out +=
                    "%" + String(byte >> 4, radix: 16, uppercase: true) + String(byte & 15, radix: 16, uppercase: true)
            }
        }
        return out
    }
}
