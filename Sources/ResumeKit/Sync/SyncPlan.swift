/// One file of a side of a sync, as its listing describes it.
public struct SyncFile: Sendable, Equatable {
    /// Below the side's folder or prefix, `/`-separated.
    public var path: String
    public var size: Int64?
    /// Seconds since the epoch.
    public var mtime: Int64?
    /// The precision of `mtime` in seconds (an HTML listing's is a minute).
    public var mtimeStep: Int64
    /// Content hashes the side offers, lowercase hex by algorithm (`sha256`, `md5`).
    public var hashes: [String: String]

    public init(path: String, size: Int64?, mtime: Int64?, mtimeStep: Int64 = 1, hashes: [String: String] = [:]) {
        (self.path, self.size, self.mtime, self.mtimeStep, self.hashes) = (path, size, mtime, mtimeStep, hashes)
    }
}

/// What `resumectl sync` may do besides copying.
public struct SyncOptions: Codable, Sendable, Equatable {
    /// Delete what the destination holds and the source does not.
    public var delete = false
    public var sizeOnly = false
    public var checksum = false
    /// Refuse the run when more files than this would be deleted.
    public var maxDelete: Int?

    public init(delete: Bool = false, sizeOnly: Bool = false, checksum: Bool = false, maxDelete: Int? = nil) {
        (self.delete, self.sizeOnly, self.checksum, self.maxDelete) = (delete, sizeOnly, checksum, maxDelete)
    }
}

public struct SyncAction: Sendable, Equatable {
    public enum Kind: String, Sendable, CaseIterable {
        case copy, replace, delete, keep
    }

    public var kind: Kind
    public var path: String
    public var reason: String
}

/// The one rule of a sync, and of the folder batches' `--skip-existing`: what to do with each path of two
/// listings. Pure: the listings come in, the actions go out, so every rule is tested without a peer.
public struct SyncPlan: Sendable, Equatable {
    /// In path order: the source's files, then the destination's extras.
    public var actions: [SyncAction]
    /// Said once: `--checksum` met a file with no hash in common on both sides.
    public var noHash = false

    /// - Parameter sourceComplete: false when part of the source could not be listed (a folder unreadable);
    ///   with `delete` that refuses the run, as an empty source listing does: it would delete what it missed.
    public init(source: [SyncFile], destination: [SyncFile], sourceComplete: Bool = true, options: SyncOptions)
        throws(TransferError)
    {
        let there = Dictionary(destination.map { ($0.path, $0) }, uniquingKeysWith: { first, _ in first })
        let here = Set(source.map(\.path))
        var actions: [SyncAction] = []
        var noHash = false
        for file in source.sorted(by: { $0.path < $1.path }) {
            guard let other = there[file.path] else {
                actions.append(SyncAction(kind: .copy, path: file.path, reason: "not at the destination"))
                continue
            }
            let verdict = Self.compare(file, other, options)
            noHash = noHash || verdict.noHash
            actions.append(
                SyncAction(kind: verdict.differs ? .replace : .keep, path: file.path, reason: verdict.reason))
        }
        for extra in destination.map(\.path).sorted() where !here.contains(extra) {
            actions.append(
                options.delete
                    ? SyncAction(kind: .delete, path: extra, reason: "not at the source")
                    : SyncAction(kind: .keep, path: extra, reason: "not at the source (--delete removes it)"))
        }
        let deletes = actions.count { $0.kind == .delete }
        if deletes > 0, source.isEmpty || !sourceComplete {
            throw TransferError(
                .badListing,
                "the source listing is \(source.isEmpty ? "empty" : "incomplete"): --delete would remove \(deletes) "
                    + "files it may only have missed; nothing done")
        }
        if let limit = options.maxDelete, deletes > limit {
            throw TransferError(
                .failed, "\(deletes) files would be deleted, more than --max-delete \(limit); nothing done")
        }
        self.actions = actions
        self.noHash = noHash
    }

    /// Whether the destination's `other` differs from the source's `file`, and why: sizes that differ always;
    /// with `checksum` a hash both sides offer; with `sizeOnly` nothing more; else a source newer than the
    /// destination, to the coarser of the two times' precisions (a copy carries the source's time where the
    /// destination keeps it, else the destination's is the copy's own, later).
    public static func compare(_ file: SyncFile, _ other: SyncFile, _ options: SyncOptions) -> (
        differs: Bool, reason: String, noHash: Bool
    ) {
        guard let size = file.size, let otherSize = other.size else {
            return (true, "the listing gives no size to compare", false)
        }
        if size != otherSize { return (true, "size \(size) at the source, \(otherSize) at the destination", false) }
        var noHash = false
        if options.checksum {
            if let name = ["sha256", "md5"].first(where: { file.hashes[$0] != nil && other.hashes[$0] != nil }) {
                return file.hashes[name] == other.hashes[name]
                    ? (false, "same \(name)", false) : (true, "\(name) differs", false)
            }
            noHash = true
        }
        if options.sizeOnly { return (false, "same size", noHash) }
        guard let time = file.mtime, let otherTime = other.mtime else {
            return (true, "the listing gives no time to compare", noHash)
        }
        let step = max(1, file.mtimeStep, other.mtimeStep)
        return time / step > otherTime / step
            ? (true, "newer at the source", noHash) : (false, "same size, not newer at the source", noHash)
    }
}
