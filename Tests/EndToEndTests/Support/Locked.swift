import Foundation

/// A value behind a lock, shareable between NIO event loops, plain threads and tasks.
///
/// A class (not `Mutex` itself) so that escaping closures on threads and channel handlers can capture it.
final class Locked<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) { self.value = value }

    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }

    var current: Value { withLock { $0 } }
}
