import ArgumentParser
import ResumeKit

/// Where an `s3://` transfer goes and as whom, named as the AWS CLI names them; each falls back to the
/// environment and `~/.aws` as the AWS CLI reads them.
struct S3OptionGroup: ParsableArguments {
    @Option(
        name: .customLong("endpoint-url"),
        help: ArgumentHelp(
            "S3-compatible endpoint (MinIO, Ceph, R2 …); default $AWS_ENDPOINT_URL_S3, $AWS_ENDPOINT_URL, else AWS.",
            valueName: "url"))
    var endpointURL: String?

    @Option(
        help: ArgumentHelp(
            "AWS region; default $AWS_REGION, $AWS_DEFAULT_REGION, the profile's, else us-east-1.", valueName: "name"))
    var region: String?

    @Option(
        help: ArgumentHelp(
            "Profile of ~/.aws/credentials and ~/.aws/config (default $AWS_PROFILE, else default).", valueName: "name"))
    var profile: String?

    @Flag(
        name: .customLong("path-style"),
        help: "Address buckets as https://host/BUCKET/KEY (automatic for IP addresses and endpoints with a port).")
    var pathStyle = false

    func options(partSize: Int64? = nil, parallel: Int = 4, checksum: S3Checksum = .crc32c) -> S3Options {
        S3Options(
            choices: S3Choices(profile: profile, region: region, endpoint: endpointURL), forcePathStyle: pathStyle,
            partSize: partSize, parallel: parallel, checksum: checksum)
    }
}
