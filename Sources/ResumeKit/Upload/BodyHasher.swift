/// libcrypto's digests and ISA-L's CRCs behind one face, so a body digest is computed by one loop.
protocol BodyHasher {
    mutating func update(bufferPointer: UnsafeRawBufferPointer)
    func digestBytes() -> [UInt8]
}

extension MessageDigest: BodyHasher {
    func digestBytes() -> [UInt8] { finalize() }
}

extension HardwareCRC: BodyHasher {
    mutating func update(bufferPointer: UnsafeRawBufferPointer) { update(bufferPointer) }
    func digestBytes() -> [UInt8] { bytes }
}
