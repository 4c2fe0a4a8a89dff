// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "resumectl",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "resumectl", targets: ["resumectl"]),
        .executable(name: "resumectl-serve", targets: ["resumectl-serve"]),
        .executable(name: "resumectl-s3", targets: ["resumectl-s3"]),
        .library(name: "ResumeKit", targets: ["ResumeKit"]),
        .library(name: "ResumeServer", targets: ["ResumeServer"]),
        // For the fuzz targets of Fuzz/ (S3's XML readers); linked into resumectl-s3 and resumectl-serve.
        .library(name: "ResumeS3", targets: ["ResumeS3"]),
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
        // The libcurl, libcrypto and ISA-L functions ResumeKit calls, each loading its library on first use
        // (dlopen): a command that moves no bytes (`--version`, `list`, `pause`) maps and relocates none of them.
        .target(name: "CLibraryLoader"),
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
        // libxml2, for S3's XML answers.
        .systemLibrary(
            name: "CLibXML2",
            pkgConfig: "libxml-2.0",
            providers: [.apt(["libxml2-dev"])]
        ),
        // S3's XML answers, read with libxml2, live apart from ResumeKit: a plain HTTP transfer never loads them.
        .target(
            name: "ResumeS3",
            dependencies: ["ResumeKit", "CLibXML2"]
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
                "ResumeS3",
            ]
        ),
        // The command line, shared by `resumectl` and `resumectl-s3`.
        .target(
            name: "ResumeCLI",
            dependencies: [
                "ResumeKit",
                "UTCCalendar",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .executableTarget(
            name: "resumectl",
            dependencies: ["ResumeCLI"]
        ),
        // `resumectl` hands every s3:// transfer to this program: the same commands, plus S3's XML reader
        // (libxml2), which a plain HTTP transfer then never loads.
        .executableTarget(
            name: "resumectl-s3",
            dependencies: ["ResumeCLI", "ResumeS3"]
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
            dependencies: ["ResumeKit", "ResumeS3", .product(name: "Crypto", package: "swift-crypto")],
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
