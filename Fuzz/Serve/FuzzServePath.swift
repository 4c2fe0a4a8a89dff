/// Built by the Makefile with swiftc and -parse-as-library: libFuzzer's own `main` drives it.
/// `serve`'s request-target decoder (SafePath, compiled in from Sources/ResumeServer). Property, by bytes as
/// the kernel reads a path: the decoded components are at most `SafePath.maxDepth`, none empty, none holding
/// a `/` or NUL byte, none starting with a `.` byte (so no `.`, `..` or hidden name, whatever follows the
/// dot); joined to a root they stay below it.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzServePath(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let target = text(data, size)
    guard let components = try? SafePath.components(ofTarget: target) else { return 0 }
    require(components.count <= SafePath.maxDepth, "\(components.count) components of \(target)")
    for c in components {
        let bytes = Array(c.utf8)
        require(bytes.first.map { $0 != UInt8(ascii: ".") } == true, "empty or dot component '\(c)' of \(target)")
        require(!bytes.contains(UInt8(ascii: "/")) && !bytes.contains(0), "component with a slash or NUL of \(target)")
        require(SafePath.isPlainName(c), "component '\(c)' of \(target) is not a plain name")
    }
    let root = "/srv/root"
    let joined = SafePath.join(root, components)
    require(joined == root || joined.utf8.starts(with: (root + "/").utf8), "\(target) joins to \(joined)")
    require(SafePath.relativePath(of: joined, inside: root) != nil, "\(joined) is not inside \(root)")
    return 0
}
