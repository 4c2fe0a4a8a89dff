import CISAL

/// CRC32 (IEEE, reflected, as zlib and S3's `x-amz-checksum-crc32`) and CRC32C (Castagnoli, as iSCSI and
/// `x-amz-checksum-crc32c`) from ISA-L, which picks the fastest instructions of the machine at run time.
/// Fed piece by piece; `value` is the checksum of everything fed so far.
struct HardwareCRC: Sendable, Equatable {
    enum Kind: Sendable { case crc32, crc32c }
    let kind: Kind
    /// ISA-L's running state: CRC32's is the checksum itself; CRC32C's is kept inverted, as `crc32_iscsi` wants it.
    private var state: UInt32

    init(_ kind: Kind) {
        self.kind = kind
        state = kind == .crc32 ? 0 : 0xFFFF_FFFF
    }

    mutating func update(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
        switch kind {
        case .crc32:
            state = crc32_gzip_refl(state, base.assumingMemoryBound(to: UInt8.self), UInt64(bytes.count))
        case .crc32c:
            // crc32_iscsi takes an Int32 length: feed at most 1 GiB at a time.
            var offset = 0
            while offset < bytes.count {
                let n = min(bytes.count - offset, 1 << 30)
                state = crc32_iscsi(
                    UnsafeMutablePointer(mutating: (base + offset).assumingMemoryBound(to: UInt8.self)), Int32(n), state
                )
                offset += n
            }
        }
    }

    var value: UInt32 { kind == .crc32 ? state : ~state }

    /// The four bytes of the checksum, most significant first (what S3's headers carry in base64).
    var bytes: [UInt8] { withUnsafeBytes(of: value.bigEndian) { Array($0) } }
}
