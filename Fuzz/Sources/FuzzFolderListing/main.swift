import FuzzCheck
@testable import ResumeKit
import ResumeMarkup

/// A folder listing (JSON, else HTML through libxml2) walked from one page. Properties: every file's URL is
/// under the folder's, its relative path is made of plain names (none empty, `.` or `..`, no `/`, `\` or NUL
/// within one), no path twice, and no more files than the limit.
func fuzzFolderListing(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let root = "http://h.test/pub/"
    let page = bytes(data, size)
    guard let walk = try? FolderWalk(root: root, depth: 1, include: [], exclude: [], html: HTMLLinks(), read: { url throws(TransferError) in
        (url == root ? page : Array("[]".utf8), nil)
    }) else { return 0 }
    var seen = Set<String>()
    for file in walk.files {
        require(file.url.hasPrefix(root), "\(file.url) is not under \(root)")
        require(seen.insert(file.relative).inserted, "\(file.relative) twice")
        for name in file.relative.split(separator: "/", omittingEmptySubsequences: false) {
            require(!name.isEmpty && name != "." && name != ".." && !name.contains("\\") && !name.contains("\0"), "name '\(name)' in \(file.relative)")
        }
    }
    require(walk.files.count <= FolderWalk.maxFiles, "\(walk.files.count) files")
    return 0
}

fuzz { data, size in data.map { fuzzFolderListing($0, size) } ?? 0 }
