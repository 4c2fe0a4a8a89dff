import ResumeKit

/// The entry point of the `resumectl` and `resumectl-s3` programs.
public enum CommandLineTool {
    /// - Parameters:
    ///   - s3: S3's XML reader, in `resumectl-s3`; `resumectl` passes nil and hands S3 work over.
    ///   - html: the HTML reader of folder listings, in `resumectl-s3` too; `resumectl` hands folder downloads over.
    @MainActor
    public static func main(s3: (any S3Answers)?, html: (any HTMLLinkReader)? = nil) async {
        S3Support.answers = s3
        S3Support.html = html
        await Resumectl.main()
    }
}
