import Foundation
import Testing

/// contrib/systemd/resumectl-serve.service: `systemd-analyze verify` accepts it (with ExecStart
/// pointing at the built binary, as `make install` makes it absolute), and it keeps its hardening.
@Suite("serve systemd unit")
struct ServeSystemdTests {
    static let unit = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("contrib/systemd/resumectl-serve.service").path

    @Test("systemd-analyze verify passes without a word; the hardening is there")
    func verify() async throws {
        let text = try String(contentsOfFile: Self.unit, encoding: .utf8)
        let w = try Workspace()
        let installed = w.path("resumectl-serve.service")
        let absolute = text.replacingOccurrences(of: "\nExecStart=resumectl ", with: "\nExecStart=\(resumectlBinary) ")
        try absolute.write(toFile: installed, atomically: true, encoding: .utf8)
        // Fails loudly when systemd-analyze is missing (make deps installs Debian's systemd) or cannot run here.
        let r = try await runProcess("systemd-analyze", ["verify", "--man=no", installed])
        #expect(r.status == 0 && r.stdout.isEmpty && r.stderr.isEmpty, "systemd-analyze verify: \(r)")

        let settings = text.split(separator: "\n").filter { !$0.hasPrefix("#") && $0.contains("=") }.map { line in
            (String(line.prefix { $0 != "=" }), String(line.drop { $0 != "=" }.dropFirst()))
        }
        func value(_ key: String) -> String? { settings.last { $0.0 == key }?.1 }
        #expect(value("ProtectSystem") == "strict")
        #expect(value("NoNewPrivileges") == "yes")
        #expect(value("KillSignal") == "SIGTERM")
        let execStart = try #require(value("ExecStart"))
        let folder = try #require(value("ReadWritePaths"))
        #expect(execStart.hasPrefix("resumectl serve \(folder) "), "the folder it may write is the folder it serves")
        for key in [
            "ProtectHome", "PrivateTmp", "PrivateDevices", "RestrictSUIDSGID", "ProtectKernelTunables",
            "LockPersonality",
        ] {
            #expect(value(key) == "yes", "\(key)")
        }
    }
}
