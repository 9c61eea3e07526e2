import OfferCore
import OfferStore

/// Calls to the admin store from the admin API, with its failures mapped once: the store failing is 503
/// `storage_unavailable` (its cause for the log only), a stale revision or version is the caller's 409.
enum StoreCall {
    /// A read, or any call that only fails when the store does.
    static func read<Value>(_ body: () throws(LedgerError) -> Value) throws(OfferError) -> Value {
        do {
            return try body()
        } catch {
            throw OfferError.storageUnavailable(error)
        }
    }

    /// A change: `AdminStoreError.conflict` as `conflict(current)`, the store failing as 503, other refusals
    /// (`AdminStoreError`) as they are, for the caller to map.
    @discardableResult
    static func change<Value>(conflict: (Int64) -> AdminError, _ body: () throws -> Value) throws -> Value {
        do {
            return try body()
        } catch AdminStoreError.conflict(let current) {
            throw conflict(current)
        } catch let error as LedgerError {
            throw OfferError.storageUnavailable(error)
        }
    }
}
