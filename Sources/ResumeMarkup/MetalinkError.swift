/// Why a Metalink document is refused: one line, naming the file when the fault is in one.
public struct MetalinkError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// Over ``Metalink/maxBytes``.
        case tooLarge
        /// Not well-formed XML (or not UTF-8).
        case notXML
        /// A document type declaration: the door to entity expansion and external entities.
        case doctype
        /// Another root or namespace (Metalink 3 among them).
        case notMetalink
        /// No `<file>`, or more than ``Metalink/maxFiles``.
        case fileCount
        /// A name that is absolute, climbs with `..`, is empty, holds a NUL or control character, or is
        /// given to two files.
        case name
        /// A size that is not a number, is negative or is over ``Metalink/maxSize``.
        case size
        /// No `<url>`, or more than ``Metalink/maxURLs``.
        case urlCount
        /// A hash that is not hex of its algorithm's length, or two different ones of one algorithm.
        case hash
        /// Pieces of no length, of malformed hashes, or not as many as the size needs.
        case pieces
        /// Neither a whole-file hash nor piece hashes (only with `requireHashes`).
        case noHash
    }

    public var kind: Kind
    public var description: String

    public init(_ kind: Kind, _ description: String) {
        self.kind = kind
        self.description = description
    }
}
