import Foundation
import Testing

@testable import ResumeServer

#if canImport(Glibc)
    import Glibc
#endif

/// Request paths as the kernel reads them (issue #53), against the built `resumectl serve`: a `/` or a
/// `.` byte is a separator or a dot-name whatever combining mark or joiner follows it, no symbolic link
/// is followed by a GET or an upload, and a path deeper than `SafePath.maxDepth` creates nothing.
@Suite("serve paths by bytes")
struct ServePathTests {
    /// The served folder (with `link` → an empty folder outside it), that outside folder, and a file to upload.
    struct World {
        let w: Workspace
        let served: String
        let outside: String
        let body: String

        init() throws {
            w = try Workspace()
            served = try w.dir.subdirectory("served")
            outside = try w.dir.subdirectory("outside")
            body = w.path("body.txt")
            try FileManager.default.createSymbolicLink(atPath: served + "/link", withDestinationPath: outside)
            try Data("body".utf8).write(to: URL(fileURLWithPath: body))
        }

        /// The folders below `served`, at any depth, its upload store aside.
        func folders() throws -> [String] {
            let all = try FileManager.default.subpathsOfDirectory(atPath: served)
            // attributesOfItem does not follow a link: `link` is no folder here.
            return try all.filter { path in
                let attributes = try FileManager.default.attributesOfItem(atPath: served + "/" + path)
                let type = attributes[.type] as? FileAttributeType
                return !path.hasPrefix(UploadStore.folderName) && type == .typeDirectory
            }
        }
    }

    static let tus = ["-H", "Tus-Resumable: 1.0.0"]

    static func withServe(_ world: World, _ body: (String) async throws -> Void) async throws {
        let (serve, port) = try await ServeProcess.start(folder: world.served)
        defer { serve.send(signal: SIGKILL) }
        try await body("http://127.0.0.1:\(port)")
    }

    @Test("an upload through a link out of the folder, a mark or joiner after its `/`, creates nothing outside")
    func combiningMarkThroughLink() async throws {
        let world = try World()
        try await Self.withServe(world) { base in
            for path in ["/link/%CC%81x", "/link/%CC%81d/x", "/link/%E2%80%8Dx", "/link/x", "/link/%CC%81d/"] {
                let put = try await CurlExchange.run(["--path-as-is", "-T", world.body, base + path])
                #expect(put.status == 403, "PUT \(path) → \(put.status)")
                let draft = try await CurlExchange.run([
                    "--path-as-is", "-H", "Expect:", "-H", "Upload-Draft-Interop-Version: 6",
                    "-H", "Upload-Complete: ?1", "-X", "POST", "-T", world.body, base + path,
                ])
                #expect(draft.status == 403, "draft POST \(path) → \(draft.status)")
            }
            let creations = [("/link/", "\u{301}x"), ("/link/", "x"), ("/link/%CC%81x", "y"), ("/", "link/\u{301}x")]
            for (target, name) in creations {
                let metadata = "filename " + Data(name.utf8).base64EncodedString()
                let create = try await CurlExchange.run(
                    Self.tus + [
                        "--path-as-is", "-X", "POST", "-H", "Upload-Length: 4", "-H", "Upload-Metadata: \(metadata)",
                        base + target,
                    ])
                // 409 for `/link/` itself: a link (not followed) already stands at that name.
                #expect([400, 403, 409].contains(create.status), "tus POST \(target) named \(name) → \(create.status)")
            }
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: world.outside).isEmpty)
        #expect(try world.folders().isEmpty)
    }

    @Test("a dot-name spelled with a combining mark after its dot is neither listed nor served")
    func combiningDotName() async throws {
        let world = try World()
        try Data("secret".utf8).write(to: URL(fileURLWithPath: world.served + "/.\u{301}secret"))
        try FileManager.default.createDirectory(atPath: world.served + "/.\u{301}d", withIntermediateDirectories: false)
        try Data("secret".utf8).write(to: URL(fileURLWithPath: world.served + "/.\u{301}d/f"))
        try await Self.withServe(world) { base in
            for path in ["/%2E%CC%81secret", "/.%CC%81secret", "/%2E%CC%81d/f", "/%2E%CC%81d/"] {
                let get = try await CurlExchange.run(["--path-as-is", "-H", "Accept: application/json", base + path])
                #expect(get.status == 404, "GET \(path) → \(get.status)")
                #expect(!String(decoding: get.body, as: UTF8.self).contains("secret"))
            }
            for accept in ["application/json", "text/html"] {
                let page = try await CurlExchange.run(["-H", "Accept: \(accept)", base + "/"])
                #expect(page.status == 200)
                let text = String(decoding: page.body, as: UTF8.self)
                #expect(!text.contains("secret") && !text.contains("%CC%81"), "\(accept): \(text)")
                #expect(!text.unicodeScalars.contains("\u{301}"), "\(accept): \(text)")
            }
            let tus = try await CurlExchange.run(
                Self.tus + [
                    "-X", "POST", "-H", "Upload-Length: 4",
                    "-H", "Upload-Metadata: filename \(Data(".\u{301}x".utf8).base64EncodedString())", base + "/",
                ])
            #expect(tus.status == 403)
        }
        #expect(!FileManager.default.fileExists(atPath: world.served + "/.\u{301}x"))
    }

    @Test("a path deeper than the limit is refused before any folder is made; one at the limit lands")
    func depthLimit() async throws {
        let world = try World()
        try await Self.withServe(world) { base in
            let deep = String(repeating: "/d", count: 5_000) + "/x"
            let put = try await CurlExchange.run(["-T", world.body, base + deep])
            #expect(put.status == 403)
            let tus = try await CurlExchange.run(
                Self.tus + [
                    "-X", "POST", "-H", "Upload-Length: 4",
                    "-H", "Upload-Metadata: filename \(Data("x".utf8).base64EncodedString())", base + deep + "/",
                ])
            #expect(tus.status == 403)
            let over = String(repeating: "/o", count: SafePath.maxDepth) + "/x"
            #expect(try await CurlExchange.run(["-T", world.body, base + over]).status == 403)
            #expect(try world.folders().isEmpty)

            let atLimit = String(repeating: "/a", count: SafePath.maxDepth - 1) + "/x"
            #expect(try await CurlExchange.run(["-T", world.body, base + atLimit]).status == 201)
            #expect(try world.folders().count == SafePath.maxDepth - 1)
        }
    }

    @Test("a link inside the folder to a file inside is refused alike on the event loop and the thread pool")
    func linkInsideRefusedEitherWay() async throws {
        let world = try World()
        try Data("inside".utf8).write(to: URL(fileURLWithPath: world.served + "/in.txt"))
        try FileManager.default.createDirectory(atPath: world.served + "/sub", withIntermediateDirectories: false)
        try Data("inside".utf8).write(to: URL(fileURLWithPath: world.served + "/sub/f.txt"))
        try FileManager.default.createSymbolicLink(atPath: world.served + "/in-link", withDestinationPath: "in.txt")
        try FileManager.default.createSymbolicLink(atPath: world.served + "/sub-link", withDestinationPath: "sub")
        try await Self.withServe(world) { base in
            // HEAD with Want-Repr-Digest is always answered on the thread pool; a plain GET tries the event loop first.
            let pool = ["-I", "-H", "Want-Repr-Digest: sha-256=1"]
            #expect(try await CurlExchange.run([base + "/in.txt"]).status == 200)
            #expect(try await CurlExchange.run(pool + [base + "/in.txt"]).status == 200)
            for path in ["/in-link", "/sub-link/f.txt"] {
                let get = try await CurlExchange.run([base + path])
                let head = try await CurlExchange.run(pool + [base + path])
                #expect(get.status == 403, "GET \(path) → \(get.status)")
                #expect(head.status == 403, "HEAD \(path) on the thread pool → \(head.status)")
                #expect(get.body.isEmpty || !String(decoding: get.body, as: UTF8.self).contains("inside"))
            }
            let page = try await CurlExchange.run(["-H", "Accept: application/json", base + "/sub-link/"])
            #expect(page.status == 403)
            let listing = try await CurlExchange.run(["-H", "Accept: application/json", base + "/"])
            let text = String(decoding: listing.body, as: UTF8.self)
            #expect(text.contains("in.txt") && !text.contains("in-link") && !text.contains("sub-link"), "\(text)")
            let put = try await CurlExchange.run(["-T", world.body, base + "/sub-link/new.txt"])
            #expect(put.status == 403)
        }
        #expect(!FileManager.default.fileExists(atPath: world.served + "/sub/new.txt"))
    }

    @Test("the splitter works on bytes: a `/` or `.` byte counts whatever follows it")
    func splitterByBytes() throws {
        #expect(try SafePath.components(ofTarget: "/link/%CC%81x") == ["link", "\u{301}x"])
        #expect(try SafePath.components(ofTarget: "/link/\u{301}x") == ["link", "\u{301}x"])
        #expect(try SafePath.components(ofTarget: "/a/%E2%80%8D/b") == ["a", "\u{200D}", "b"])
        #expect(try SafePath.components(ofTarget: "/a\u{301}?q/\u{301}#f") == ["a\u{301}"])
        #expect(try SafePath.components(ofTarget: "HTTPS://h\u{301}/x/y?z") == ["x", "y"])
        #expect(try SafePath.components(ofTarget: "http://host?x/y") == [])
        #expect(throws: PathRefusal.hidden) { try SafePath.components(ofTarget: "/%2E%CC%81secret") }
        #expect(throws: PathRefusal.hidden) { try SafePath.components(ofTarget: "/a/.\u{301}/b") }
        #expect(throws: PathRefusal.malformed) { try SafePath.components(ofTarget: "/%CC") }
        #expect(throws: PathRefusal.malformed) { try SafePath.components(ofTarget: "/a%C0%AF") }
        #expect(throws: PathRefusal.malformed) { try SafePath.components(ofTarget: "ftp://h/a") }
        let atLimit = String(repeating: "/a", count: SafePath.maxDepth)
        #expect(try SafePath.components(ofTarget: atLimit).count == SafePath.maxDepth)
        #expect(try SafePath.components(ofTarget: atLimit + "/./").count == SafePath.maxDepth)
        #expect(throws: PathRefusal.forbidden) { try SafePath.components(ofTarget: atLimit + "/b") }
        #expect(SafePath.isPlainName("\u{301}x"))
        #expect(!SafePath.isPlainName(".\u{301}x") && !SafePath.isPlainName("a/\u{301}") && !SafePath.isPlainName(""))
        #expect(SafePath.relativePath(of: "/r/\u{301}x", inside: "/r") == "\u{301}x")
    }
}
