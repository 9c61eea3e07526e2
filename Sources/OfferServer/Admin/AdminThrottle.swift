import OfferAPI
import Synchronization

/// Failed admin credentials (an unknown bearer token, a sign-in with one) counted per client address, with an
/// exponential back-off: after `freeFailures` failures each further one makes the address wait twice as long as the
/// one before (1 s, 2 s, 4 s ... up to `maxSeconds`); a failed attempt made while it waits is answered 429
/// `too_many_failed_attempts` with `Retry-After`, and counts. A valid token is always served: the token is looked
/// up first, so a colleague behind the same address (or the same proxy) is never slowed by someone else's typos.
/// Admin tokens carry 256 random bits, so guessing is not what this stops: it bounds the work and the log lines a
/// client's failures cost, and makes them visible (`offer_signer_admin_auth_failures_total`).
///
/// Time is passed in (Unix milliseconds); addresses quiet for `forgetSeconds` are forgotten, and at most
/// `maxAddresses` are kept (one goes when a new one comes to a full table), so a flood of addresses cannot grow it
/// without bound. IPv6 addresses count by their /64.
public final class AdminThrottle: Sendable {
    public struct Policy: Sendable, Equatable {
        public var freeFailures = 5
        public var maxSeconds = 900
        public var forgetSeconds = 3600
        public var maxAddresses = 10_000

        public init() {}
    }

    struct Entry {
        var failures = 0
        var blockedUntil: Int64 = 0
        var lastFailure: Int64 = 0
    }

    public let policy: Policy
    private let entries = Mutex<[ConnectionsPerAddress.Peer: Entry]>([:])

    public init(policy: Policy = Policy()) { self.policy = policy }

    /// Records a failed attempt by `client` at `now`. When the address was already waiting, returns the seconds it
    /// must wait now, this failure's doubling included (answer 429 with them); `nil` when the failure is answered as
    /// usual (401).
    public func fail(client: String, now: Int64) -> Int? {
        let key = Self.key(client)
        return entries.withLock { entries in
            var entry = entries[key] ?? Entry()
            if entry.blockedUntil <= now && now - entry.lastFailure > Int64(policy.forgetSeconds) * 1000 {
                entry = Entry()
            }
            let wasWaiting = entry.blockedUntil > now
            entry.failures += 1
            entry.lastFailure = now
            if entry.failures > policy.freeFailures {
                let exponent = min(entry.failures - policy.freeFailures - 1, 30)
                let seconds = min(1 << exponent, policy.maxSeconds)
                entry.blockedUntil = max(entry.blockedUntil, now + Int64(seconds) * 1000)
            }
            if entries[key] == nil && entries.count >= policy.maxAddresses {
                // Full: one entry goes, in constant time (the table never grows past its bound).
                entries.remove(at: entries.startIndex)
            }
            entries[key] = entry
            return wasWaiting ? Int((entry.blockedUntil - now + 999) / 1000) : nil
        }
    }

    /// What an address is counted under: the client as `ConnectionsPerAddress` counts connections (IPv4 as itself,
    /// IPv6 by its /64); an address that is neither (unknown) shares one place.
    static func key(_ client: String) -> ConnectionsPerAddress.Peer {
        ConnectionsPerAddress.Peer(text: client) ?? ConnectionsPerAddress.Peer(family: 0, bits: 0)
    }

    /// The seconds `client` must wait before a failed attempt is looked at again, or `nil`.
    public func waiting(client: String, now: Int64) -> Int? {
        let key = Self.key(client)
        return entries.withLock { entries in
            guard let entry = entries[key], entry.blockedUntil > now else { return nil }
            return Int((entry.blockedUntil - now + 999) / 1000)
        }
    }

    /// The 429 for a failed attempt made while waiting.
    static func refusal(seconds: Int) -> AdminError {
        AdminError(
            .tooManyFailedAttempts,
            "too many failed admin tokens from this address; wait \(seconds) s (a valid token is still accepted)",
            headers: [HTTPHeader("Retry-After", String(seconds))])
    }
}
