import CLibFuzzer
#if canImport(Glibc)
import Glibc
#endif

/// What every fuzz target shares: a property check that stops the run with the reason, so that libFuzzer
/// keeps the input as a finding (a trap is a "deadly signal" to it, like a crash).
public func require(_ holds: @autoclosure () -> Bool, _ reason: @autoclosure () -> String) {
    if !holds() { fatalError("property violated: \(reason())") }
}

/// The input as text the way the client sees header bytes: invalid UTF-8 becomes U+FFFD.
public func text(_ data: UnsafePointer<UInt8>, _ size: Int) -> String {
    String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
}

public func bytes(_ data: UnsafePointer<UInt8>, _ size: Int) -> [UInt8] {
    Array(UnsafeBufferPointer(start: data, count: size))
}

/// Runs libFuzzer over `target` with this process's arguments (`-max_total_time=…`, corpus folders): the
/// whole of a fuzz target's `main.swift` is `exit(fuzz(myTarget))`.
public func fuzz(_ target: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt) -> Never {
    var argc = CommandLine.argc
    var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
    let status = LLVMFuzzerRunDriver(&argc, &argv, target)
    exit(status)
}
