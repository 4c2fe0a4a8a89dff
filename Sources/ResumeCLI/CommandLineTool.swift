import ResumeKit

/// The entry point of the `resumectl` and `resumectl-s3` programs.
public enum CommandLineTool {
    /// - Parameter s3: S3's XML reader, in `resumectl-s3`; `resumectl` passes nil and hands S3 work over.
    @MainActor
    public static func main(s3: (any S3Answers)?) async {
        S3Support.answers = s3
        await Resumectl.main()
    }
}
