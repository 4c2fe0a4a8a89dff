/// What `upload --protocol` asks for: one protocol, or `auto` (the token's, else one OPTIONS probe).
public enum UploadProtocolChoice: String, Sendable, CaseIterable {
    case auto, ietf, tus, plain
}
