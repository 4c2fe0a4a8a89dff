import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A fresh folder for one test, removed when the last reference goes away.
///
/// Created with `mkdtemp(3)`, so parallel tests never share a folder. Set `RESUMECTL_KEEP_TEMP=1` to keep
/// it for a post-mortem; its path is in `path`.
public final class TempDirectory: Sendable {
    /// Absolute path, without a trailing slash.
    public let path: String

    public var url: URL { URL(fileURLWithPath: path, isDirectory: true) }

    public init(prefix: String = "resumectl-e2e") throws {
        let base = ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        var template = Array("\(base)/\(prefix).XXXXXX".utf8CString)
        let made: String? = template.withUnsafeMutableBufferPointer { buffer in
            guard let result = mkdtemp(buffer.baseAddress!) else { return nil }
            return String(cString: result)
        }
        guard let made else {
            throw SupportError("mkdtemp failed in \(base): \(String(cString: strerror(errno)))")
        }
        self.path = made
    }

    /// The path of `name` inside this folder (not created).
    public func path(_ name: String) -> String { path + "/" + name }

    /// Creates (with intermediate folders) and returns the path of the sub folder `name`.
    @discardableResult
    public func subdirectory(_ name: String) throws -> String {
        let sub = path(name)
        try FileManager.default.createDirectory(atPath: sub, withIntermediateDirectories: true)
        return sub
    }

    deinit {
        if ProcessInfo.processInfo.environment["RESUMECTL_KEEP_TEMP"] == "1" { return }
        try? FileManager.default.removeItem(atPath: path)
    }
}
