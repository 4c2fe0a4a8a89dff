import Foundation
import FoundationXML

/// An XML document as a small tree, read with Foundation's XMLParser (libxml2). S3 answers are a few
/// kilobytes, so a tree is simpler than a streaming reader for every result type.
struct XMLTree: Equatable {
    var name: String
    var text: String
    var children: [XMLTree]

    /// The first child named `name` (namespace prefixes ignored).
    func child(_ name: String) -> XMLTree? { children.first { $0.name == name } }

    func children(_ name: String) -> [XMLTree] { children.filter { $0.name == name } }

    /// The text of the first child named `name`.
    subscript(_ name: String) -> String? { child(name)?.text }

    /// Parses `data`; nil when it is not well-formed XML.
    static func parse(_ data: Data) -> XMLTree? {
        let parser = XMLParser(data: data)
        let builder = Builder()
        parser.delegate = builder
        parser.shouldProcessNamespaces = true
        guard parser.parse(), let root = builder.root else { return nil }
        return root
    }

    private final class Builder: NSObject, XMLParserDelegate {
        var stack: [XMLTree] = []
        var root: XMLTree?

        func parser(_ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?, qualifiedName: String?,
            attributes: [String: String] = [:])
        {
            stack.append(XMLTree(name: elementName, text: "", children: []))
        }

        func parser(_ parser: XMLParser, foundCharacters string: String) {
            guard !stack.isEmpty else { return }
            stack[stack.count - 1].text += string
        }

        func parser(_ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?, qualifiedName: String?) {
            guard let done = stack.popLast() else { return }
            if stack.isEmpty { root = done } else { stack[stack.count - 1].children.append(done) }
        }
    }
}
