import CLibXML2

/// An XML document as a small tree, read with libxml2's parser. S3 answers are a few kilobytes, so a tree
/// is simpler than a streaming reader for every result type. libxml2 directly rather than Foundation's
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
        guard !bytes.isEmpty, bytes.count < Int(Int32.max) else { return nil }
        let options = Int32(XML_PARSE_NONET.rawValue | XML_PARSE_NOERROR.rawValue | XML_PARSE_NOWARNING.rawValue)
        let document = bytes.withUnsafeBufferPointer { buffer in
            buffer.baseAddress!.withMemoryRebound(to: CChar.self, capacity: buffer.count) {
                strict
                    ? xmlReadMemory($0, Int32(buffer.count), nil, "UTF-8", options)
                    : xmlReadMemory($0, Int32(buffer.count), nil, nil, options)
            }
        }
        guard let document else { return nil }
        defer { xmlFreeDoc(document) }
        if strict, document.pointee.intSubset != nil || document.pointee.extSubset != nil { return nil }
        guard let root = xmlDocGetRootElement(document) else { return nil }
        return tree(root)
    }

    private static func tree(_ node: xmlNodePtr) -> XMLTree {
        var result = XMLTree(name: string(node.pointee.name), text: "", children: [])
        if let ns = node.pointee.ns { result.namespace = string(ns.pointee.href) }
        var attribute = node.pointee.properties
        while let current = attribute {
            let name = string(current.pointee.name)
            if result.attributes[name] == nil { result.attributes[name] = text(current.pointee.children) }
            attribute = current.pointee.next
        }
        var child = node.pointee.children
        while let current = child {
            switch current.pointee.type {
            case XML_ELEMENT_NODE: result.children.append(tree(current))
            case XML_TEXT_NODE, XML_CDATA_SECTION_NODE: result.text += string(current.pointee.content)
            default: break
            }
            child = current.pointee.next
        }
        return result
    }

    /// The text of an attribute's value nodes.
    private static func text(_ first: xmlNodePtr?) -> String {
        var result = ""
        var node = first
        while let current = node {
            if current.pointee.type == XML_TEXT_NODE { result += string(current.pointee.content) }
            node = current.pointee.next
        }
        return result
    }

    private static func string(_ text: UnsafePointer<xmlChar>?) -> String {
        guard let text else { return "" }
        return String(cString: text)
    }
}
