import Foundation
import Testing

@testable import ResumeServer

/// `serve --on-upload-complete`: the hook runs once each upload's file is in place, with the upload in
/// its environment, never holding up the client's answer, and at least once per upload across a
/// `kill -9` (a run cut short by the kill runs again after the restart; one that finished does not).
@Suite("serve completion hook")
struct ServeHookTests {
    /// Appends `ID NAME` to `started` when it starts and the whole environment to `done` when it ends;
    /// its first run for slow.bin sleeps for 30 s (serve is killed meanwhile). Exits 3: a failing hook
    /// changes no answer.
    static let hook = """
        dir=$(dirname "$0")
        name=$(basename "$RESUMECTL_PATH")
        echo "$RESUMECTL_UPLOAD_ID $name" >> "$dir/started"
        if [ "$name" = slow.bin ] && [ -e "$dir/slow-once" ]; then rm "$dir/slow-once"; sleep 30; fi
        printf '%s|%s|%s|%s|%s|%s|%s|%s\\n' "$RESUMECTL_UPLOAD_ID" "$name" "$RESUMECTL_PATH" "$RESUMECTL_SIZE" \\
            "$RESUMECTL_PROTOCOL" "$RESUMECTL_SHA256" "${RESUMECTL_USER-}" "$1" >> "$dir/done"
        echo "hook saw $name" >&2
        exit 3
        """

    static func lines(_ path: String) -> [String] {
        ((try? String(contentsOfFile: path, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
    }

    @Test(
        """
        one run per upload across a kill -9: a run cut short by the kill runs again after the restart, a finished one \
        does not
        """
    )
    func oncePerUploadAcrossKill() async throws {
        let w = try Workspace()
        let hooks = try w.dir.subdirectory("hook")
        try Self.hook.write(toFile: hooks + "/hook.sh", atomically: true, encoding: .utf8)
        _ = FileManager.default.createFile(atPath: hooks + "/slow-once", contents: nil)
        let folder = try w.dir.subdirectory("served")
        try FileManager.default.createDirectory(atPath: folder + "/in", withIntermediateDirectories: true)
        let options = ["--on-upload-complete", "/bin/sh \(hooks)/hook.sh 'two words'", "--hook-parallel", "2"]
        let (first, port) = try await ServeProcess.start(folder: folder, options)
        var serve = first
        defer { serve.send(signal: SIGKILL) }
        let base = "http://127.0.0.1:\(port)/in/"
        var digests: [String: String] = [:]
        for (index, (name, size)) in [("a.bin", 300_000), ("slow.bin", 200_000), ("c.bin", 16 << 20)].enumerated() {
            digests[name] = try makeRandomFile(path: w.path("www/" + name), size: size, seed: UInt64(4720 + index))
        }
        let client = try w.start([
            "upload", w.path("www/c.bin"), base + "c.bin", "--protocol", "ietf", "--limit-rate", "2M", "--retries",
            "100", "--retry-delay", "0.2",
        ])
        defer { client.send(signal: SIGKILL) }

        let a = try await CurlExchange.run(["-T", w.path("www/a.bin"), base + "a.bin"])
        #expect(a.status == 201, "a failing hook (exit 3) does not change the answer")
        try await eventually(timeout: .seconds(20)) { Self.lines(hooks + "/done").count == 1 }
        let started = ContinuousClock.now
        let slow = try await CurlExchange.run(["-T", w.path("www/slow.bin"), base + "slow.bin"])
        #expect(
            slow.status == 201 && ContinuousClock.now - started < .seconds(10), "a slow hook does not hold the answer")
        try await eventually(timeout: .seconds(20)) {
            Self.lines(hooks + "/started").contains { $0.hasSuffix(" slow.bin") }
        }
        try await eventually(timeout: .seconds(60)) { ServeDurabilityTests.storedBytes(folder) >= 4 << 20 }

        serve.send(signal: SIGKILL)
        let killed = try await serve.wait(timeout: .seconds(10))
        #expect(killed.signaled, "\(killed)")
        try await Task.sleep(for: .milliseconds(500))
        #expect(
            !Self.lines(hooks + "/done").contains { $0.contains("|slow.bin|") }, "the run for slow.bin died with serve")
        (serve, _) = try await ServeProcess.start(folder: folder, port: port, options)

        let result = try await client.wait(timeout: .seconds(120))
        #expect(result.status == 0, "\(result) serve: \(serve.stderrSoFar)")
        try await eventually(timeout: .seconds(30)) { Self.lines(hooks + "/done").count >= 3 }
        try await Task.sleep(for: .seconds(1))
        let done = Self.lines(hooks + "/done").map {
            $0.split(separator: "|", omittingEmptySubsequences: false).map(String.init)
        }
        #expect(done.map { $0[1] }.sorted() == ["a.bin", "c.bin", "slow.bin"], "one finished run per upload: \(done)")
        for fields in done where fields.count == 8 {
            let name = fields[1]
            #expect(fields[0].count == 32, "RESUMECTL_UPLOAD_ID: \(fields)")
            #expect(fields[2] == folder + "/in/" + name && Int(fields[3]) == w.size(w.path("www/" + name)), "\(fields)")
            #expect(fields[4] == (name == "c.bin" ? "ietf" : "plain") && fields[5] == digests[name], "\(fields)")
            #expect(
                fields[6].isEmpty && fields[7] == "two words",
                "no login, and the quoted argument stays one word: \(fields)")
        }
        #expect(
            Self.lines(hooks + "/started").filter { $0.hasSuffix(" slow.bin") }.count == 2,
            "slow.bin's hook ran again after the kill")
        #expect(serve.stderrSoFar.contains("completion hook(s) due from before the restart"), "\(serve.stderrSoFar)")
        #expect(
            serve.stderrSoFar.contains("exit 3") && serve.stderrSoFar.contains("stderr: hook saw"),
            "\(serve.stderrSoFar)")
        try await eventually(timeout: .seconds(10)) {
            ((try? FileManager.default.contentsOfDirectory(atPath: folder + "/.resumectl-uploads/hooks")) ?? ["?"])
                .isEmpty
        }
    }

    @Test("the hook gets the login's user (--htpasswd); a hook past --hook-timeout is killed and logged")
    func userAndTimeout() async throws {
        let w = try Workspace()
        let htpasswd = try await ServeLoginTests.passwordFile(w)
        let hooks = try w.dir.subdirectory("hook")
        let script =
            #"echo "$RESUMECTL_USER $(basename "$RESUMECTL_PATH")" >> "$(dirname "$0")/users"; "#
            + #"[ "$(basename "$RESUMECTL_PATH")" = long.txt ] && exec sleep 60; exit 0"#
        try script.write(toFile: hooks + "/hook.sh", atomically: true, encoding: .utf8)
        let folder = try w.dir.subdirectory("served")
        let (serve, port) = try await ServeProcess.start(
            folder: folder,
            ["--htpasswd", htpasswd, "--on-upload-complete", "sh \(hooks)/hook.sh", "--hook-timeout", "1"])
        defer { serve.send(signal: SIGKILL) }
        try Data("x".utf8).write(to: URL(fileURLWithPath: w.path("x.txt")))
        for name in ["short.txt", "long.txt"] {
            let put = try await CurlExchange.run([
                "-u", "alice:bcrypt secret", "-T", w.path("x.txt"), "http://127.0.0.1:\(port)/\(name)",
            ])
            #expect(put.status == 201)
        }
        try await eventually(timeout: .seconds(20)) { serve.stderrSoFar.contains("killed after its timeout") }
        #expect(Set(Self.lines(hooks + "/users")) == ["alice short.txt", "alice long.txt"])
    }

    @Test(
        """
        at start, uploads whose data was put in place just before a crash (renamed with --overwrite, or linked) \
        finish, and their hook runs once
        """
    )
    func placedBeforeCrash() async throws {
        let root = try TempDirectory(prefix: "resumectl-hook-recover")
        let hooks = try HookRunner(
            settings: CompletionHookSettings(command: [
                "/bin/sh", "-c", #"echo "$RESUMECTL_UPLOAD_ID" >> "$0/ran""#, root.path,
            ]),
            root: root.path, metrics: nil, log: nil)
        defer { hooks.shutdown() }
        let store = try UploadStore(root: root.path, hooks: hooks)
        try FileManager.default.createDirectory(atPath: root.path("in"), withIntermediateDirectories: true)
        let ids = ["a", "b"].map { String(repeating: $0, count: 32) }
        for (id, moved) in zip(ids, [true, false]) {
            try store.create(
                UploadRecord(
                    id: id, kind: .tus, target: ["in", "\(id.prefix(1)).bin"], length: 5, offset: 5, expires: .max,
                    phase: .finishing))
            try Data("12345".utf8).write(to: URL(fileURLWithPath: store.dataPath(id)))
            let final = root.path("in/\(id.prefix(1)).bin")
            #expect((moved ? rename(store.dataPath(id), final) : link(store.dataPath(id), final)) == 0)
        }
        var lines: [String] = []
        let kept = store.recover(now: 0, replacing: false, log: { lines.append($0) })
        #expect(kept.isEmpty && lines.filter { $0.contains("finished after a restart") }.count == 2, "\(lines)")
        try await eventually(timeout: .seconds(10)) { Self.lines(root.path("ran")).sorted() == ids }
        try await eventually(timeout: .seconds(10)) {
            (try? FileManager.default.contentsOfDirectory(atPath: store.folder + "/hooks"))?.isEmpty == true
        }
        #expect(Self.lines(root.path("ran")).sorted() == ids, "once each")
        #expect(try Data(contentsOf: URL(fileURLWithPath: root.path("in/b.bin"))) == Data("12345".utf8))
    }

    @Test("--on-upload-complete is split like a command line, without a shell")
    func commandWords() {
        #expect(
            CommandWords.split(#"/bin/scan --tag 'a b' "c \"d\"" e\ f"#) == [
                "/bin/scan", "--tag", "a b", #"c "d""#, "e f",
            ])
        #expect(CommandWords.split("run $HOME `x` ; rm") == ["run", "$HOME", "`x`", ";", "rm"])
        #expect(CommandWords.split("''") == [""])
        #expect(CommandWords.split("open 'quote") == nil)
    }
}
