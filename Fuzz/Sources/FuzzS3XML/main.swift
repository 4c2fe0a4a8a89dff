import FuzzCheck
import ResumeKit
import ResumeMarkup

/// S3's XML answers (libxml2 underneath). Properties: a ListParts page never holds a part number twice,
/// numbers lie in 1...10000 and sizes are not negative; listed objects have non-negative sizes.
func fuzzS3XML(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let body = bytes(data, size)
    let reader = S3Responses()
    _ = reader.error(body)
    _ = try? reader.uploadID(body)
    _ = try? reader.completedETag(body)
    if let page = try? reader.parts(body) {
        var seen = Set<Int>()
        for part in page.parts {
            require(seen.insert(part.number).inserted, "part \(part.number) listed twice")
            require((1...10_000).contains(part.number), "part number \(part.number)")
            require(part.size >= 0, "part \(part.number) of \(part.size) bytes")
        }
    }
    if let page = try? reader.objects(body) {
        for object in page.objects { require(object.size >= 0, "object \(object.key) of \(object.size) bytes") }
    }
    return 0
}

fuzz { data, size in data.map { fuzzS3XML($0, size) } ?? 0 }
