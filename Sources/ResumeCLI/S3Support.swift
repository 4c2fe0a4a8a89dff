import ResumeKit

/// The libxml2 readers of this program: S3's answers and HTML folder listings (`resumectl-s3` has them;
/// `resumectl` hands S3 work and folder downloads to it).
enum S3Support {
    nonisolated(unsafe) static var answers: (any S3Answers)?
    nonisolated(unsafe) static var html: (any HTMLLinkReader)?
}
