import FuzzCheck
@testable import ResumeKit

/// The `-i LIST` file. Properties: every entry is an http(s) URL that passes the command line's own check,
/// its name is a plain file name, and each line is an entry, a problem, a repeat or skipped — never two.
func fuzzDownloadList(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = text(data, size)
    let list = DownloadList(parsing: input)
    let lineCount = input.utf8.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).count
    var lines = Set<Int>()
    for entry in list.entries {
        require((try? URLCheck.validate(entry.url)) != nil, "entry \(entry.url) is not a valid URL")
        if let name = entry.name { require(!name.contains("/") && name != "." && name != "..", "name \(name)") }
        require(lines.insert(entry.line).inserted, "line \(entry.line) twice")
    }
    for line in list.problems.map(\.line) + list.duplicates { require(lines.insert(line).inserted, "line \(line) twice") }
    require(lines.allSatisfy { (1...lineCount).contains($0) }, "a line number outside the file")
    return 0
}

fuzz { data, size in data.map { fuzzDownloadList($0, size) } ?? 0 }
