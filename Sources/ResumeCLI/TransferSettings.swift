import ResumeKit

/// What the options every transfer command takes say, as plain values. The defaults are written here once:
/// `TransferOptionGroup` declares its options with them.
struct TransferSettings: Equatable {
    var headers: [String] = []
    /// nil: retry without end (`--retries inf`).
    var retries: Int? = 10
    var retryDelay: Double = 1
    var stallTimeout = 30
    var limitRate: Int64?
    var checkpointInterval: Double = 1
    var json = false
    var quiet = false
    var verbose = false
    var stateDir: String?
    var connection = ConnectionSettings()
    var credentials = Credentials()

    var store: TokenStore { TokenStore(directory: stateDir ?? TokenStore.defaultDirectory()) }

    func client() -> TransferClient {
        var options = TransferOptions()
        options.retry = RetryPolicy(maxRetries: retries, baseDelay: retryDelay)
        options.transport.stallTimeout = stallTimeout
        options.transport.verbose = verbose
        if let limitRate {
            options.transport.maxReceiveRate = limitRate
            options.transport.maxSendRate = limitRate
        }
        options.transport.connection = connection
        options.transport.credentials = credentials
        options.computeSHA256 = json
        options.announcesID = json
        options.checkpointInterval = checkpointInterval == 0 ? .infinity : checkpointInterval
        return TransferClient(store: store, options: options, s3Answers: S3Support.answers, htmlLinks: S3Support.html)
    }
}
