import CMalloc
import ResumeKit

/// Opens `--store s3://BUCKET/PREFIX/` at start: the URL, the endpoint, region and credentials (read as
/// the client's S3 commands read them), and — unless `--single-instance` — the probe that the endpoint
/// honours conditional writes, without which instances could not lock uploads.
enum S3StoreSetup {
    /// Blocks (the probe's requests).
    static func open(
        _ configuration: S3StoreConfiguration, readOnly: Bool, overwrite: Bool, hook: CompletionHookSettings?,
        metrics: ServerMetrics?,
        log: (@Sendable (String) -> Void)?
    ) throws(ServeError) -> S3Backend {
        let location: S3Location
        let target: S3Target
        do {
            location = try S3Location.parse(configuration.url)
            target = try S3Target(
                location, choices: S3Choices(endpoint: configuration.endpoint), forcePathStyle: false,
                environment: configuration.environment)
        } catch {
            throw .badStore(reason: error.message)
        }
        // Parts (5 MiB and more) live in memory from their first byte until S3 has them. glibc raises its
        // mmap threshold to the size of each such block freed, so later parts come from its arenas and
        // stay there once freed: 218 MiB peak for eight uploads of 8 MiB parts, 125 MiB with the threshold
        // kept at its default of 128 KiB (every part mapped and unmapped on its own).
        mallopt(M_MMAP_THRESHOLD, 128 << 10)
        let client = S3Client(target: target, metrics: metrics)
        let keys = S3UploadKeys(prefix: location.key)
        let instance = UploadStore.newID()
        let lifetime = max(
            Int64(1),
            Int64(configuration.lockLifetime.components.seconds) * 1000
                + configuration.lockLifetime.components.attoseconds / 1_000_000_000_000_000)
        if !readOnly && !configuration.singleInstance {
            switch S3ConditionalProbe.run(client, keys: keys, instance: instance) {
            case .supported: break
            case .ignored: throw .noConditionalWrites(store: location.description)
            case .failed(let reason): throw .storeUnreachable(store: location.description, reason: reason)
            }
        }
        // The id its lock grants carry: an operator (or a test) can tell whose lock an object is.
        log?("uploads kept in \(location), instance \(instance)")
        var store = S3UploadStore(client: client, keys: keys)
        var hooks: HookRunner?
        if let hook, !readOnly {
            hooks = try HookRunner(settings: hook, root: nil, metrics: metrics, log: log)
            store.hookHolder = instance
            // A run may take its timeout; a holder still alive past this leaves it to another instance.
            store.hookWindow = Int64(hook.timeout.components.seconds) * 1000 + 30_000
        }
        return S3Backend(
            store: store, partSize: configuration.partSize, instance: instance, lockLifetime: lifetime,
            singleInstance: configuration.singleInstance, overwrite: overwrite, hooks: hooks, log: log)
    }
}
