import FoundationEssentials

/// The wall clock and a sleep that `pause`, SIGTERM and Ctrl-C end at once.
public struct SystemRetryClock: RetryClock {
    public init() {}
    public var now: Int64 { Int64(Date().timeIntervalSince1970) }
    public func sleep(seconds: Double, cancellation: Cancellation) -> Bool { cancellation.sleep(seconds: seconds) }
}
