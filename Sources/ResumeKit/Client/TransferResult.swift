/// The result of `resume`, for either direction.
public enum TransferResult: Sendable, Equatable {
    case downloaded(DownloadResult)
    case uploaded(UploadResult)
}
