/// Where the S3 store keeps things under its prefix: served objects at `PREFIX/<path>`, and per
/// unfinished upload a record, a tail and a lock under the hidden `PREFIX/.resumectl-uploads/`
/// (a dot name: never listed, never served, never an upload target, as on the file store).
struct S3UploadKeys: Sendable, Equatable {
    /// The served prefix: empty (the whole bucket) or ending in `/`.
    let prefix: String

    init(prefix: String) {
        self.prefix = prefix.isEmpty || prefix.hasSuffix("/") ? prefix : prefix + "/"
    }

    var uploads: String { prefix + UploadStore.folderName + "/" }

    /// The object a served path names.
    func object(_ components: [String]) -> String { prefix + components.joined(separator: "/") }

    func record(_ id: String) -> String { uploads + id + ".json" }
    func tail(_ id: String) -> String { uploads + id + ".tail" }
    func lock(_ id: String) -> String { uploads + id + ".lock" }
    /// The object the start-up probe writes twice to see conditional writes refused.
    func probe(_ instance: String) -> String { uploads + "probe-" + instance }
}
