import ArgumentParser
import Glibc
import ResumeKit

/// Runs a transfer under the signal rules of docs/guarantees.md ("Tokens and processes"): SIGINT stops it
/// as "interrupted" (exit 130), SIGTERM and SIGHUP as "paused" (exit 75); both commit first. A second signal
/// during the commit changes nothing. SIGPIPE and SIGXFSZ are ignored so a closed pipe or a file-size limit
/// is an error, not a death.
enum Runner {
    static func run<T: Sendable>(
        reporter: Reporter, _ work: @escaping @Sendable (Cancellation) async throws(TransferError) -> T
    ) async throws -> T {
        let cancellation = start()
        do {
            return try await work(cancellation)
        } catch {
            throw stop(error, reporter: reporter)
        }
    }

    /// ``run(reporter:_:)`` for work that blocks the calling thread until it ends.
    static func runBlocking<T>(reporter: Reporter, _ work: (Cancellation) throws(TransferError) -> T) throws -> T {
        let cancellation = start()
        do {
            return try work(cancellation)
        } catch {
            throw stop(error, reporter: reporter)
        }
    }

    private static func start() -> Cancellation {
        let cancellation = Cancellation()
        signal(SIGPIPE, SIG_IGN)
        // Past a file-size limit, write(2) should fail with EFBIG (exit 74, token kept), not kill us.
        signal(SIGXFSZ, SIG_IGN)
        StopSignals.route(to: cancellation)
        return cancellation
    }

    private static func stop(_ error: TransferError, reporter: Reporter) -> ExitCode {
        if error.code == .outputClosed {
            // The reader of stdout is gone: end as a filter does, by the SIGPIPE that was held off.
            signal(SIGPIPE, SIG_DFL)
            raise(SIGPIPE)
        }
        reporter.failure(error)
        return ExitCode(error.exitStatus)
    }

    /// Reports a failure that happened before any transfer started.
    static func fail(_ error: TransferError, json: Bool) -> ExitCode {
        Reporter(json: json, quiet: false, tokenID: error.tokenID ?? "").failure(error)
        return ExitCode(error.exitStatus)
    }
}
