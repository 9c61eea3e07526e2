import OfferCore
import OfferServer

/// `offer-signer explain`: the full decision trace of one offer for given signed data, for ops.
enum ExplainCommand {
    static func run(_ arguments: ArraySlice<String>) throws -> Int32 {
        throw CommandError("explain is not available yet")
    }
}
