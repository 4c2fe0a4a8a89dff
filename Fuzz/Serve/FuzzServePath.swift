/// Built by the Makefile with swiftc and -parse-as-library: libFuzzer's own `main` drives it.
/// `serve`'s request-target decoder (SafePath, compiled in from Sources/ResumeServer). Property: the decoded
/// components never name `.`, `..` or a hidden file, hold no `/` or NUL, and joined to a root stay below it.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzServePath(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let target = text(data, size)
    guard let components = try? SafePath.components(ofTarget: target) else { return 0 }
    for c in components {
        require(!c.isEmpty && c != "." && c != ".." && !c.hasPrefix("."), "component '\(c)' of \(target)")
        require(!c.contains("/") && !c.utf8.contains(0), "component with a slash or NUL of \(target)")
    }
    let root = "/srv/root"
    let joined = SafePath.join(root, components)
    require(joined == root || joined.hasPrefix(root + "/"), "\(target) joins to \(joined)")
    require(SafePath.relativePath(of: joined, inside: root) != nil, "\(joined) is not inside \(root)")
    return 0
}
