import Glibc

extension Jobs {
    /// Waits until every transfer in `ids` has ended, or `timeout` seconds passed, looking at the state
    /// folder ten times a second. `ended` hears of each once: with its state, or nil when nothing knows the id.
    /// - Returns: the ids still running when the time ran out (empty when all ended).
    public static func wait(
        _ ids: [String], store: TokenStore, timeout: Double?, ended: (String, TransferState?) -> Void
    ) async -> [String] {
        let deadline = timeout.map { Monotonic.now + $0 }
        var left = ids.reduce(into: [String]()) { if !$0.contains($1) { $0.append($1) } }
        while true {
            left = left.filter { id in
                let state = TransferState(id: id, store: store)
                if state?.isRunning == true { return true }
                ended(id, state)
                return false
            }
            if left.isEmpty { return [] }
            if let deadline, Monotonic.now >= deadline { return left }
            try? await Task.sleep(for: .milliseconds(100))
        }
    }

    /// Copies what the log `fd` holds, then, while transfer `id` runs, what is appended to it, until the
    /// transfer ends (`log --follow`).
    public static func follow(_ fd: Int32, id: String, store: TokenStore, until follow: Bool, _ write: (String) -> Void)
        async
    {
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        func drain() {
            while true {
                let n = uninterrupted { read(fd, &buffer, buffer.count) }
                if n <= 0 { return }
                write(String(decoding: buffer[0..<n], as: UTF8.self))
            }
        }
        drain()
        guard follow else { return }
        // The background `resume --all` pool has no token: it is live while its lock-less status says so.
        while TransferState(id: id, store: store)?.isRunning == true {
            try? await Task.sleep(for: .milliseconds(200))
            drain()
        }
        drain()
    }
}
