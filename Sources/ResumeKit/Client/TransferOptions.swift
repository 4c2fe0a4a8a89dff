/// Settings that hold for a whole transfer.
public struct TransferOptions: Sendable, Equatable {
    public var retry: RetryPolicy = .default
    public var transport = TransportSettings()
    /// Seconds between a download's checkpoints (fsync, then token): a crash costs at most this much time
    /// of transfer, however fast the link.
    public var checkpointInterval: Double = 1.0
    /// Compute the SHA-256 of the finished data even when nothing asks to verify it (for `--json`).
    public var computeSHA256 = false
    /// The caller shows the token id as the transfer goes (`--json` events): a single download then writes its
    /// token before its first event. Otherwise the token waits for the first checkpoint, a failure or a pause,
    /// as a list's file does (README, "A small download").
    public var announcesID = true
    /// Parallel ranged connections for one download (`--connections`); 1 means a plain download.
    public var connections = 1
    /// With mirrors (`--per-mirror`): at most this many of the connections to one of them.
    public var perMirror = 2
    /// When the name does not resolve or no connection can be made, wait for the network (capped backoff up
    /// to 60 s) without spending retries (`--wait-network`; detached transfers).
    public var waitForNetwork = false
    /// What retries sleep on and read the time from: the system's, or a test's.
    public var clock: any RetryClock {
        get { retryClock.clock }
        set { retryClock = ClockSetting(clock: newValue) }
    }
    private var retryClock = ClockSetting(clock: SystemRetryClock())

    public init() {}

    /// Options are equal whatever their clocks.
    private struct ClockSetting: Sendable, Equatable {
        let clock: any RetryClock
        static func == (a: Self, b: Self) -> Bool { true }
    }
}
