import ArgumentParser

/// A size on the command line: bytes, or a number with a suffix, `K`/`M`/`G`/`T` (powers of 1024,
/// as curl's `--max-filesize` and nginx's `client_max_body_size` read them), optionally `iB` or `B`.
struct ByteSize: ExpressibleByArgument, Sendable, Equatable {
    let bytes: Int64

    init?(argument: String) {
        var text = Substring(argument.filter { $0 != " " }.uppercased())
        if text.hasSuffix("IB") { text = text.dropLast(2) } else if text.hasSuffix("B") { text = text.dropLast() }
        var multiplier: Int64 = 1
        if let last = text.last, let power = "KMGT".firstIndex(of: last) {
            multiplier = Int64(1) << (10 * ("KMGT".distance(from: "KMGT".startIndex, to: power) + 1))
            text = text.dropLast()
        }
        guard let value = Double(text), value.isFinite, value >= 0,
            value * Double(multiplier) < Double(Int64.max)
        else { return nil }
        bytes = Int64(value * Double(multiplier))
    }

    static var defaultCompletionKind: CompletionKind { .default }
}
