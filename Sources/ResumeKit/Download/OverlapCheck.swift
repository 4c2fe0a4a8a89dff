import Glibc

/// The one check of resumed bytes: the answer's first bytes (up to ``DownloadStateMachine/overlap`` already
/// held) must equal the ones held before any new byte is kept (validators can lie; the bytes cannot).
struct OverlapCheck {
    /// The bytes held, as they must come back.
    private let held: [UInt8]
    /// Where `held` starts in the file.
    private let from: Int64
    private var matched = 0

    static let none = OverlapCheck(held: [], from: 0)

    init(held: [UInt8], from: Int64) {
        self.held = held
        self.from = from
    }

    /// How the body's next piece went.
    enum Step {
        /// The piece matched, with what follows the overlap (empty while some is still to compare).
        case matched(rest: UnsafeRawBufferPointer)
        /// The bytes differ at this offset of the file: it changed, whatever its validator says.
        case differs(at: Int64)
    }

    /// True once every held byte came back the same (or there was nothing to compare).
    var isComplete: Bool { matched == held.count }

    /// Compares the next piece of the body with the held bytes not yet matched.
    mutating func consume(_ body: UnsafeRawBufferPointer) -> Step {
        guard !isComplete, !body.isEmpty else { return .matched(rest: body) }
        let take = min(body.count, held.count - matched)
        let same = held.withUnsafeBytes { memcmp($0.baseAddress! + matched, body.baseAddress!, take) == 0 }
        guard same else {
            let first = (0..<take).first { held[matched + $0] != body[$0] } ?? 0
            return .differs(at: from + Int64(matched + first))
        }
        matched += take
        return .matched(rest: UnsafeRawBufferPointer(rebasing: body[take...]))
    }
}
