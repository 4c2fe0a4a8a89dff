// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "resumectl",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "resumectl", targets: ["resumectl"]),
        .executable(name: "resumectl-serve", targets: ["resumectl-serve"]),
        .library(name: "ResumeKit", targets: ["ResumeKit"]),
        .library(name: "ResumeServer", targets: ["ResumeServer"]),
        // For the fuzz targets of Fuzz/ (the XML and HTML readers).
        .library(name: "ResumeMarkup", targets: ["ResumeMarkup"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-http-structured-headers.git", from: "1.7.0"),
        .package(url: "https://github.com/apple/swift-crypto.git", "3.12.3"..<"5.0.0"),
        .package(url: "https://github.com/apple/swift-system.git", from: "1.8.1"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        // Only for `make docs` (a command plugin): nothing of it is built by `swift build`.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        // libcurl's headers, plus fixed-arity inline wrappers for its variadic setopt/getinfo. No program links
        // libcurl: CLibraryLoader loads it when the first transfer calls it.
        .systemLibrary(
            name: "CCurl",
            providers: [.apt(["libcurl4-openssl-dev"])]
        ),
        // The libcurl, libcrypto, ISA-L and libxml2 functions ResumeKit and ResumeMarkup call, each loading its
        // library on first use (dlopen): a command that moves no bytes (`--version`, `list`, `pause`) maps and
        // relocates none of them, and a plain download never maps libxml2. libxml2's headers live in their own
        // folder below /usr/include (Debian's libxml2-dev), named here rather than through pkg-config, whose
        // -lxml2 would link the library.
        .target(name: "CLibraryLoader", cSettings: [.unsafeFlags(["-I/usr/include/libxml2"])]),
        // ISA-L (Debian's libisal-dev): hardware CRC32 and CRC32C for S3's part checksums. Headers only, as
        // CCurl: CLibraryLoader loads the library.
        .systemLibrary(
            name: "CISAL",
            providers: [.apt(["libisal-dev"])]
        ),
        // OpenSSL's libcrypto (Debian's libssl-dev, which libcurl4-openssl-dev brings): digests and HMAC.
        // Headers only (no pkg-config: its -lcrypto would link it): CLibraryLoader loads the library.
        .systemLibrary(
            name: "CLibCrypto",
            providers: [.apt(["libssl-dev"])]
        ),
        // The proleptic Gregorian calendar in UTC, shared by the client and `serve`.
        .target(name: "UTCCalendar"),
        .target(
            name: "ResumeKit",
            dependencies: [
                "UTCCalendar",
                "CCurl",
                "CLibraryLoader",
                "CISAL",
                "CLibCrypto",
                .product(name: "RawStructuredFieldValues", package: "swift-http-structured-headers"),
                .product(name: "SystemPackage", package: "swift-system"),
            ]
        ),
        // libxml2's headers, for S3's XML answers and HTML folder listings. Headers only, as CCurl: CLibraryLoader
        // loads the library.
        .systemLibrary(
            name: "CLibXML2",
            providers: [.apt(["libxml2-dev"])]
        ),
        // The readers of markup: S3's XML answers and HTML folder listings, through libxml2's tree and HTML parsers.
        .target(
            name: "ResumeMarkup",
            dependencies: ["ResumeKit", "CLibXML2", "CLibraryLoader"],
            swiftSettings: [.unsafeFlags(["-Xcc", "-I/usr/include/libxml2"])]
        ),
        // libcrypt (Debian's libcrypt-dev): `serve --htpasswd` checks bcrypt and SHA-crypt entries with crypt_r.
        .systemLibrary(
            name: "CCrypt",
            providers: [.apt(["libcrypt-dev"])]
        ),
        // fork + prctl(PR_SET_PDEATHSIG) + execvpe for `serve --on-upload-complete`: header only, no library.
        .systemLibrary(name: "CHookSpawn"),
        // openat2(2) with RESOLVE_CACHED for downloads answered on the event loop: header only, no library.
        .systemLibrary(name: "COpenCached"),
        // mallopt(3) for `serve --store s3://`'s part-sized blocks: header only, no library.
        .systemLibrary(name: "CMalloc"),
        .target(
            name: "ResumeServer",
            dependencies: [
                "CHookSpawn",
                "COpenCached",
                "CMalloc",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Crypto", package: "swift-crypto"),
                "CCrypt",
                "UTCCalendar",
                // `--store s3://`: the client's SigV4, AWS configuration and libcurl transport, and S3's XML readers.
                "ResumeKit",
                "ResumeMarkup",
            ]
        ),
        // The command line of `resumectl`.
        .target(
            name: "ResumeCLI",
            dependencies: [
                "ResumeKit",
                "ResumeMarkup",
                "UTCCalendar",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .executableTarget(
            name: "resumectl",
            dependencies: ["ResumeCLI"]
        ),
        // `resumectl serve` runs this binary: the server's NIO and Foundation stay out of every transfer.
        .executableTarget(
            name: "resumectl-serve",
            dependencies: [
                "ResumeServer",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // A short program on ResumeKit's public API; built with everything, so it cannot rot.
        .executableTarget(
            name: "resumekit-example",
            dependencies: ["ResumeKit"],
            path: "Examples/ResumeDownload"
        ),
        .testTarget(
            name: "ResumeKitTests",
            dependencies: ["ResumeKit", "ResumeMarkup", .product(name: "Crypto", package: "swift-crypto")],
            resources: [.copy("Fixtures")]
        ),
        // The command line's own readers, without a process: what a parsed command line asks of ResumeKit.
        .testTarget(
            name: "ResumeCLITests",
            dependencies: ["ResumeCLI", "ResumeKit", .product(name: "ArgumentParser", package: "swift-argument-parser")]
        ),
        .testTarget(
            name: "EndToEndTests",
            dependencies: [
                "ResumeKit",
                "ResumeServer",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOResumableUpload", package: "swift-nio-extras"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "NIOHTTPTypesHTTP1", package: "swift-nio-extras"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
