/// One file of a batch: where it is and where it goes.
public struct BatchFile: Sendable, Equatable {
    public var path: String
    public var target: String
}
