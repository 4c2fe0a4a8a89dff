import Foundation

/// A fresh path in the system's temporary folder, unique to the call: `prefix-UUID` followed by `suffix`.
/// Nothing is created; tests that need a folder make it and remove it.
func scratchPath(_ prefix: String, suffix: String = "") -> String {
    FileManager.default.temporaryDirectory.path + "/\(prefix)-\(UUID().uuidString)\(suffix)"
}
