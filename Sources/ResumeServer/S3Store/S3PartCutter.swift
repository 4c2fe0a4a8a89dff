/// Decides how received bytes leave memory for S3: whole parts while a request runs; at its end a
/// part when enough is left, otherwise a tail object.
///
/// S3 refuses a part below 5 MiB unless it is the last one, so fewer bytes than that wait in the tail
/// object until the next request brings enough to complete a part with them (as tusd's S3 store does);
/// completing the upload stores a last tail as the last part (``S3Backend/finish(_:replacing:)``).
struct S3PartCutter: Sendable {
    /// S3's smallest part but the last.
    static let minimumPart: Int64 = 5 << 20

    enum Piece: Equatable, Sendable {
        /// Upload the first `count` buffered bytes as the next part.
        case part(Int64)
        /// Keep the buffered bytes as the tail object (the request ends short of a part).
        case tail(Int64)
    }

    /// The size of a part while a request runs (at least ``minimumPart``).
    let partSize: Int64

    init(partSize: Int64) {
        self.partSize = max(partSize, Self.minimumPart)
    }

    /// The next piece to store, or `nil` to wait for more bytes (or, ending, when nothing is left).
    /// - Parameters:
    ///   - buffered: bytes in memory, the tail's first.
    ///   - ending: the request's body is over.
    ///   - pressed: the server's uploads hold more than their memory budget and this request nothing in
    ///     flight: a part as small as S3 takes goes now rather than wait in memory to be whole.
    func next(buffered: Int64, ending: Bool, pressed: Bool = false) -> Piece? {
        if buffered >= partSize { return .part(partSize) }
        guard ending || pressed else { return nil }
        if buffered >= Self.minimumPart { return .part(buffered) }
        return ending && buffered > 0 ? .tail(buffered) : nil
    }
}
