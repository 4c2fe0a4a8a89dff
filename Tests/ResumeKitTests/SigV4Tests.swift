import Testing
@testable import ResumeKit

/// The worked examples of AWS's "Signature Calculations for the Authorization Header: Transferring Payload
/// in a Single Chunk" (S3 API reference), recomputed exactly.
@Suite struct SigV4Tests {
    let signer = SigV4Signer(
        credentials: AWSCredentials(
            accessKeyID: "AKIAIOSFODNN7EXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
        region: "us-east-1")
    /// 2013-05-24T00:00:00Z
    let may24: Int64 = 1_369_353_600
    let host = "examplebucket.s3.amazonaws.com"

    @Test func getObjectWithRange() {
        let signed = signer.sign(
            .init(
                method: "GET", host: host, path: "/test.txt", headers: ["Range": "bytes=0-9"],
                payloadHash: SigV4Signer.emptyPayloadHash),
            at: may24)
        #expect(signed.signature == "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41")
        #expect(
            signed.headers["Authorization"]
                == "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,"
                + "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,"
                + "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"
        )
        #expect(signed.headers["x-amz-date"] == "20130524T000000Z")
        #expect(
            signed.canonicalRequest == """
                GET
                /test.txt

                host:examplebucket.s3.amazonaws.com
                range:bytes=0-9
                x-amz-content-sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
                x-amz-date:20130524T000000Z

                host;range;x-amz-content-sha256;x-amz-date
                e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
                """)
    }

    @Test func putObject() {
        let payload = SigV4Signer.sha256Hex("Welcome to Amazon S3.")
        #expect(payload == "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072")
        let signed = signer.sign(
            .init(
                method: "PUT", host: host, path: "/" + S3Encoding.path("test$file.text"),
                headers: ["Date": "Fri, 24 May 2013 00:00:00 GMT", "x-amz-storage-class": "REDUCED_REDUNDANCY"],
                payloadHash: payload),
            at: may24)
        #expect(signed.canonicalRequest.hasPrefix("PUT\n/test%24file.text\n\n"))
        #expect(signed.signature == "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd")
    }

    @Test func getBucketLifecycleWithValuelessParameter() {
        let signed = signer.sign(
            .init(
                method: "GET", host: host, path: "/", query: [("lifecycle", "")],
                payloadHash: SigV4Signer.emptyPayloadHash), at: may24)
        #expect(signed.query == "lifecycle=")
        #expect(signed.signature == "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543")
    }

    @Test func listObjectsQuerySortedAndEncoded() {
        let signed = signer.sign(
            .init(
                method: "GET", host: host, path: "/", query: [("prefix", "J"), ("max-keys", "2")],
                payloadHash: SigV4Signer.emptyPayloadHash),
            at: may24)
        #expect(signed.query == "max-keys=2&prefix=J")
        #expect(signed.signature == "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7")
    }

    @Test func sessionTokenIsSignedAndSecretsStayOutOfDescriptions() {
        var withToken = signer
        withToken.credentials.sessionToken = "FQoGZXIvYXdzEXAMPLETOKEN"
        let signed = withToken.sign(
            .init(method: "GET", host: host, path: "/k", payloadHash: SigV4Signer.unsignedPayload), at: may24)
        #expect(signed.headers["x-amz-security-token"] == "FQoGZXIvYXdzEXAMPLETOKEN")
        #expect(
            signed.headers["Authorization"]!.contains(
                "SignedHeaders=host;x-amz-content-sha256;x-amz-date;x-amz-security-token,"))
        #expect(
            signed.signature
                != signer.sign(
                    .init(method: "GET", host: host, path: "/k", payloadHash: SigV4Signer.unsignedPayload), at: may24
                ).signature)
        #expect(!"\(withToken.credentials)".contains("EXAMPLEKEY"))
        #expect(!"\(withToken.credentials)".contains("TOKEN"))
    }

    @Test func encodingFollowsAWSRules() {
        #expect(S3Encoding.component("a b/c~d_e-f.g*h+i%") == "a%20b%2Fc~d_e-f.g%2Ah%2Bi%25")
        #expect(S3Encoding.path("dir/sub dir/é.txt") == "dir/sub%20dir/%C3%A9.txt")
        #expect(
            S3Encoding.canonicalQuery([("uploadId", "a/b"), ("partNumber", "2"), ("uploads", "")])
                == "partNumber=2&uploadId=a%2Fb&uploads=")
        #expect(
            S3Encoding.canonicalQuery([("prefix", "pre/"), ("list-type", "2"), ("delimiter", "/")])
                == "delimiter=%2F&list-type=2&prefix=pre%2F")
    }

    @Test(arguments: [
        (Int64(0), "19700101", "19700101T000000Z"),
        (Int64(1_369_353_600), "20130524", "20130524T000000Z"),
        (Int64(951_782_400 + 86_399), "20000229", "20000229T235959Z"),
        (Int64(1_795_251_600), "20261121", "20261121T090000Z"),
    ])
    func timestamps(seconds: Int64, date: String, dateTime: String) {
        let stamp = AWSTimestamp(seconds)
        #expect(stamp.date == date)
        #expect(stamp.dateTime == dateTime)
    }
}

/// The per-request hook the transport calls: it must sign exactly what goes on the wire.
@Suite struct S3RequestSignerTests {
    let hook = S3RequestSigner(
        signer: SigV4Signer(
            credentials: AWSCredentials(
                accessKeyID: "AKIAIOSFODNN7EXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
            region: "us-east-1"),
        clock: { 1_369_353_600 })

    @Test func signsAGetAsAWSsExample() {
        var request = TransferRequest(
            method: "GET", url: "https://examplebucket.s3.amazonaws.com/test.txt", headers: ["Range": "bytes=0-9"])
        hook.sign(&request)
        #expect(
            request.headers["Authorization"]?.hasSuffix(
                "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41") == true)
        #expect(request.url == "https://examplebucket.s3.amazonaws.com/test.txt")
    }

    @Test func sendsTheQueryInTheFormItSigned() {
        var request = TransferRequest(method: "GET", url: "http://127.0.0.1:9000/bkt?prefix=a%2Fb&list-type=2&uploads")
        hook.sign(&request)
        #expect(request.url == "http://127.0.0.1:9000/bkt?list-type=2&prefix=a%2Fb&uploads=")
        #expect(request.headers["x-amz-content-sha256"] == SigV4Signer.emptyPayloadHash)
    }

    @Test func aBodyIsUnsignedUnlessItsHashIsGiven() {
        var part = TransferRequest(
            method: "PUT", url: "http://h/b/k?partNumber=1&uploadId=x", body: RequestBody(bytes: [1, 2]))
        hook.sign(&part)
        #expect(part.headers["x-amz-content-sha256"] == SigV4Signer.unsignedPayload)
        var complete = TransferRequest(
            method: "POST", url: "http://h/b/k?uploadId=x", headers: ["x-amz-content-sha256": "abc"],
            body: RequestBody(bytes: [1]))
        hook.sign(&complete)
        #expect(complete.headers["x-amz-content-sha256"] == "abc")
        #expect(complete.headers.fields.filter { $0.name.lowercased() == "x-amz-content-sha256" }.count == 1)
    }

    @Test func keysOfAPrefixStayInsideTheFolder() {
        #expect(S3Listing.relativePath("a/b.txt") == "a/b.txt")
        #expect(S3Listing.relativePath("../etc/passwd") == nil)
        #expect(S3Listing.relativePath("a/../../b") == nil)
        #expect(S3Listing.relativePath("/abs") == nil)
        #expect(S3Listing.relativePath("a//b") == nil)
        #expect(S3Listing.relativePath("") == nil)
    }
}

@Suite struct VerboseTraceTests {
    @Test func credentialHeadersAreRedactedOnlyWhenSent() {
        #expect(
            VerboseTrace.redacted("Authorization: AWS4-HMAC-SHA256 Credential=AKIA/x", sent: true)
                == "Authorization: [redacted]")
        #expect(VerboseTrace.redacted("X-Amz-Security-Token: abc", sent: true) == "X-Amz-Security-Token: [redacted]")
        #expect(VerboseTrace.redacted("x-amz-date: 20130524T000000Z", sent: true) == "x-amz-date: 20130524T000000Z")
        #expect(VerboseTrace.redacted("Set-Cookie: a=b", sent: false) == "Set-Cookie: a=b")
    }
}
