// swift-tools-version:6.1
// libFuzzer targets for every parser of untrusted bytes (issue 22). Apart from the main package so that
// `swift build` there never needs the sanitizers; built by `make fuzz-build` with -sanitize=fuzzer,address
// and -enable-testing for `@testable import` of the parsers, which are internal. Each target's main.swift
// hands itself to libFuzzer's driver (FuzzCheck.fuzz): SwiftPM links `main` to the module's entry point.
import PackageDescription

let targets = ["FuzzResponseHead", "FuzzContentRange", "FuzzStructuredFields", "FuzzTus", "FuzzToken", "FuzzAWSConfig", "FuzzDownloadList"]

let package = Package(
    name: "resumectl-fuzz",
    dependencies: [.package(name: "resumectl", path: "..")],
    targets: [
        .target(name: "CLibFuzzer"),
        .target(name: "FuzzCheck", dependencies: ["CLibFuzzer"]),
        .executableTarget(name: "FuzzFolderListing", dependencies: [
            "FuzzCheck", .product(name: "ResumeKit", package: "resumectl"), .product(name: "ResumeMarkup", package: "resumectl"),
        ]),
        .executableTarget(name: "FuzzS3XML", dependencies: [
            "FuzzCheck", .product(name: "ResumeKit", package: "resumectl"), .product(name: "ResumeMarkup", package: "resumectl"),
        ]),
        .executableTarget(name: "FuzzMetalink", dependencies: [
            "FuzzCheck", .product(name: "ResumeKit", package: "resumectl"), .product(name: "ResumeMarkup", package: "resumectl"),
        ]),
    ] + targets.map { name in
        .executableTarget(name: name, dependencies: ["FuzzCheck", .product(name: "ResumeKit", package: "resumectl")])
    },
    swiftLanguageModes: [.v6]
)
