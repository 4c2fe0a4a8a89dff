import CLibXML2

/// An XML document as a small tree, read with libxml2's streaming reader. S3 answers are a few kilobytes, so a
/// tree is simpler for every result type than reading each as a stream. libxml2 directly rather than Foundation's
/// XMLParser (libxml2 again, beneath Foundation and ICU): the whole of Foundation would cost `resumectl`
/// about 5 MiB of resident memory for four small documents per upload.
struct XMLTree: Equatable {
    var name: String
    var text: String
    var children: [XMLTree]
    /// By local name (namespace prefixes ignored); the first of a name wins.
    var attributes: [String: String] = [:]
    /// The element's namespace URI, nil when it has none.
    var namespace: String?

    /// The first child named `name` (namespace prefixes ignored).
    func child(_ name: String) -> XMLTree? { children.first { $0.name == name } }

    func children(_ name: String) -> [XMLTree] { children.filter { $0.name == name } }

    /// The text of the first child named `name`.
    subscript(_ name: String) -> String? { child(name)?.text }

    /// Parses `bytes`; nil when they are not well-formed XML. No network access and no entity
    /// substitution: an answer cannot make the parser fetch or expand anything.
    /// - Parameter strict: also nil for a document with a document type declaration, and the bytes are read
    ///   as UTF-8 whatever the document declares (so that a byte scan for `<!DOCTYPE` sees what the parser
    ///   sees): for documents that have no use for either (Metalink).
    static func parse(_ bytes: [UInt8], strict: Bool = false) -> XMLTree? {
        if case .tree(let tree) = read(bytes, strict: strict) { return tree }
        return nil
    }

    enum Reading: Equatable {
        case tree(XMLTree)
        case malformed
        /// An element had more children of this name than allowed; its own attributes come with it.
        case tooMany(String, in: [String: String])
    }

    /// Reads `bytes` as ``parse(_:strict:)`` does, with libxml2's streaming reader: what is kept is the tree
    /// being built, never a document of libxml2's beside it.
    /// - Parameter most: the most children of a name one element may have (`["url": 1000]`): one more stops the
    ///   reading there, so that a hostile document costs no more memory than that many.
    static func read(_ bytes: [UInt8], strict: Bool = false, most: [String: Int] = [:]) -> Reading {
        guard !bytes.isEmpty, bytes.count < Int(Int32.max) else { return .malformed }
        let options = Int32(XML_PARSE_NONET.rawValue | XML_PARSE_NOERROR.rawValue | XML_PARSE_NOWARNING.rawValue)
        let opened = bytes.withUnsafeBufferPointer { buffer in
            buffer.baseAddress!.withMemoryRebound(to: CChar.self, capacity: buffer.count) {
                xmlReaderForMemory($0, Int32(buffer.count), nil, strict ? "UTF-8" : nil, options)
            }
        }
        guard let reader = opened else { return .malformed }
        defer { xmlFreeTextReader(reader) }
        // The elements whose end is still to come, outermost first, each with its count of children by the
        // names `most` limits.
        var open: [(element: XMLTree, counts: [String: Int])] = []
        var root: XMLTree?
        func close(_ element: XMLTree) -> Reading? {
            guard !open.isEmpty else {
                root = element
                return nil
            }
            let parent = open.count - 1
            open[parent].element.children.append(element)
            guard let limit = most[element.name] else { return nil }
            open[parent].counts[element.name, default: 0] += 1
            guard open[parent].counts[element.name]! > limit else { return nil }
            return .tooMany(element.name, in: open[parent].element.attributes)
        }
        while true {
            let step = xmlTextReaderRead(reader)  // 1: a node, 0: the document's end, -1: an error
            guard step == 1 else {
                guard step == 0, open.isEmpty, let root else { return .malformed }
                return .tree(root)
            }
            switch xmlReaderTypes(rawValue: UInt32(bitPattern: xmlTextReaderNodeType(reader))) {
            case XML_READER_TYPE_ELEMENT:
                let empty = xmlTextReaderIsEmptyElement(reader) == 1
                var element = XMLTree(name: string(xmlTextReaderConstLocalName(reader)), text: "", children: [])
                element.namespace = xmlTextReaderConstNamespaceUri(reader).map { String(cString: $0) }
                while xmlTextReaderMoveToNextAttribute(reader) == 1 {
                    guard xmlTextReaderIsNamespaceDecl(reader) != 1 else { continue }
                    let name = string(xmlTextReaderConstLocalName(reader))
                    if element.attributes[name] == nil {
                        element.attributes[name] = string(xmlTextReaderConstValue(reader))
                    }
                }
                if !empty {
                    open.append((element, [:]))
                } else if let refused = close(element) {
                    return refused
                }
            case XML_READER_TYPE_END_ELEMENT:
                guard let (element, _) = open.popLast() else { return .malformed }
                if let refused = close(element) { return refused }
            case XML_READER_TYPE_TEXT, XML_READER_TYPE_CDATA, XML_READER_TYPE_WHITESPACE,
                XML_READER_TYPE_SIGNIFICANT_WHITESPACE:
                if !open.isEmpty { open[open.count - 1].element.text += string(xmlTextReaderConstValue(reader)) }
            case XML_READER_TYPE_DOCUMENT_TYPE where strict:
                return .malformed
            default:
                break
            }
        }
    }

    private static func string(_ text: UnsafePointer<xmlChar>?) -> String {
        guard let text else { return "" }
        return String(cString: text)
    }
}
