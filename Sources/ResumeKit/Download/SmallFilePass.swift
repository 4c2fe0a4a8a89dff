import Dispatch
import Glibc
import Synchronization

/// A list's first pass over its fresh small files, fetched the way `curl -Z` fetches a list: each file's
/// ``Fetch`` started on a multi handle's thread, its body written from there into a new `.part` (created
/// exclusively and locked: a second process is refused before it fetches a byte), then handed to the
/// publisher. No worker thread, token, lock file or retry is set up for a file that ends within one answer,
/// which is what most of a list's small files do.
///
/// The list's workers get what the pass does not finish: a file whose token or `.part` is there, one with a
/// checksum, any answer but a plain 200, a fault, an answer over `limit` bytes, one still running after a
/// checkpoint interval. A refusal or a fault is their download's first attempt (a 404 is not asked twice, a
/// 503's `Retry-After` is waited for). The first file too large or too slow ends the pass: the rest of such
/// a list is not small either.
final class SmallFilePass: @unchecked Sendable {
    /// Answers up to this size are taken in the pass (the size up to which a `.part` gets no write gatherer).
    static let limit = PartFile.gatherAfter

    private let client: TransferClient
    private let requests: [DownloadRequest]
    private let queue: WorkQueue<Result<DownloadResult, TransferError>>
    private let publisher: BatchPublisher
    private let cancellation: Cancellation
    private let events: @Sendable (Int, TransferEvent) -> Void
    /// A file left to the workers, with what its exchange in the pass leaves them.
    typealias Left = (index: Int, earlier: EarlierAttempt)

    private let left = Mutex<[Left]>([])
    /// The tokens on disk when the pass began, without a path lookup per file.
    private let tokens: Set<String>
    private let ended = Atomic<Bool>(false)
    private let running = DispatchGroup()

    init(
        client: TransferClient, requests: [DownloadRequest], queue: WorkQueue<Result<DownloadResult, TransferError>>,
        publisher: BatchPublisher, cancellation: Cancellation, events: @escaping @Sendable (Int, TransferEvent) -> Void
    ) {
        self.client = client
        self.requests = requests
        self.queue = queue
        self.publisher = publisher
        self.cancellation = cancellation
        self.events = events
        tokens = client.store.ids()
    }

    /// Runs the pass, a file at a time on each session; returns the files it left to the workers, in list order.
    func run(on sessions: [any StartingSession]) -> [Left] {
        for session in sessions {
            running.enter()
            next(on: session)
        }
        running.wait()
        return left.withLock { $0.sorted { $0.index < $1.index } }
    }

    /// Starts the next file the pass can take on `session`, from whichever thread the last one ended on.
    private func next(on session: any StartingSession) {
        while !cancellation.isStopped, !ended.load(ordering: .relaxed), let i = queue.take() {
            guard let fetch = open(i) else {
                left.withLock { $0.append((i, EarlierAttempt())) }
                continue
            }
            let immediate = session.start(
                fetch.request, settings: fetch.options.transport, cancellation: cancellation, delegate: fetch.fetch
            ) { [self] result in
                end(fetch, result)
                next(on: session)
            }
            if let immediate { end(fetch, immediate) } else { return }
        }
        running.leave()
    }

    /// The file's new `.part` and its request; nil when the file is not the pass's to take.
    private func open(_ i: Int) -> SmallFileFetch? {
        let request = requests[i]
        guard request.expectedSHA256 == nil, !Route.isS3(request.url), (request.listedSize ?? 0) <= SmallFilePass.limit
        else { return nil }
        // A token, an earlier `.part` or a file in the way: the workers continue, resume or report it. Warnings
        // wait until the file is the pass's.
        guard case .opened(let opened)? = try? client.open(.download(request, list: .firstPass(tokens: tokens))),
            let download = try? opened.token.downloadPart(),
            let headers = try? HeaderLines.forDownload(opened.token.headers),
            let part = try? PartFile(creating: download.partPath)
        else { return nil }
        let emit: EventHandler = { [events] in events(i, $0) }
        if opened.options.transport.connection.insecure == true { emit(.warning(.insecure)) }
        return SmallFileFetch(
            index: i, id: opened.token.id, url: opened.token.url, download: download, part: part,
            options: opened.options, headers: headers, onChange: request.onChange, emit: emit)
    }

    /// Hands a complete file to the publisher; anything else goes back to the workers, without its `.part`.
    private func end(_ fetch: SmallFileFetch, _ result: ExchangeResult) {
        switch fetch.settle(result) {
        case .finished(let finished):
            publisher.slot(fetch.index).submit(finished, part: fetch.part)
            queue.finish(fetch.index, .success(finished.result))
        case .left(let verdict):
            if fetch.outgrown { ended.store(true, ordering: .relaxed) }
            // The pass created the `.part` (and still locks it): nothing of it was promised to anyone.
            unlink(fetch.part.path)
            fetch.part.close()
            let earlier = EarlierAttempt(verdict: verdict, announced: fetch.fetch.announced)
            left.withLock { $0.append((fetch.index, earlier)) }
        }
    }
}

/// What a list's first pass leaves to the worker that downloads a file it did not finish.
struct EarlierAttempt: Sendable {
    /// How the pass's exchange ended, when that is the download's first attempt: a refusal (not asked
    /// again) or a fault (counted and waited for by the retry rules, `Retry-After` included).
    var verdict: DownloadStateMachine.Verdict?
    /// `started` was said already.
    var announced = false
}

/// One file of a ``SmallFilePass``: the output of its ``Fetch``, on the multi handle's thread (see the pass
/// for what it takes).
final class SmallFileFetch: FetchOutput {
    let index: Int
    let id: String
    /// What a token of the file would hold: its path, and once the head is in, what the server said.
    private var download: ResumeToken.DownloadPart
    let part: PartFile
    let options: TransferOptions
    let request: TransferRequest
    let emit: EventHandler
    private(set) var fetch: Fetch!
    private let began = Monotonic.now
    /// The answer is larger than the pass takes, or the file took longer than a checkpoint interval.
    private(set) var outgrown = false

    init(
        index: Int, id: String, url: String, download: ResumeToken.DownloadPart, part: PartFile,
        options: TransferOptions,
        headers: HeaderFields, onChange: DownloadStateMachine.OnChange, emit: @escaping EventHandler
    ) {
        self.index = index
        self.id = id
        self.download = download
        self.part = part
        self.options = options
        self.emit = emit
        // A fresh file: the plain GET the fetch plans for no bytes held.
        request = TransferRequest(method: "GET", url: url, headers: headers, followRedirects: true)
        fetch = Fetch(
            url: url, headers: headers, output: self, onChange: onChange, hashes: options.computeSHA256,
            stallTimeout: options.transport.stallTimeout, path: download.path, events: emit)
    }

    // MARK: FetchOutput

    var held: Int64 { part.written }

    func heldBytes(from offset: Int64) throws(TransferError) -> [UInt8] { [] }

    func begin(at from: Int64, restarted: String?, machine: DownloadStateMachine, effectiveURL: String)
        throws(TransferError)
    {
        // A digest to check is the workers' (they verify it before the rename).
        guard from == 0, restarted == nil, machine.resource?.reprDigestSHA256 == nil else { throw Self.left }
        if let total = machine.resource?.totalBytes, total > SmallFilePass.limit { throw outgrow() }
    }

    func write(_ body: UnsafeRawBufferPointer) throws(TransferError) {
        guard part.written + Int64(body.count) <= SmallFilePass.limit else { throw outgrow() }
        do { try part.append(body) } catch { throw Self.left }
    }

    func tick(now: Double) throws(TransferError) {
        guard now - began < options.checkpointInterval else { throw outgrow() }
    }

    /// Ends the exchange: the file is the workers'.
    private static let left = TransferError(.failed, "left to the workers")

    private func outgrow() -> TransferError {
        outgrown = true
        return Self.left
    }

    enum Settled {
        /// Ready to publish: the exchange delivered the whole file.
        case finished(Publish.Finished)
        /// For the workers, with the verdict that is their first attempt (a refusal, a fault), if any.
        case left(DownloadStateMachine.Verdict?)
    }

    func settle(_ result: ExchangeResult) -> Settled {
        let verdict: DownloadStateMachine.Verdict
        do { verdict = try fetch.settle(result) } catch { return .left(nil) }
        switch verdict {
        case .done:
            download.adopt(fetch.machine.resource, effectiveURL: result.effectiveURL)
            let digest = options.computeSHA256 ? try? fetch.digest() : nil
            return .finished(
                Publish.Finished(
                    download: download, tokenID: id, url: fetch.url, tokenOnDisk: false,
                    bytes: part.written, sha256: digest, emit: emit))
        case .fail, .fault:
            return .left(verdict)
        case .again, .refetchFromZero:
            return .left(nil)
        }
    }
}
