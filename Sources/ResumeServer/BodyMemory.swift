import Synchronization

/// The request bodies a server's uploads hold in memory on their way to the disk, against one budget.
///
/// Each upload holds at most its own high-water mark, and reads more only while the server as a whole
/// holds less than ``limit``, or when it holds none of its own (so that every upload goes on, one read
/// at a time). Without it, memory grew with the uploads in progress while the disk was the slower side:
/// 100 uploads at 4 MiB each, a peak RSS of 378 MiB (`make soak-serve`).
final class BodyMemory: Sendable {
    /// What a server's uploads hold at most, beyond one read each.
    static let defaultLimit = 32 << 20

    let limit: Int
    private let held = Atomic<Int>(0)

    init(limit: Int = BodyMemory.defaultLimit) {
        self.limit = limit
    }

    /// Bytes held now, by every upload of the server.
    var bytes: Int { held.load(ordering: .relaxed) }

    /// Whether an upload that already holds `own` bytes may read more.
    func allows(own: Int) -> Bool {
        own == 0 || bytes < limit
    }

    func take(_ count: Int) {
        held.add(count, ordering: .relaxed)
    }

    func give(_ count: Int) {
        held.subtract(count, ordering: .relaxed)
    }
}
