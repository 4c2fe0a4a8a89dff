/// The version of ResumeKit and of the `resumectl` tool.
public enum ResumeKitVersion {
    public static let string = "0.1.0"
}
