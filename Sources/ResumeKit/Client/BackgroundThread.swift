import Dispatch

/// Runs blocking work (a libcurl transfer, a fsync) on a thread of its own, never on Swift's cooperative
/// pool: a private serial queue gets a dispatch worker thread that may block as long as it needs.
func runOnBackgroundThread(_ name: String, _ body: @escaping @Sendable () -> Void) {
    DispatchQueue(label: "resumectl." + name).async(execute: body)
}
