/// RFC 5854's rules over the tree of a Metalink 4 document, and the limits a hostile one meets first.
struct MetalinkReader {
    let requireHashes: Bool

    func read(_ bytes: [UInt8]) throws(MetalinkError) -> Metalink {
        guard bytes.count <= Metalink.maxBytes else {
            throw MetalinkError(.tooLarge, "the Metalink is over \(Metalink.maxBytes >> 20) MiB")
        }
        // Read as UTF-8 (XMLTree's strict mode), a document type declaration shows in the bytes: refused before
        // the parser reads one, so that no entity is ever declared, expanded or fetched.
        guard !Self.contains(bytes, "<!DOCTYPE") else {
            throw MetalinkError(.doctype, "the Metalink has a document type declaration (entities are refused)")
        }
        // Read as a stream that stops at the first file or URL over the limits: a document of a million URLs is
        // refused having held a thousand, not after a tree of all of them was built.
        let root: XMLTree
        let most = ["file": Metalink.maxFiles, "url": Metalink.maxURLs]
        switch bytes.contains(0) ? .malformed : XMLTree.read(bytes, strict: true, most: most) {
        case .tree(let tree):
            root = tree
        case .malformed:
            throw MetalinkError(.notXML, "the Metalink is not well-formed UTF-8 XML")
        case .tooMany("file", _):
            throw MetalinkError(.fileCount, "the Metalink describes more than \(Metalink.maxFiles) files")
        case .tooMany(let name, let attributes):
            let file = (try? Self.checkedName(attributes["name"])) ?? "a file"  // never a name that breaks the line
            throw MetalinkError(.urlCount, "\(file): more than \(Metalink.maxURLs) <\(name)> elements")
        }
        guard root.name == "metalink", root.namespace == Metalink.namespace else {
            let place = root.namespace.map { " in \($0)" } ?? " without a namespace"
            throw MetalinkError(
                .notMetalink, "<\(root.name)>\(place) is no Metalink 4 (RFC 5854: <metalink> in \(Metalink.namespace))")
        }
        let elements = Self.own(root, "file")
        guard !elements.isEmpty else { throw MetalinkError(.fileCount, "the Metalink describes no file") }
        var files: [Metalink.File] = []
        var names = Set<String>()
        for element in elements {
            let file = try self.file(element)
            guard names.insert(file.name).inserted else {
                throw MetalinkError(.name, "the Metalink describes \(file.name) twice")
            }
            files.append(file)
        }
        return Metalink(files: files)
    }

    private func file(_ element: XMLTree) throws(MetalinkError) -> Metalink.File {
        let name = try Self.checkedName(element.attributes["name"])
        var file = Metalink.File(name: name)
        if let text = Self.own(element, "size").first?.text {
            let trimmed = Self.trimmed(text)
            guard let size = Int64(trimmed), size >= 0, trimmed.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else {
                throw MetalinkError(.size, "\(name): size '\(trimmed.prefix(40))' is no number of bytes")
            }
            guard size <= Metalink.maxSize else {
                throw MetalinkError(.size, "\(name): a size of \(size) bytes is over \(Metalink.maxSize >> 30) GiB")
            }
            file.size = size
        }
        file.hashes = try hashes(element, name)
        file.pieces = try pieces(element, name, size: file.size)
        if requireHashes, !file.isVerifiable {
            throw MetalinkError(
                .noHash, "\(name): no hash to check it by (SHA-256, SHA-384, SHA-512 or SHA-1, whole or by piece)")
        }
        let mirrors = Self.own(element, "url").compactMap { url -> Metalink.Mirror? in
            let address = Self.trimmed(url.text)
            guard !address.isEmpty else { return nil }
            let priority = url.attributes["priority"].flatMap { Int(Self.trimmed($0)) }.flatMap {
                (1...999_999).contains($0) ? $0 : nil
            }
            let location = url.attributes["location"].map { Self.trimmed($0).lowercased() }.flatMap {
                $0.isEmpty ? nil : $0
            }
            return Metalink.Mirror(url: address, priority: priority, location: location)
        }
        guard !mirrors.isEmpty else { throw MetalinkError(.urlCount, "\(name): no URL") }
        // Stable: equal priorities keep the document's order.
        file.urls = mirrors.enumerated().sorted {
            ($0.element.priority ?? 999_999, $0.offset) < ($1.element.priority ?? 999_999, $1.offset)
        }.map(\.element)
        return file
    }

    /// Whole-file hashes of accepted algorithms, strongest first; SHA-1 only when it is the only one.
    private func hashes(_ element: XMLTree, _ name: String) throws(MetalinkError) -> [Metalink.Hash] {
        var found: [String: String] = [:]
        for hash in Self.own(element, "hash") {
            guard let algorithm = Self.algorithm(hash.attributes["type"]) else { continue }
            let hex = try Self.checkedHex(hash.text, algorithm, "\(name): \(algorithm.name) hash")
            if let earlier = found[algorithm.name], earlier != hex {
                throw MetalinkError(.hash, "\(name): two different \(algorithm.name) hashes")
            }
            found[algorithm.name] = hex
        }
        let all = Metalink.algorithms.compactMap { a in found[a.name].map { Metalink.Hash(algorithm: a.name, hex: $0) }
        }
        return all.count > 1 ? all.filter { $0.algorithm != "sha-1" } : all
    }

    /// The strongest `<pieces>` of an accepted algorithm, checked against the size.
    private func pieces(_ element: XMLTree, _ name: String, size: Int64?) throws(MetalinkError) -> Metalink.Pieces? {
        let candidates = Self.own(element, "pieces").compactMap { p in
            Self.algorithm(p.attributes["type"]).map { (p, $0) }
        }
        guard let strongest = candidates.min(by: { Self.rank($0.1.name) < Self.rank($1.1.name) }) else { return nil }
        let (chosen, algorithm) = strongest
        let what = "\(name): \(algorithm.name) pieces"
        guard let lengthText = chosen.attributes["length"].map(Self.trimmed), let length = Int64(lengthText),
            length > 0, length <= Metalink.maxSize
        else {
            throw MetalinkError(.pieces, "\(what): length '\(chosen.attributes["length"] ?? "")' is no number of bytes")
        }
        var hashes: [String] = []
        for hash in Self.own(chosen, "hash") {
            hashes.append(try Self.checkedHex(hash.text, algorithm, "\(what), hash \(hashes.count + 1)"))
        }
        guard !hashes.isEmpty else { throw MetalinkError(.pieces, "\(what): no hash") }
        if let size {
            let count = size / length + (size % length == 0 ? 0 : 1)
            guard count == Int64(hashes.count) else {
                throw MetalinkError(
                    .pieces, "\(what): \(hashes.count) hashes where \(size) bytes in pieces of \(length) need \(count)")
            }
        }
        return Metalink.Pieces(length: length, algorithm: algorithm.name, hashes: hashes)
    }

    /// RFC 5854 §4.1.2.1: a relative path that climbs nowhere; also no empty, `.` or control-character part,
    /// and no `\` (a separator elsewhere), so that the name is a path below the target on any system.
    static func checkedName(_ given: String?) throws(MetalinkError) -> String {
        guard let name = given, !name.isEmpty else { throw MetalinkError(.name, "a <file> without a name") }
        let shown = String(
            name.unicodeScalars.map { $0.value < 0x20 || $0 == "\u{7F}" ? "?" : Character($0) }.prefix(80))
        guard !name.hasPrefix("/") else { throw MetalinkError(.name, "\(shown): an absolute name") }
        guard name.utf8.count <= 4096 else { throw MetalinkError(.name, "\(shown)…: a name over 4096 bytes") }
        for part in name.split(separator: "/", omittingEmptySubsequences: false) {
            if part == ".." { throw MetalinkError(.name, "\(shown): a name that climbs out with '..'") }
            guard !part.isEmpty, part != ".", part.utf8.count <= 255,
                !part.unicodeScalars.contains(where: { $0.value < 0x20 || $0 == "\u{7F}" || $0 == "\\" })
            else { throw MetalinkError(.name, "\(shown): not a plain relative name") }
        }
        return name
    }

    /// Lowercase hex of the algorithm's length, surrounding whitespace aside.
    static func checkedHex(
        _ text: String, _ algorithm: (name: String, hexDigits: Int), _ what: String
    ) throws(MetalinkError) -> String {
        let hex = trimmed(text).lowercased()
        guard hex.utf8.count == algorithm.hexDigits,
            hex.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) })
        else {
            throw MetalinkError(.hash, "\(what) is not \(algorithm.hexDigits) hex digits")
        }
        return hex
    }

    private static func algorithm(_ type: String?) -> (name: String, hexDigits: Int)? {
        guard let type = type.map({ trimmed($0).lowercased() }) else { return nil }
        return Metalink.algorithms.first { $0.name == type }
    }

    private static func rank(_ algorithm: String) -> Int {
        Metalink.algorithms.firstIndex { $0.name == algorithm } ?? Int.max
    }

    /// Children named `name` in Metalink's namespace (extensions in others are ignored, RFC 5854 §6).
    private static func own(_ element: XMLTree, _ name: String) -> [XMLTree] {
        element.children.filter { $0.name == name && $0.namespace == Metalink.namespace }
    }

    /// Without XML's white space (space, tab, CR, LF) around it.
    private static func trimmed(_ text: String) -> String {
        let isSpace = { (b: UInt8) in b == 0x20 || b == 0x09 || b == 0x0A || b == 0x0D }
        let utf8 = Substring(text).utf8
        guard let first = utf8.firstIndex(where: { !isSpace($0) }), let last = utf8.lastIndex(where: { !isSpace($0) })
        else { return "" }
        return String(Substring(utf8[first...last]))
    }

    private static func contains(_ bytes: [UInt8], _ needle: String) -> Bool {
        let pattern = Array(needle.utf8)
        guard bytes.count >= pattern.count else { return false }
        for start in 0...(bytes.count - pattern.count) where bytes[start] == pattern[0] {
            if bytes[start..<start + pattern.count].elementsEqual(pattern) { return true }
        }
        return false
    }
}
