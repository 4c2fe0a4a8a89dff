import ArgumentParser
import ResumeKit

struct Upload: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "upload",
        abstract: "Upload a file resumably: IETF resumable-upload draft, tus 1.0, a plain POST, or S3 multipart.",
        discussion: """
            With --protocol auto (the default) one OPTIONS request (no body) finds out what the server \
            speaks: tus, the IETF draft, or neither (then a draft creation, which a plain server takes as \
            an ordinary upload). The upload URL the server announces is saved at once, so an upload cut at \
            any point continues with 'resumectl resume TOKEN' from the offset the server reports. For tus, \
            URL is the creation endpoint (e.g. http://host/files/).

            FILE - reads stdin to its end: bytes wait in a spool in the state folder until the server has \
            them (at most --spool-max; past it the stream goes in appends), so cuts and 5xx are survived. \
            Killed after stdin ended, 'resumectl resume TOKEN' finishes from the spool; killed before, pipe \
            the same stream into 'resumectl resume TOKEN': it is checked against what was read, and a \
            different stream fails with exit 65. A server without resumable uploads (--protocol plain, or one \
            whose OPTIONS answer names neither tus nor the draft) gets the stream as one chunked POST, and \
            is said to be not resumable.

            To s3://BUCKET/KEY a file of one part goes as one signed PUT, a larger one as a multipart \
            upload, --parallel parts at a time, each with a CRC32C S3 checks (--s3-checksum). The token keeps \
            every finished part: 'resumectl resume' (or the same command) lists what S3 holds, keeps parts \
            whose ETag or checksum matches and sends the rest. Credentials, region and endpoint are read as the AWS \
            CLI reads them.

            A folder (upload DIR TARGET/, TARGET an s3://BUCKET/PREFIX/ or a URL ending in /) is one batch: \
            every regular file below it goes to TARGET plus its path in the folder, --parallel files at once, \
            with the protocol found once. The batch id (b-…) is printed first; pause, resume, show, wait and \
            cancel take it, and the same command again continues it without sending a finished file again. \
            Symbolic links and special files are skipped (-L follows links).

            --connections N to a tus server that offers concatenation sends the file as N partial uploads at \
            once, then one final upload that joins them (its URL is the result); the token keeps every \
            partial's URL and offset, so a resume continues each where the server has it. Under --protocol \
            auto a server that answered as the IETF draft is asked once more as tus (resumectl serve speaks \
            both). Any other server gets one request stream and a line saying why.

            EXAMPLES:
              resumectl upload ~/footage s3://backup/2026/ --parallel 8
              resumectl upload --skip-existing dataset/ https://files.example.com/data/
              resumectl upload backup.tar https://uploads.example.com/files/backup.tar
              resumectl upload --protocol tus video.mp4 https://tus.example.com/files/
              resumectl upload --connections 4 video.mp4 https://tus.example.com/files/
              resumectl upload --chunk-size 64M backup.tar https://uploads.example.com/f/
              resumectl upload -u alice --cacert ca.pem a.tar https://intranet.example/up/
              resumectl upload big.iso https://uploads.example.com/big.iso --detach
              pg_dump db | resumectl upload - https://up.example.com/db.sql --spool-max 1G
              resumectl upload backup.tar s3://my-bucket/backups/backup.tar --part-size 64M
              resumectl upload a.tar s3://bucket/a.tar --endpoint-url http://127.0.0.1:9000
            """)

    @Argument(
        help: ArgumentHelp(
            "The file to send, a folder (every file below it, as one batch), or - for stdin (a stream: the IETF draft, "
                + "resumable through a spool).")
    )
    var file: String

    @Argument(
        help: ArgumentHelp(
            "http or https URL that accepts the upload, or s3://BUCKET/KEY; for a folder, a URL or s3://BUCKET/PREFIX/ "
                + "ending in /.")
    )
    var url: String

    @Option(name: .customLong("protocol"), help: "The upload protocol; auto: the token's, else one OPTIONS probe.")
    var uploadProtocol: UploadProtocolChoice = .auto

    @Option(
        name: .customLong("interop-version"),
        help: "Pin the draft interop version (3, 5, 6, 8 or 9) instead of negotiating.")
    var interopVersion: Int?

    @Option(
        name: .customLong("chunk-size"), help: "Send the file in appends of at most this many bytes (suffix k, M or G)."
    )
    var chunkSize: ByteRate?

    @Option(
        name: .customLong("spool-max"),
        help: "With -: the most stdin bytes kept on disk until the server has them (default 1G).")
    var spoolMax: ByteRate?

    @Option(
        name: .customLong("part-size"), help: "S3: bytes a part (5M to 5G; default 8M, raised to fit 10,000 parts).")
    var partSize: ByteRate?

    @Option(
        help:
            "S3: parts sent at once; for a folder, files sent at once (1-64), all sharing N requests in flight."
    )
    var parallel = 4

    @Option(
        help: ArgumentHelp(
            "Requests at once for the file (1-16): partial uploads joined by a final one, to a tus server that offers "
                + "concatenation; any other server takes one connection, and a line says why."))
    var connections = 1

    @Flag(
        name: [.customShort("L"), .customLong("follow-symlinks")],
        help: "With a folder: follow symbolic links instead of skipping them.")
    var followSymlinks = false

    @Flag(
        name: .customLong("skip-existing"),
        help: "With a folder: skip each file the target holds already (same size and checksum).")
    var skipExisting = false

    @Option(
        name: .customLong("s3-checksum"),
        help:
            "S3: what each part carries for S3 to check: crc32c, crc32 (flexible checksums), md5 (Content-MD5) or none."
    )
    var s3Checksum: S3Checksum = .crc32c

    @OptionGroup(title: "S3 (for s3://BUCKET/KEY)")
    var s3: S3OptionGroup

    @OptionGroup var options: TransferOptionGroup

    @OptionGroup var background: BackgroundOptions

    func validate() throws {
        guard (1...64).contains(parallel) else { throw ValidationError("--parallel takes 1 to 64") }
        guard (1...16).contains(connections) else { throw ValidationError("--connections takes 1 to 16") }
        if connections > 1, url.lowercased().hasPrefix("s3://") {
            throw ValidationError(
                "--connections applies to http(s) uploads: an S3 upload sends --parallel parts at once")
        }
        if connections > 1, file != "-", BatchRequest.isFolder(file) {
            throw ValidationError("--connections applies to one file: a folder sends --parallel files at once")
        }
        if file == "-" {
            if background.detach || background.startAt != nil {
                throw ValidationError("a stream (upload -) reads stdin: it runs in the foreground")
            }
        } else if spoolMax != nil {
            throw ValidationError("--spool-max applies to a stream (upload - URL)")
        }
        if followSymlinks || skipExisting, file == "-" || !BatchRequest.isFolder(file) {
            throw ValidationError("\(followSymlinks ? "-L" : "--skip-existing") applies to a folder")
        }
        if interopVersion != nil, uploadProtocol != .auto, uploadProtocol != .ietf {
            throw ValidationError("--interop-version applies to --protocol ietf only")
        }
        if let v = interopVersion, InteropVersion(rawValue: v) == nil {
            throw ValidationError(
                "--interop-version takes one of "
                    + "\(InteropVersion.allCases.map { String($0.rawValue) }.joined(separator: ", "))"
            )
        }
    }

    func run() async throws {
        let (taken, url) = options.client(taking: self.url)
        let request = UploadRequest(
            filePath: file, url: url, headers: options.header,
            interopVersion: interopVersion.flatMap(InteropVersion.init),
            chunkSize: chunkSize?.bytesPerSecond, uploadProtocol: uploadProtocol,
            s3: s3.options(partSize: partSize?.bytesPerSecond, parallel: parallel, checksum: s3Checksum),
            spoolMax: spoolMax?.bytesPerSecond, connections: connections)
        let client = background.configured(taken)
        if file != "-", BatchRequest.isFolder(file) {
            // The folder is one batch; its id is announced before any byte is sent.
            let batch = BatchRequest(
                folder: file, target: url, upload: request, parallel: parallel,
                followSymlinks: followSymlinks, skipExisting: skipExisting)
            return try await BatchRun.run(
                id: batch.id, target: url, client: client, options: options, background: background
            ) { cancellation, events throws(TransferError) in
                try await client.uploadBatch(batch, cancellation: cancellation, events: events)
            }
        }
        try background.detachIfAsked(client: client, json: options.json) { () throws(TransferError) in
            try client.prepare(request)
        }
        let id = client.uploadTokenID(request)
        let reporter = Reporter(json: options.json, quiet: options.quiet, tokenID: id)
        let result = try await Foreground.run(
            id: id, kind: .upload, url: url, client: client, background: background, reporter: reporter
        ) {
            cancellation, events throws(TransferError) in
            try await client.upload(request, cancellation: cancellation, events: events)
        }
        reporter.result(result.url)
    }
}

extension UploadProtocolChoice: ExpressibleByArgument {}
extension S3Checksum: ExpressibleByArgument {}
