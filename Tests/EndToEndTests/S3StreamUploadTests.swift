import Foundation
import Testing

/// `producer | resumectl upload - s3://BUCKET/KEY` against moto with SigV4 checked: parts cut from the
/// spool, each acknowledged part given back; a kill -9 before the end takes the same stream again (checked
/// against the ledger and the spool before any part is sent) and refuses another (65); a kill after the end
/// finishes from the spool.
@Suite(.serialized) struct S3StreamUploadTests: StreamPipelines {
    @Test func aStreamBecomesTheObject() async throws {
        let s = try await S3Scene()
        let (r, code) = try await pipeline(
            s.w, producer: "head -c 23000000 /dev/urandom | tee >(sha256sum > \(s.w.path("sum")))",
            ["upload", "-", s.url("s.bin"), "--endpoint-url", s.moto.endpoint, "--part-size", "5M", "--json"],
            environment: s.moto.environment(home: s.home))
        #expect(code == 0, "\(r)")
        let sum = try String(contentsOfFile: s.w.path("sum"), encoding: .utf8)
        #expect(sum.hasPrefix(try await s.moto.sha256(s.bucket, "s.bin")), "\(sum)")
        #expect(events(r.stdout).first("completed")?["bytes"] as? Int == 23_000_000, "\(r.stdout)")
        // Five parts of 5 MiB: the object's ETag says how many S3 assembled.
        #expect(try await s.moto.head(s.bucket, "s.bin").etag.hasSuffix("-5\""))
        #expect(try await s.moto.uploads(s.bucket).isEmpty)
        #expect(try s.w.tokens().isEmpty && spoolFiles(s.w).isEmpty)
    }

    @Test func killedBeforeTheEndTheSameStreamFinishesAndAnotherIs65() async throws {
        let s = try await S3Scene()
        let env = s.moto.environment(home: s.home)
        let digest = try makeRandomFile(path: s.w.path("www/src.bin"), size: 30_000_000, seed: 61)
        _ = try makeRandomFile(path: s.w.path("www/other.bin"), size: 30_000_000, seed: 62)
        let id = try await killed(
            s.w, producer: "cat \(s.w.path("www/src.bin"))", url: s.url("r.bin"),
            extra: ["--endpoint-url", s.moto.endpoint, "--part-size", "5M", "--spool-max", "16M"], environment: env
        ) { $0["ended"] as? Bool == false && ($0["start"] as? Int ?? 0) > 0 }
        let upload = try s.w.token(id)["upload"] as? [String: Any]
        #expect((upload?["s3"] as? [String: Any])?["uploadId"] != nil, "\(String(describing: upload))")
        let other = try await resume(s.w, id, stdin: contents(s.w.path("www/other.bin")), environment: env)
        #expect(other.status == 65, "\(other)")
        #expect(other.stderr.contains("differs"), "\(other)")
        #expect(try s.w.tokens() == [id], "the token stays for the right stream")
        let r = try await resume(
            s.w, id, stdin: contents(s.w.path("www/src.bin")), environment: env, timeout: .seconds(120))
        #expect(r.status == 0, "\(r)")
        #expect(try await s.moto.sha256(s.bucket, "r.bin") == digest)
        #expect(try s.w.tokens().isEmpty && spoolFiles(s.w).isEmpty)
    }

    @Test func killedAfterTheEndItFinishesFromTheSpool() async throws {
        let s = try await S3Scene()
        let env = s.moto.environment(home: s.home)
        let digest = try makeRandomFile(path: s.w.path("www/src.bin"), size: 12_000_000, seed: 63)
        let id = try await killed(
            s.w, producer: "cat \(s.w.path("www/src.bin"))", url: s.url("e.bin"),
            extra: ["--endpoint-url", s.moto.endpoint, "--part-size", "5M"], environment: env
        ) { $0["ended"] as? Bool == true }
        let r = try await resume(s.w, id, environment: env)
        #expect(r.status == 0, "\(r)")
        #expect(try await s.moto.sha256(s.bucket, "e.bin") == digest)
        #expect(try s.w.tokens().isEmpty && spoolFiles(s.w).isEmpty)
    }
}
