import OfferCore

/// What one group commit's transaction has counted and recorded so far, so that each record after the first costs
/// little: an offer's places (`OfferUsage.offerReservations`, which grow with the offer's traffic) are counted in
/// full once per group and then only corrected, and the signatures recorded per offer are added to `offer_totals`
/// once per offer at the end of the group instead of once per record.
///
/// Exact because no other writer changes an offer's signatures while the group holds it (SQLite's write lock;
/// PostgreSQL's advisory lock per offer, which every writer of the offer takes), so the only changes are the group's
/// own records, each reported through `recorded`. The places stay true after the group only while nothing else
/// writes: a backend that can tell (SQLite's writer) keeps them for its next group, and otherwise starts afresh.
struct GroupCounts {
    /// An offer of an app, its app as stored (`LedgerNamespace.storedApp`).
    struct Offer: Hashable, Comparable {
        var app: String
        var offerId: String

        static func < (left: Offer, right: Offer) -> Bool { (left.app, left.offerId) < (right.app, right.offerId) }
    }

    /// `count` unredeemed signatures of an offer were issued after `after` (Unix ms), as of now in the transaction.
    struct Places: Equatable {
        var after: Int64
        var count: Int
    }

    private var places: [Offer: Places] = [:]
    private var issued: [Offer: Int] = [:]
    /// The budget leases the group spends from, by offer (`BudgetLeases`; PostgreSQL): none on SQLite.
    var leases: [Offer: BudgetLease] = [:]
    /// The places the group took from each lease, spent at its end.
    var leaseTaken: [Offer: Int] = [:]

    /// The places last counted for `offer` in this group, if any.
    func places(of offer: Offer) -> Places? { places[offer] }

    /// Keeps the places just counted for `offer`: the next record of the offer corrects them (counting only the
    /// signatures issued between the two moments) instead of counting every place again.
    mutating func remember(_ counted: Places, of offer: Offer) { places[offer] = counted }

    /// `signature` was recorded: it holds a place after any moment before its issue time, and adds one to its
    /// offer's total.
    mutating func recorded(_ signature: IssuedSignature) {
        let offer = Offer(app: signature.storedApp, offerId: signature.offerId)
        issued[offer, default: 0] += 1
        if let counted = places[offer], signature.issuedAt > counted.after { places[offer]?.count += 1 }
    }

    /// The signatures recorded per offer since the last call, in a fixed order (so concurrent writers update totals'
    /// rows in the same order); the places are kept.
    mutating func takeTotals() -> [(offer: Offer, issued: Int)] {
        defer { issued = [:] }
        return issued.sorted { $0.key < $1.key }.map { (offer: $0.key, issued: $0.value) }
    }

    /// The offer's places after `after`, from `known` (places after another moment, counted in this transaction)
    /// and `between(low, high)`, the places issued after `low` and at or before `high`.
    static func correct(
        _ known: Places, to after: Int64, between: (Int64, Int64) throws(LedgerError) -> Int
    ) throws(LedgerError) -> Int {
        if after == known.after { return known.count }
        // An earlier moment adds the places issued since it; a later one takes away those issued before it.
        return after < known.after
            ? known.count + (try between(after, known.after)) : known.count - (try between(known.after, after))
    }
}
