import ArgumentParser
import Glibc

@main
struct Resumectl: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "resumectl",
        abstract: "Large HTTP transfers that survive dropped connections, Ctrl-C, kill -9 and reboots.",
        version: "0.1.0",
        subcommands: [
            Download.self, Upload.self, Pause.self, Resume.self, List.self, Show.self, Cancel.self,
        ]
    )
}
