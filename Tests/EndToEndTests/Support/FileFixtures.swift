import Crypto
import Foundation

/// SplitMix64: tiny, fast and fully determined by its seed, so a failing test can be replayed byte for byte.
public struct SeededGenerator: RandomNumberGenerator, Sendable {
    private var state: UInt64

    public init(seed: UInt64) { self.state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// Fills `buffer` with the next bytes of the stream (8 bytes per step, little-endian).
    public mutating func fill(_ buffer: UnsafeMutableRawBufferPointer) {
        var offset = 0
        while offset + 8 <= buffer.count {
            buffer.storeBytes(of: next().littleEndian, toByteOffset: offset, as: UInt64.self)
            offset += 8
        }
        if offset < buffer.count {
            var last = next().littleEndian
            withUnsafeBytes(of: &last) { tail in
                for i in 0..<(buffer.count - offset) { buffer[offset + i] = tail[i] }
            }
        }
    }
}

/// `count` deterministic pseudo-random bytes; the same seed gives the same bytes as `makeRandomFile`.
public func randomBytes(count: Int, seed: UInt64) -> [UInt8] {
    var generator = SeededGenerator(seed: seed)
    return [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
        generator.fill(UnsafeMutableRawBufferPointer(buffer))
        initialized = count
    }
}

/// Writes `size` deterministic bytes to `path` in 1 MiB chunks (constant memory, any size) and returns
/// their SHA-256 as lowercase hex, computed on the way so a test need not read the file back.
///
/// The stream is one SplitMix64 sequence, so a file of size N is a prefix of the file of size M > N with
/// the same seed.
@discardableResult
public func makeRandomFile(path: String, size: Int, seed: UInt64 = 1) throws -> String {
    guard FileManager.default.createFile(atPath: path, contents: nil) else {
        throw SupportError("cannot create \(path)")
    }
    let handle = try FileHandle(forWritingAtPath: path).orThrow("cannot open \(path) for writing")
    defer { try? handle.close() }
    var generator = SeededGenerator(seed: seed)
    var hasher = SHA256()
    let chunkSize = 1 << 20
    let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: chunkSize, alignment: 8)
    defer { chunk.deallocate() }
    var remaining = size
    while remaining > 0 {
        let n = min(remaining, chunkSize)
        let slice = UnsafeMutableRawBufferPointer(rebasing: chunk[0..<n])
        generator.fill(slice)
        hasher.update(bufferPointer: UnsafeRawBufferPointer(slice))
        try handle.write(contentsOf: Data(bytesNoCopy: slice.baseAddress!, count: n, deallocator: .none))
        remaining -= n
    }
    return lowercaseHex(hasher.finalize())
}

/// SHA-256 of a file as lowercase hex, read in 1 MiB chunks.
public func sha256(file path: String) throws -> String {
    let handle = try FileHandle(forReadingAtPath: path).orThrow("cannot open \(path) for reading")
    defer { try? handle.close() }
    var hasher = SHA256()
    while let data = try handle.read(upToCount: 1 << 20), !data.isEmpty {
        hasher.update(data: data)
    }
    return lowercaseHex(hasher.finalize())
}

/// SHA-256 of bytes in memory as lowercase hex.
public func sha256<Bytes: DataProtocol>(_ bytes: Bytes) -> String {
    lowercaseHex(SHA256.hash(data: bytes))
}

func lowercaseHex(_ digest: some Sequence<UInt8>) -> String {
    digest.map { byte in
        let s = String(byte, radix: 16)
        return byte < 16 ? "0" + s : s
    }.joined()
}

extension Optional {
    func orThrow(_ message: @autoclosure () -> String) throws -> Wrapped {
        guard let value = self else { throw SupportError(message()) }
        return value
    }
}

/// The data files of unfinished uploads that `serve` keeps for `folder` (its hidden store), and any temp
/// file an earlier release left beside a destination (`.NAME.upload-HEX`).
public func serveUploadLeftovers(_ folder: String) -> [String] {
    let names = FileManager.default.enumerator(atPath: folder)?.allObjects as? [String] ?? []
    return names.filter { ($0.hasPrefix(".resumectl-uploads/") && $0.hasSuffix(".data")) || $0.contains(".upload-") }
}
