import FuzzCheck
@testable import ResumeKit

/// `~/.aws/credentials` and `~/.aws/config` (the same text for both). Properties: section names are
/// trimmed with single spaces; keys are lower-case, trimmed, without `=`; values are trimmed single lines.
func fuzzAWSConfig(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let file = text(data, size)
    let parsed = ProfileFile(file)
    for (name, settings) in parsed.sections {
        require(name.trimmingSpaces() == name && !name.contains("  "), "section name '\(name)'")
        for (key, value) in settings {
            require(key == key.lowercased() && key.trimmingSpaces() == key && !key.contains("="), "key '\(key)'")
            require(value.trimmingSpaces() == value && !value.contains("\n") && !value.contains("\r"), "value of \(key)")
        }
    }
    for profile in [nil, "default", "x"] as [String?] {
        _ = try? AWSConfiguration.resolve(S3Choices(profile: profile), environment: ["HOME": "/h"], readFile: { _ in file })
    }
    return 0
}

fuzz { data, size in data.map { fuzzAWSConfig($0, size) } ?? 0 }
