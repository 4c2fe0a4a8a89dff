import Foundation

/// The built `resumectl` executable: `$RESUMECTL_BIN` if set, else the `resumectl` beside the running test
/// executable. On Linux SwiftPM puts the test bundle (`<package>PackageTests.xctest`, a plain executable) in
/// the same `.build/<triple>/<config>/` folder as the products, so `swift build --build-tests` followed by
/// `swift test` finds the matching binary without knowing the configuration.
public let resumectlBinary: String = {
    if let explicit = ProcessInfo.processInfo.environment["RESUMECTL_BIN"], !explicit.isEmpty {
        return explicit
    }
    let testExecutable =
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
        ?? CommandLine.arguments[0]
    let beside = URL(fileURLWithPath: testExecutable).deletingLastPathComponent()
    // Should the runner ever live deeper (a bundle folder), the products folder is a near ancestor.
    var folder = beside
    for _ in 0..<3 where folder.path != "/" {
        let candidate = folder.appendingPathComponent("resumectl").path
        if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        folder.deleteLastPathComponent()
    }
    return beside.appendingPathComponent("resumectl").path
}()

/// Whether `resumectlBinary` exists and is executable (for `.enabled(if:)` on tests that need it).
public var resumectlIsBuilt: Bool { FileManager.default.isExecutableFile(atPath: resumectlBinary) }

/// The curl command-line tool, used as a reference client by the self tests.
public let curlBinary = "/usr/bin/curl"

/// Debian's nginx (package nginx-light).
public let nginxBinary = "/usr/sbin/nginx"
