/// `offer-signer testkit`: test certificates and Apple-like signed data.
enum TestKitCommand {
    static func run(_ kind: String, _ arguments: ArraySlice<String>) throws -> Int32 {
        throw CommandError("testkit is not available yet")
    }
}
