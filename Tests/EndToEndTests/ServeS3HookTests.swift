import Foundation
import ResumeKit
import Testing

@testable import ResumeServer

/// `serve --store s3:// --on-upload-complete`: the hook runs once the object is complete on S3, with its
/// `s3://` URL, and at least once across a `kill -9` of the instance running it (the upload's record
/// on S3 says the hook is due, and another instance takes it over). Real moto, real instances.
@Suite("serve S3 store: completion hook")
struct ServeS3HookTests {
    /// Appends `ID NAME` to `started` when it starts and its environment to `done` when it ends; its
    /// first run for slow.bin sleeps for a minute (its instance is killed meanwhile).
    static let hook = """
        dir=$(dirname "$0")
        name=$(basename "$RESUMECTL_PATH")
        echo "$RESUMECTL_UPLOAD_ID $name" >> "$dir/started"
        if [ "$name" = slow.bin ] && [ -e "$dir/slow-once" ]; then rm "$dir/slow-once"; sleep 60; fi
        printf '%s|%s|%s|%s|%s|%s\\n' "$RESUMECTL_UPLOAD_ID" "$name" "$RESUMECTL_PATH" "$RESUMECTL_SIZE" \\
            "$RESUMECTL_PROTOCOL" "${RESUMECTL_SHA256-unset}" >> "$dir/done"
        """

    @Test(
        """
        the hook runs once the object is complete, with its s3:// URL; a run cut short by a kill -9 of its instance \
        runs on the other
        """
    )
    func hookAcrossKill() async throws {
        let w = try Workspace()
        let hooks = try w.dir.subdirectory("hook")
        try Self.hook.write(toFile: hooks + "/hook.sh", atomically: true, encoding: .utf8)
        _ = FileManager.default.createFile(atPath: hooks + "/slow-once", contents: nil)
        // A short --upload-timeout: the sweep that takes over a dead instance's hook runs every 10 s.
        let cluster = try await S3ServeCluster(
            instances: 2,
            extra: [
                "--on-upload-complete", "/bin/sh \(hooks)/hook.sh", "--hook-timeout", "5", "--upload-timeout", "20",
            ])
        let sizes = ["a.bin": 6 * (1 << 20) + 3, "slow.bin": 200_000]
        for (index, name) in sizes.keys.sorted().enumerated() {
            _ = try makeRandomFile(path: w.path("www/" + name), size: sizes[name]!, seed: UInt64(4750 + index))
        }
        let a = try await w.run([
            "upload", w.path("www/a.bin"), cluster.url + "/in/", "--protocol", "tus", "--retries", "5",
        ])
        #expect(a.status == 0, "\(a)")
        try await eventually(timeout: .seconds(20)) { ServeHookTests.lines(hooks + "/done").count == 1 }

        let first = "http://127.0.0.1:\(cluster.ports[0])"
        let slow = try await CurlExchange.run(["-T", w.path("www/slow.bin"), first + "/in/slow.bin"])
        #expect(slow.status == 201, "\(slow.heads)")
        try await eventually(timeout: .seconds(20)) {
            ServeHookTests.lines(hooks + "/started").contains { $0.hasSuffix(" slow.bin") }
        }
        cluster.instances[0].send(signal: SIGKILL)
        _ = try await cluster.instances[0].wait(timeout: .seconds(10))
        try await Task.sleep(for: .milliseconds(500))
        #expect(
            !ServeHookTests.lines(hooks + "/done").contains { $0.contains("|slow.bin|") },
            "the run for slow.bin died with its instance")

        // The claim of the killed instance runs out (--hook-timeout + 30 s), then the other's sweep runs it.
        try await eventually(timeout: .seconds(120)) {
            ServeHookTests.lines(hooks + "/done").contains { $0.contains("|slow.bin|") }
        }
        try await Task.sleep(for: .seconds(1))
        let done = ServeHookTests.lines(hooks + "/done").map {
            $0.split(separator: "|", omittingEmptySubsequences: false).map(String.init)
        }
        #expect(done.map { $0[1] }.sorted() == ["a.bin", "slow.bin"], "one finished run per upload: \(done)")
        for fields in done where fields.count == 6 {
            let name = fields[1]
            #expect(fields[0].count == 32, "RESUMECTL_UPLOAD_ID: \(fields)")
            #expect(
                fields[2] == "s3://\(cluster.bucket)/inbox/in/\(name)" && Int(fields[3]) == sizes[name], "\(fields)")
            #expect(fields[4] == (name == "a.bin" ? "tus" : "plain"), "\(fields)")
            #expect(fields[5] == "unset", "no SHA-256 is known for an S3 object: \(fields)")
        }
        #expect(
            ServeHookTests.lines(hooks + "/started").filter { $0.hasSuffix(" slow.bin") }.count == 2,
            "slow.bin's hook ran again")
        #expect(
            cluster.instances[1].stderrSoFar.contains("taken over from instance \(cluster.ids[0])"),
            "\(cluster.instances[1].stderrSoFar)")
        // Its record no longer says the hook is due (or is gone: expired once its hook had run).
        let s3 = try ServeS3StoreTests.client(
            cluster.moto, bucket: cluster.bucket, prefix: "inbox/", home: cluster.home.path)
        let store = S3UploadStore(client: s3, keys: S3UploadKeys(prefix: "inbox/"))
        let slowID = try #require(
            ServeHookTests.lines(hooks + "/started").first { $0.hasSuffix(" slow.bin") }?.split(separator: " ").first)
        try await eventually(timeout: .seconds(10)) {
            (try? store.record(String(slowID))).map { $0?.hook == nil } == true
        }
    }
}
