import CLibXML2
import ResumeKit

/// The links of a folder listing page, read with libxml2's HTML parser (as a browser would read a page
/// that is not well-formed), never with patterns over the text.
public struct HTMLLinks: HTMLLinkReader {
    public init() {}

    public func links(_ html: [UInt8]) -> [(href: String, after: String)]? {
        guard !html.isEmpty, html.count < Int(Int32.max) else { return html.isEmpty ? [] : nil }
        // No network, no entities fetched, no error output: a listing cannot make the parser do anything.
        let options = Int32(
            HTML_PARSE_NONET.rawValue | HTML_PARSE_NOERROR.rawValue | HTML_PARSE_NOWARNING.rawValue
                | HTML_PARSE_RECOVER.rawValue)
        let document = html.withUnsafeBufferPointer { buffer in
            buffer.baseAddress!.withMemoryRebound(to: CChar.self, capacity: buffer.count) {
                htmlReadMemory($0, Int32(buffer.count), nil, "UTF-8", options)
            }
        }
        guard let document else { return nil }
        defer { xmlFreeDoc(document) }
        var found: [(href: String, after: String)] = []
        var node = xmlDocGetRootElement(document)
        // Depth-first in document order, without recursion: a page of deeply nested elements cannot exhaust the stack.
        while let current = node {
            if current.pointee.type == XML_ELEMENT_NODE, Self.name(current) == "a",
                let href = Self.attribute(current, "href")
            {
                found.append((href, ""))
            } else if current.pointee.type == XML_TEXT_NODE, !found.isEmpty, let text = current.pointee.content,
                !Self.inside(current, "a")
            {
                found[found.count - 1].after += String(cString: text) + " "
            }
            if let child = current.pointee.children, current.pointee.type == XML_ELEMENT_NODE {
                node = child
                continue
            }
            var up: xmlNodePtr? = current
            while let at = up, at.pointee.next == nil {
                up = at.pointee.parent.flatMap { $0.pointee.type == XML_ELEMENT_NODE ? $0 : nil }
            }
            node = up?.pointee.next
        }
        return found
    }

    private static func name(_ node: xmlNodePtr) -> String {
        node.pointee.name.map { String(cString: $0).lowercased() } ?? ""
    }

    /// An attribute's text, read from the tree in place (nothing allocated to free).
    private static func attribute(_ node: xmlNodePtr, _ wanted: String) -> String? {
        var attribute = node.pointee.properties
        while let a = attribute {
            if a.pointee.name.map({ String(cString: $0).lowercased() }) == wanted {
                var text = ""
                var child = a.pointee.children
                while let c = child {
                    if let content = c.pointee.content { text += String(cString: content) }
                    child = c.pointee.next
                }
                return text
            }
            attribute = a.pointee.next
        }
        return nil
    }

    private static func inside(_ node: xmlNodePtr, _ element: String) -> Bool {
        var at = node.pointee.parent
        while let p = at, p.pointee.type == XML_ELEMENT_NODE {
            if name(p) == element { return true }
            at = p.pointee.parent
        }
        return false
    }
}
