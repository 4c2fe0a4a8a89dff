// Placeholder: the embedded server lands with `resumectl serve`.
public enum ResumeServerModule {}
