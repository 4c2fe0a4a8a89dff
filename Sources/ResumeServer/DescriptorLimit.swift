import Glibc

/// The process's descriptor limit, and the connection cap derived from it.
///
/// Every connection holds a descriptor, and a request in progress usually one more (the file a GET
/// sends, an upload's data file). A cap at half of what is left after the process's own (event
/// loops, standard streams, the listener, record writes) means that the descriptor limit is never
/// what refuses a connection: the cap is, with a clear 503, and `accept` never fails for want of one.
enum DescriptorLimit {
    /// Descriptors kept for the process itself.
    static let reserved = 32

    /// Raises the soft limit to the hard one, as Go's runtime and most servers do (the soft default of
    /// 1024 is there for programs that use `select`, which nothing here does); returns the soft limit now.
    static func raise() -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 1024 }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 { limit = raised }
        }
        return Int(min(limit.rlim_cur, rlim_t(Int32.max)))
    }

    /// `--max-connections` by default: half of what the process does not keep for itself.
    static func defaultConnections(limit: Int) -> Int {
        max(1, (limit - reserved) / 2)
    }

    /// The most connections the limit can hold at all (each needs at least its own descriptor).
    static func mostConnections(limit: Int) -> Int {
        max(1, limit - reserved)
    }
}
