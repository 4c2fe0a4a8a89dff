import Foundation
import Testing

/// `serve` at the resumable-upload draft's interop version 9 (draft -12), with curl as an independent client:
/// the rules that changed since 8, each on the wire.
@Suite("serve interop 9")
struct ServeInterop9Tests {
    static let v9 = ["-H", "Expect:", "-H", "Upload-Draft-Interop-Version: 9"]

    @Test(
        """
        a creation cut in two at interop 9: the 104 and the final answer name one Location; GET reports the \\
        offset; the append completes with Upload-Complete: ?1; an append after completion gets that answer again \\
        and changes nothing
        """
    )
    func uploadInTwoParts() async throws {
        let w = try Workspace()
        let digest = try makeRandomFile(path: w.path("all.bin"), size: 200_000, seed: 9)
        let all = try Data(contentsOf: URL(fileURLWithPath: w.path("all.bin")))
        try all.prefix(80_000).write(to: URL(fileURLWithPath: w.path("first.bin")))
        try all.dropFirst(80_000).write(to: URL(fileURLWithPath: w.path("rest.bin")))
        try await InProcessServe.with { served in
            let created = try await CurlExchange.run(
                Self.v9 + [
                    "-X", "POST", "-H", "Upload-Complete: ?0", "--data-binary", "@" + w.path("first.bin"),
                    served.url + "/v9.bin",
                ])
            #expect(created.status == 201)
            #expect(created["upload-complete"] == "?0" && created["upload-offset"] == "80000")
            let location = try #require(created["location"])
            #expect(created.interim.first { $0.status == 104 }?["location"] == location)

            let asked = try await CurlExchange.run(Self.v9 + [served.url + location])
            #expect(asked.status == 204 && asked["upload-offset"] == "80000", "\(asked.heads)")

            let patch =
                Self.v9 + [
                    "-X", "PATCH", "-H", "Content-Type: application/partial-upload", "-H", "Upload-Complete: ?1",
                ]
            let finished = try await CurlExchange.run(
                patch + [
                    "-H", "Upload-Offset: 80000", "--data-binary", "@" + w.path("rest.bin"), served.url + location,
                ])
            #expect(finished.status == 201 && finished["upload-complete"] == "?1")
            #expect(try sha256(file: served.path("v9.bin")) == digest)

            // A client whose last answer was lost sends its append again, from where it thought it was.
            let again = try await CurlExchange.run(
                patch + [
                    "-H", "Upload-Offset: 0", "--data-binary", "@" + w.path("first.bin"), served.url + location,
                ])
            #expect(again.status == 201 && again["upload-complete"] == "?1" && again["upload-offset"] == "200000")
            #expect(try sha256(file: served.path("v9.bin")) == digest)
        }
    }

    @Test("interop 9: a conflict says Upload-Complete: ?0 with the server's offset; a 413 names the limit")
    func conflictAndLimit() async throws {
        let w = try Workspace()
        _ = try makeRandomFile(path: w.path("part.bin"), size: 1_000, seed: 3)
        _ = try makeRandomFile(path: w.path("big.bin"), size: 3_000, seed: 4)
        try await InProcessServe.with({ $0.maxUploadSize = 2_000 }) { served in
            let created = try await CurlExchange.run(
                Self.v9 + [
                    "-X", "POST", "-H", "Upload-Complete: ?0", "--data-binary", "@" + w.path("part.bin"),
                    served.url + "/c.bin",
                ])
            let location = try #require(created["location"])
            let conflict = try await CurlExchange.run(
                Self.v9 + [
                    "-X", "PATCH", "-H", "Content-Type: application/partial-upload", "-H", "Upload-Complete: ?0",
                    "-H", "Upload-Offset: 10", "--data-binary", "@" + w.path("part.bin"), served.url + location,
                ])
            #expect(conflict.status == 409)
            #expect(conflict["upload-complete"] == "?0" && conflict["upload-offset"] == "1000")

            let tooBig = try await CurlExchange.run(
                Self.v9 + [
                    "-X", "POST", "-H", "Upload-Complete: ?1", "--data-binary", "@" + w.path("big.bin"),
                    served.url + "/big.bin",
                ])
            #expect(tooBig.status == 413 && tooBig["upload-limit"] == "max-size=2000")
            #expect(tooBig["upload-complete"] == "?0")
        }
    }
}
