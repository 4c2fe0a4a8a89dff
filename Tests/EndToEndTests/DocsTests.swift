import Foundation
import Testing

/// README.md and docs/*.md checked against the tree and the built binary (issue 45): every relative link
/// (and its `#anchor`) leads somewhere, every `resumectl …` line of a code block names a subcommand and long
/// options that `resumectl help SUBCOMMAND` (or `resumectl SUBCOMMAND --help`) lists, the README's exit statuses are
/// `resumectl --help`'s, and
/// the trace in docs/architecture.md names files under Sources/, what they declare and the types they use.
@Suite struct DocsTests {
    /// The package's root: this file is Tests/EndToEndTests/DocsTests.swift.
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// README.md and every docs/*.md, by their path from the root.
    static func pages() throws -> [(path: String, text: String)] {
        let docs = try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent("docs").path)
            .filter { $0.hasSuffix(".md") }.sorted().map { "docs/" + $0 }
        return try (["README.md"] + docs).map { path in
            (path, try String(contentsOf: root.appendingPathComponent(path), encoding: .utf8))
        }
    }

    @Test func relativeLinksLeadSomewhere() throws {
        var broken: [String] = []
        for page in try Self.pages() {
            let folder = Self.root.appendingPathComponent(page.path).deletingLastPathComponent()
            for (line, target) in Markdown.links(in: page.text) {
                if target.contains("://") || target.hasPrefix("mailto:") { continue }
                let parts = target.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)
                let file = String(parts[0]), anchor = parts.count > 1 ? String(parts[1]) : nil
                let resolved =
                    file.isEmpty
                    ? Self.root.appendingPathComponent(page.path)
                    : folder.appendingPathComponent(file).standardizedFileURL
                guard FileManager.default.fileExists(atPath: resolved.path) else {
                    broken.append("\(page.path):\(line): \(target): no file \(resolved.path)")
                    continue
                }
                if let anchor, resolved.pathExtension == "md" {
                    let text = try String(contentsOf: resolved, encoding: .utf8)
                    if !Markdown.anchors(in: text).contains(anchor) {
                        broken.append("\(page.path):\(line): \(target): no heading with the anchor #\(anchor)")
                    }
                }
            }
        }
        #expect(broken.isEmpty, "links that lead nowhere:\n\(broken.joined(separator: "\n"))")
    }

    @Test(.enabled(if: resumectlIsBuilt)) func commandLinesNameRealOptions() async throws {
        let top = try await Self.help([])
        let subcommands = Set(Self.subcommands(inHelp: top))
        #expect(subcommands.contains("download") && subcommands.contains("serve"), "\(top)")
        var helps: [String: String] = [:]
        var wrong: [String] = []
        var checked = 0
        for page in try Self.pages() {
            for (number, line) in Markdown.codeLines(in: page.text) {
                for command in Self.commands(in: line) {
                    checked += 1
                    let words = command.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
                    var help = top
                    if let sub = words.dropFirst().first, !sub.hasPrefix("-") {
                        guard subcommands.contains(sub) else {
                            wrong.append("\(page.path):\(number): no subcommand \(sub): \(line)")
                            continue
                        }
                        // `resumectl help serve` defers to `resumectl serve --help` (resumectl-serve's own options):
                        // an option counts when either lists it.
                        if helps[sub] == nil {
                            helps[sub] = try await Self.help(["help", sub]) + Self.help([sub, "--help"])
                        }
                        help = helps[sub]!
                    }
                    for option in Self.longOptions(in: command) where !Self.lists(help, option) {
                        wrong.append(
                            "\(page.path):\(number): \(option) is not in `resumectl help "
                                + "\(words.dropFirst().first ?? "")`: \(line)"
                        )
                    }
                }
            }
        }
        #expect(checked > 40, "only \(checked) command lines found")
        #expect(wrong.isEmpty, "command lines the binary does not know:\n\(wrong.joined(separator: "\n"))")
    }

    @Test(.enabled(if: resumectlIsBuilt)) func exitStatusesAreTheHelps() async throws {
        let readme = try String(contentsOf: Self.root.appendingPathComponent("README.md"), encoding: .utf8)
        let section =
            readme.components(separatedBy: "\n## Exit status\n").dropFirst().first?
            .components(separatedBy: "\n## ").first ?? ""
        let documented = Set(
            section.split(separator: "\n").compactMap { row -> Int? in
                guard row.hasPrefix("|") else { return nil }
                return Int(
                    row.split(separator: "|", omittingEmptySubsequences: false)[1].trimmingCharacters(in: .whitespaces))
            })
        let help = try await Self.help([])
        // The lines under EXIT STATUS: that start with a number, up to the first that does not.
        var told = Set<Int>()
        for line in (help.components(separatedBy: "EXIT STATUS:").dropFirst().first ?? "").split(separator: "\n") {
            guard let status = line.split(separator: " ").first.flatMap({ Int($0) }) else { break }
            told.insert(status)
        }
        #expect(!documented.isEmpty, "no exit status table under '## Exit status' in README.md")
        #expect(!told.isEmpty, "no exit statuses in resumectl --help:\n\(help)")
        #expect(documented == told, "README: \(documented.sorted()), resumectl --help: \(told.sorted())")
    }

    /// ArgumentParser wraps paragraphs to the terminal but prints a usage line whole: a long one is shortened
    /// in the command's configuration.
    @Test(.enabled(if: resumectlIsBuilt)) func helpFitsEightyColumns() async throws {
        let top = try await runProcess(resumectlBinary, ["--help"], environment: ["COLUMNS": "80"]).stdout
        for name in [""] + Self.subcommands(inHelp: top) {
            let r = try await runProcess(
                resumectlBinary, name.isEmpty ? ["--help"] : ["help", name], environment: ["COLUMNS": "80"])
            let wide = r.stdout.split(separator: "\n").filter { $0.count > 80 }
            #expect(r.status == 0 && wide.isEmpty, "resumectl help \(name): \(wide)")
        }
    }

    /// Each trace line: a file under Sources/, the names it declares that the trace passes through (up to the
    /// first colon), then prose; a word of it that Sources/ declares as a type, or that looks like one (capitalised
    /// words run together), must be a type that file uses.
    @Test func traceFollowsTheCode() throws {
        let text = try String(contentsOf: Self.root.appendingPathComponent("docs/architecture.md"), encoding: .utf8)
        let afterHeading = text.components(separatedBy: "\n## Trace of a retried download\n").dropFirst().first
        let block = afterHeading?.components(separatedBy: "```").dropFirst().first ?? ""
        let lines = block.split(separator: "\n").map(String.init)
        #expect(lines.count >= 5, "no trace block under '## Trace of a retried download' in docs/architecture.md")
        let sources = try Self.swiftSources()
        for line in lines {
            let path = String(line.prefix { $0 != " " })
            #expect(path.hasPrefix("Sources/"), "a trace line starts with \(path), not a path under Sources/")
            guard let code = sources[path] else {
                Issue.record("docs/architecture.md's trace names \(path), which does not exist")
                continue
            }
            let rest = line.dropFirst(path.count)
            guard let colon = rest.range(of: ": ") else {
                Issue.record("trace line of \(path) names nothing before a colon")
                continue
            }
            let names = rest[..<colon.lowerBound].split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            #expect(!names.isEmpty, "trace line of \(path) names nothing before a colon")
            for name in names where !Self.declares(code, name) {
                Issue.record("docs/architecture.md's trace: \(path) declares no \(name)")
            }
            for word in Self.matches(#"\b[A-Z][A-Za-z0-9]+\b"#, in: String(rest[colon.upperBound...])) {
                let declared = sources.values.contains { Self.declaresType($0, word) }
                guard declared || !Self.matches(#"^[A-Z][a-z0-9]+[A-Z]"#, in: word).isEmpty else { continue }
                let used = !Self.matches(#"\b\#(word)\b"#, in: code).isEmpty
                #expect(declared, "docs/architecture.md's trace: no type \(word) under Sources/")
                #expect(used, "docs/architecture.md's trace: \(path) does not use \(word)")
            }
        }
    }

    /// Every .swift file under Sources/, by its path from the root.
    static func swiftSources() throws -> [String: String] {
        var files: [String: String] = [:]
        let sources = root.appendingPathComponent("Sources")
        guard let walk = FileManager.default.enumerator(atPath: sources.path) else { return [:] }
        for case let relative as String in walk where relative.hasSuffix(".swift") {
            files["Sources/" + relative] = try String(
                contentsOf: sources.appendingPathComponent(relative), encoding: .utf8)
        }
        return files
    }

    static func declares(_ code: String, _ name: String) -> Bool {
        let keyword = "func|var|let|case|init|class|struct|enum|protocol|actor|typealias"
        return !matches(#"\b(\#(keyword))\s+\#(NSRegularExpression.escapedPattern(for: name))\b"#, in: code).isEmpty
    }

    static func declaresType(_ code: String, _ name: String) -> Bool {
        !matches(#"\b(class|struct|enum|protocol|actor|typealias)\s+\#(name)\b"#, in: code).isEmpty
    }

    static func matches(_ pattern: String, in text: String) -> [String] {
        let regex = try! NSRegularExpression(pattern: pattern)
        return regex.matches(in: text, range: NSRange(text.startIndex..., in: text)).compactMap {
            Range($0.range, in: text).map { String(text[$0]) }
        }
    }

    // MARK: - reading help and command lines

    static func help(_ arguments: [String]) async throws -> String {
        let r = try await runProcess(resumectlBinary, arguments, environment: ["COLUMNS": "1000"])
        #expect(r.status == 0, "resumectl \(arguments.joined(separator: " ")): \(r.stderr)")
        return r.stdout
    }

    /// The names under SUBCOMMANDS in `resumectl --help`.
    static func subcommands(inHelp help: String) -> [String] {
        let section = help.components(separatedBy: "SUBCOMMANDS:").dropFirst().first ?? ""
        var names: [String] = []
        for line in section.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.isEmpty, !names.isEmpty { break }
            guard line.hasPrefix("  "), let word = line.split(separator: " ").first, !word.hasPrefix("-") else {
                continue
            }
            names.append(String(word))
        }
        return names
    }

    /// The commands of a code line that start with `resumectl ` (also after `|`, `&&`, `;` or `$(`), without a
    /// trailing `# comment`.
    static func commands(in line: String) -> [String] {
        var text = line
        if let comment = text.range(of: #"(^|\s)#"#, options: .regularExpression) {
            text = String(text[..<comment.lowerBound])
        }
        return text.replacingOccurrences(of: "$(", with: "|").replacingOccurrences(of: "&&", with: "|")
            .replacingOccurrences(of: ";", with: "|")
            .split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { $0.hasPrefix("resumectl ") }
    }

    static func longOptions(in command: String) -> [String] {
        let regex = try! NSRegularExpression(pattern: #"(?<![\w-])--[A-Za-z0-9][A-Za-z0-9.-]*[A-Za-z0-9]"#)
        let range = NSRange(command.startIndex..., in: command)
        return regex.matches(in: command, range: range).compactMap {
            Range($0.range, in: command).map { String(command[$0]) }
        }
    }

    /// Whether the help lists the option as a whole word (`--http1` is not `--http1.1`).
    static func lists(_ help: String, _ option: String) -> Bool {
        let escaped = NSRegularExpression.escapedPattern(for: option)
        return help.range(of: #"(?<![\w-])"# + escaped + #"(?![\w.-])"#, options: .regularExpression) != nil
    }
}

/// Just enough of Markdown for the checks: fenced code blocks, links outside code, GitHub's heading anchors.
enum Markdown {
    /// The lines inside fenced code blocks, with their line numbers.
    static func codeLines(in text: String) -> [(Int, String)] {
        var inside = false
        var lines: [(Int, String)] = []
        for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            if line.hasPrefix("```") { inside.toggle(); continue }
            if inside { lines.append((index + 1, String(line))) }
        }
        return lines
    }

    /// `[text](target)` links outside code blocks and code spans, with their line numbers.
    static func links(in text: String) -> [(Int, String)] {
        let regex = try! NSRegularExpression(pattern: #"\]\(([^)\s]+)(\s+"[^"]*")?\)"#)
        var inside = false
        var found: [(Int, String)] = []
        for (index, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            if raw.hasPrefix("```") { inside.toggle(); continue }
            if inside { continue }
            let line = String(raw).replacingOccurrences(of: #"`[^`]*`"#, with: "``", options: .regularExpression)
            for match in regex.matches(in: line, range: NSRange(line.startIndex..., in: line)) {
                if let range = Range(match.range(at: 1), in: line) { found.append((index + 1, String(line[range]))) }
            }
        }
        return found
    }

    /// The anchors GitHub gives the headings of a page: lower case, punctuation dropped, spaces as hyphens, a
    /// repeated anchor numbered (`-1`, `-2`).
    static func anchors(in text: String) -> Set<String> {
        var seen: [String: Int] = [:]
        var anchors = Set<String>()
        for (_, line) in codeLinesRemoved(text) where line.hasPrefix("#") {
            let title = line.drop(while: { $0 == "#" }).trimmingCharacters(in: .whitespaces)
            let plain = title.replacingOccurrences(
                of: #"\[([^\]]*)\]\([^)]*\)"#, with: "$1", options: .regularExpression)
            let slug = String(
                plain.lowercased().compactMap { c -> Character? in
                    if c == " " { return "-" }
                    return c.isLetter || c.isNumber || c == "-" || c == "_" ? c : nil
                })
            let count = seen[slug, default: 0]
            seen[slug] = count + 1
            anchors.insert(count == 0 ? slug : "\(slug)-\(count)")
        }
        return anchors
    }

    private static func codeLinesRemoved(_ text: String) -> [(Int, String)] {
        var inside = false
        var lines: [(Int, String)] = []
        for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            if line.hasPrefix("```") { inside.toggle(); continue }
            if !inside { lines.append((index + 1, String(line))) }
        }
        return lines
    }
}
