import Testing
@testable import ResumeKit

@Suite struct S3ConfigurationTests {
    let credentialsFile = """
        # comment
        [default]
        aws_access_key_id = AKIDDEFAULT
        aws_secret_access_key = secretdefault

        [work]
        aws_access_key_id=AKIDWORK
        aws_secret_access_key=secretwork
        aws_session_token = tokenwork
        """
    let configFile = """
        [default]
        region = eu-west-1
        s3 =
          multipart_chunksize = 16MB
        [profile work]
        region = ap-south-1
        endpoint_url = http://127.0.0.1:9000
        [profile keys-in-config]
        aws_access_key_id = AKIDCONFIG
        aws_secret_access_key = secretconfig
        """

    func files(_ path: String) -> String? {
        switch path {
        case "/home/me/.aws/credentials": credentialsFile
        case "/home/me/.aws/config": configFile
        default: nil
        }
    }

    @Test func defaultProfileFromFiles() throws {
        let s = try AWSConfiguration.resolve(S3Choices(), environment: ["HOME": "/home/me"], readFile: files)
        #expect(s.credentials == AWSCredentials(accessKeyID: "AKIDDEFAULT", secretAccessKey: "secretdefault"))
        #expect(s.region == "eu-west-1")
        #expect(s.endpoint == nil)
        #expect(s.profile == "default")
    }

    @Test func environmentKeysWinOverTheDefaultProfile() throws {
        let env = [
            "HOME": "/home/me", "AWS_ACCESS_KEY_ID": "AKIDENV", "AWS_SECRET_ACCESS_KEY": "secretenv",
            "AWS_SESSION_TOKEN": "t",
            "AWS_DEFAULT_REGION": "us-west-2",
        ]
        let s = try AWSConfiguration.resolve(S3Choices(), environment: env, readFile: files)
        #expect(
            s.credentials == AWSCredentials(accessKeyID: "AKIDENV", secretAccessKey: "secretenv", sessionToken: "t"))
        #expect(s.region == "us-west-2")
    }

    @Test func explicitProfileWinsOverEnvironmentKeys() throws {
        let env = ["HOME": "/home/me", "AWS_ACCESS_KEY_ID": "AKIDENV", "AWS_SECRET_ACCESS_KEY": "secretenv"]
        let s = try AWSConfiguration.resolve(S3Choices(profile: "work"), environment: env, readFile: files)
        #expect(
            s.credentials
                == AWSCredentials(accessKeyID: "AKIDWORK", secretAccessKey: "secretwork", sessionToken: "tokenwork"))
        #expect(s.region == "ap-south-1")
        #expect(s.endpoint == "http://127.0.0.1:9000")
    }

    @Test func awsProfileVariableAndKeysInTheConfigFile() throws {
        let s = try AWSConfiguration.resolve(
            S3Choices(), environment: ["HOME": "/home/me", "AWS_PROFILE": "keys-in-config"], readFile: files)
        #expect(s.credentials.accessKeyID == "AKIDCONFIG")
        #expect(s.region == "us-east-1")
    }

    @Test func choicesAndVariablesOrderForRegionAndEndpoint() throws {
        let env = [
            "HOME": "/home/me", "AWS_REGION": "r-env", "AWS_DEFAULT_REGION": "r-default",
            "AWS_ENDPOINT_URL": "http://a",
            "AWS_ENDPOINT_URL_S3": "http://b",
        ]
        var s = try AWSConfiguration.resolve(S3Choices(), environment: env, readFile: files)
        #expect(s.region == "r-env")
        #expect(s.endpoint == "http://b")
        s = try AWSConfiguration.resolve(
            S3Choices(region: "r-cli", endpoint: "http://c"), environment: env, readFile: files)
        #expect(s.region == "r-cli")
        #expect(s.endpoint == "http://c")
    }

    @Test func otherFileLocations() throws {
        let env = [
            "HOME": "/nowhere", "AWS_SHARED_CREDENTIALS_FILE": "/home/me/.aws/credentials",
            "AWS_CONFIG_FILE": "/home/me/.aws/config",
        ]
        let s = try AWSConfiguration.resolve(S3Choices(profile: "work"), environment: env, readFile: files)
        #expect(s.credentials.accessKeyID == "AKIDWORK")
    }

    @Test func noCredentialsSaysWhereItLooked() {
        do {
            _ = try AWSConfiguration.resolve(
                S3Choices(profile: "nope"), environment: ["HOME": "/home/me"], readFile: files)
            Issue.record("expected an error")
        } catch {
            #expect(error.exitStatus == 1)
            #expect(error.message.contains("AWS_ACCESS_KEY_ID"))
            #expect(error.message.contains("'nope'"))
            #expect(error.message.contains("/home/me/.aws/credentials"))
        }
    }

    @Test func locationsParse() throws {
        #expect(try S3Location.parse("s3://bkt/dir/file.bin") == S3Location(bucket: "bkt", key: "dir/file.bin"))
        #expect(try S3Location.parse("s3://bkt/dir/").isPrefix)
        #expect(try S3Location.parse("s3://bkt").isPrefix)
        for bad in ["s3://", "s3://ab/k", "http://bkt/k", "s3://b*t/k", "s3://\(String(repeating: "a", count: 64))/k"] {
            #expect(throws: TransferError.self) { try S3Location.parse(bad) }
        }
    }

    @Test func addressingStyle() throws {
        let object = S3Location(bucket: "bkt", key: "a b/c.bin")
        let aws = try S3Endpoint(endpoint: nil, region: "eu-west-1")
        #expect(aws.url(object) == "https://bkt.s3.eu-west-1.amazonaws.com/a%20b/c.bin")
        #expect(
            try S3Endpoint(endpoint: nil, region: "eu-west-1", forcePathStyle: true).url(object)
                == "https://s3.eu-west-1.amazonaws.com/bkt/a%20b/c.bin")
        let local = try S3Endpoint(endpoint: "http://127.0.0.1:5000", region: "us-east-1")
        #expect(local.url(object, query: "uploads=") == "http://127.0.0.1:5000/bkt/a%20b/c.bin?uploads=")
        #expect(local.address(S3Location(bucket: "bkt", key: "")).path == "/bkt")
        let minio = try S3Endpoint(endpoint: "https://minio.example.com", region: "us-east-1")
        #expect(minio.url(object) == "https://bkt.minio.example.com/a%20b/c.bin")
        #expect(minio.url(S3Location(bucket: "my.bucket", key: "k")) == "https://minio.example.com/my.bucket/k")
        #expect(throws: TransferError.self) { try S3Endpoint(endpoint: "ftp://x", region: "r") }
        #expect(throws: TransferError.self) { try S3Endpoint(endpoint: "http://user@x", region: "r") }
    }
}
