import Synchronization

/// Resumption paths of uploads whose data the server has dropped, so that they answer 404.
///
/// Works around NIOResumableUpload 1.35.2: when an interrupted upload times out, NIO ends the
/// upload's channel but keeps its token, so a HEAD still reports the old offset and the PATCH
/// that follows hangs forever. The static-file handler in front of NIO answers those paths itself.
final class ExpiredUploads: Sendable {
    private struct State {
        var paths: Set<String> = []
        var order: [String] = []
    }

    /// Enough to outlast any client's retries; a path costs well under a hundred bytes.
    private static let capacity = 10_000
    private let state = Mutex(State())

    func insert(_ path: String) {
        state.withLock { state in
            guard state.paths.insert(path).inserted else { return }
            state.order.append(path)
            if state.order.count > Self.capacity {
                state.paths.remove(state.order.removeFirst())
            }
        }
    }

    func contains(_ path: String) -> Bool {
        state.withLock { $0.paths.contains(path) }
    }
}

/// Carries the resumption path of the upload being created on one connection from the `104`
/// that NIO writes to the sink NIO creates right after it.
///
/// NIO does not tell its application which upload a channel belongs to; within one creation
/// request it writes the 104 and then runs the channel configurator, synchronously on the
/// connection's event loop. Should that order ever change, sinks just get no path and the
/// workaround above quietly does nothing.
final class UploadCreationPath {
    private var path: String?
    private let prefix: String

    init(prefix: String) {
        self.prefix = prefix
    }

    /// Records the `Location` of a 104 (a path; an absolute URL is cut down to its path).
    func record(location: String) {
        path = location.range(of: prefix).map { String(location[$0.lowerBound...]) }
    }

    /// The path recorded since the last call, if any.
    func take() -> String? {
        defer { path = nil }
        return path
    }
}
