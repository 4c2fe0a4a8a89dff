/// A machine that can send a stream whose length is known only at its end (`upload -`).
public protocol StreamingUploadMachine: UploadMachine {
    /// More of the stream was read (`final`: its end too); throws when the protocol cannot take that much.
    mutating func extend(to newSize: Int64, final: Bool) throws(TransferError)
}
