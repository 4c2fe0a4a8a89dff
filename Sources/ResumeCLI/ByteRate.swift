import ArgumentParser
import ResumeKit

struct ByteRate: ExpressibleByArgument {
    var bytesPerSecond: Int64
    init?(argument: String) {
        var text = Substring(argument)
        var factor: Int64 = 1
        switch text.last {
        case "k", "K": factor = 1024; text = text.dropLast()
        case "m", "M": factor = 1024 * 1024; text = text.dropLast()
        case "g", "G": factor = 1024 * 1024 * 1024; text = text.dropLast()
        default: break
        }
        guard let n = Int64(text), n > 0 else { return nil }
        bytesPerSecond = n * factor
    }
}
