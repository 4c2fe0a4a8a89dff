import ResumeKit

/// The S3 answer reader of this program (`resumectl-s3` has one; `resumectl` hands S3 work to it).
enum S3Support {
    nonisolated(unsafe) static var answers: (any S3Answers)?
}
