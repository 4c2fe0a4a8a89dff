import ArgumentParser
import ResumeKit

struct Retries: ExpressibleByArgument {
    var value: Int?
    init(value: Int?) { self.value = value }
    init?(argument: String) {
        if argument == "inf" { value = nil; return }
        guard let n = Int(argument), n >= 0 else { return nil }
        value = n
    }
    var defaultValueDescription: String { value.map(String.init) ?? "inf" }
}
