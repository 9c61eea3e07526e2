import Dispatch
import Foundation
import OfferCore
import Synchronization
import Testing

@testable import OfferStore

/// Every ledger keeps App Attest's state alike: the same suite runs against each backend.
@Suite("Ledgers keep App Attest's challenges once and its keys' counters upwards")
struct AppAttestLedgerTests {
    typealias Kind = LedgerTests.Kind
    static let now = LedgerTests.now

    let scratch: ScratchFolder
    let schemas = PostgreSQLTestSchemas()

    init() throws { scratch = try ScratchFolder() }

    /// Two ledgers on the same store, as two replicas (SQLite: two opens of one file).
    func make(_ kind: Kind) throws -> (any Ledger, any Ledger) {
        switch kind {
        case .memory:
            let ledger = SQLLedger.inMemory()
            return (ledger, ledger)
        case .sqlite:
            let path = scratch.file("ledger.sqlite")
            return (try SQLLedger(sqlite: path), try SQLLedger(sqlite: path))
        case .postgresql:
            let schema = try schemas.make()
            return (
                try SQLLedger(postgresql: schema.configuration(), connections: 4),
                try SQLLedger(postgresql: schema.configuration(), connections: 4)
            )
        }
    }

    static let key = AttestedKey(
        keyId: Array(repeating: 7, count: 32), publicKey: [0x04] + Array(repeating: 1, count: 64), receipt: [1, 2, 3],
        environment: .production)

    @Test("a challenge is taken back once, by any replica, and not after it expired", arguments: Kind.allCases)
    func challenges(kind: Kind) throws {
        let (one, two) = try make(kind)
        let challenge = Array(repeating: UInt8(9), count: 32)
        try one.issueChallenge(bundleId: "b", challenge: challenge, expiresAt: Self.now + 120_000, now: Self.now)
        #expect(try two.takeChallenge(bundleId: "other", challenge: challenge, now: Self.now) == .unknown)
        #expect(try two.takeChallenge(bundleId: "b", challenge: challenge, now: Self.now) == .taken)
        #expect(try one.takeChallenge(bundleId: "b", challenge: challenge, now: Self.now) == .unknown)
        let late = Array(repeating: UInt8(8), count: 32)
        try one.issueChallenge(bundleId: "b", challenge: late, expiresAt: Self.now + 120_000, now: Self.now)
        #expect(try two.takeChallenge(bundleId: "b", challenge: late, now: Self.now + 120_000) == .expired)
        #expect(try two.takeChallenge(bundleId: "b", challenge: late, now: Self.now + 120_000) == .unknown)
    }

    @Test(
        "a key is kept once; its counter only rises, and of two replicas taking the same counter exactly one wins",
        arguments: Kind.allCases)
    func counters(kind: Kind) throws {
        let (one, two) = try make(kind)
        #expect(try one.saveKey(bundleId: "b", key: Self.key, at: Self.now))
        #expect(try !two.saveKey(bundleId: "b", key: Self.key, at: Self.now + 1))
        let stored = try #require(try two.appAttestKey(bundleId: "b", keyId: Self.key.keyId))
        #expect(stored.key == Self.key && stored.counter == 0 && stored.revokedAt == nil)
        #expect(try take(one, counter: 1, issuedBy: two) == .accepted)
        #expect(try take(two, counter: 1, issuedBy: one) == .counterNotIncreasing)
        #expect(try take(two, counter: 0, issuedBy: two) == .counterNotIncreasing)
        // A challenge taken once is gone, even when its assertion lost on the counter; one past its time is expired.
        let used = Self.challenge(200)
        try one.issueChallenge(bundleId: "b", challenge: used, expiresAt: Self.now + 120_000, now: Self.now)
        #expect(try accept(two, used, counter: 1) == .counterNotIncreasing)
        #expect(try accept(one, used, counter: 2) == .challengeUnknown)
        let late = Self.challenge(201)
        try one.issueChallenge(bundleId: "b", challenge: late, expiresAt: Self.now, now: Self.now)
        #expect(try accept(two, late, counter: 2) == .challengeExpired)
        #expect(try accept(two, late, counter: 2) == .challengeUnknown)
        // Racing: for each counter from 2 to 41, both replicas take the same challenge and counter at once; each is
        // won once.
        for counter in 2...41 {
            try one.issueChallenge(
                bundleId: "b", challenge: Self.challenge(UInt8(counter)), expiresAt: Self.now + 120_000, now: Self.now)
        }
        let wins = Mutex([UInt32: Int]())
        DispatchQueue.concurrentPerform(iterations: 80) { index in
            let ledger = index % 2 == 0 ? one : two
            let counter = UInt32(2 + index / 2)
            if (try? accept(ledger, Self.challenge(UInt8(counter)), counter: counter)) == .accepted {
                wins.withLock { $0[counter, default: 0] += 1 }
            }
        }
        // Never both replicas for one counter (a replay taken twice); a counter overtaken by a higher one loses.
        #expect(wins.withLock { $0.values.allSatisfy { $0 == 1 } })
        #expect(wins.withLock { $0[41] } == 1)
        #expect(try one.appAttestKey(bundleId: "b", keyId: Self.key.keyId)?.counter == 41)
        #expect(try one.revokeKey(bundleId: "b", keyId: Self.key.keyId, at: Self.now + 5))
        #expect(try take(two, counter: 100, issuedBy: one) == .revoked)
        #expect(try two.appAttestKeys(bundleId: nil, limit: 10).map(\.revokedAt) == [Self.now + 5])
        #expect(try two.appAttestKeys(bundleId: "other", limit: 10).isEmpty)
        #expect(try one.appAttestKeyCounts(bundleId: "b") == (0, 1) && one.appAttestKeyCounts(bundleId: "x") == (0, 0))
        #expect(try one.saveKey(bundleId: "b", key: Self.other, at: Self.now + 9))
        #expect(try two.appAttestKeyCounts(bundleId: "b") == (1, 1))
        #expect(try two.appAttestKeys(bundleId: "b", limit: 1).map(\.key.keyId) == [Self.other.keyId])
        #expect(try two.appAttestKeys(bundleId: "b", limit: 1).first?.key.receipt == [])
    }

    static let other = AttestedKey(
        keyId: Array(repeating: 8, count: 32), publicKey: [0x04] + Array(repeating: 2, count: 64), receipt: [4],
        environment: .production)

    static func challenge(_ byte: UInt8) -> [UInt8] { Array(repeating: byte, count: 32) }

    func accept(_ ledger: any Ledger, _ challenge: [UInt8], counter: UInt32) throws -> AssertionAcceptance {
        try ledger.acceptAssertion(
            bundleId: "b", keyId: Self.key.keyId, challenge: challenge, counter: counter, now: Self.now)
    }

    /// An assertion with `counter` over a fresh challenge that `issuer` handed out.
    func take(_ ledger: any Ledger, counter: UInt32, issuedBy issuer: any Ledger) throws -> AssertionAcceptance {
        let challenge = AppAttestChallenge.make()
        try issuer.issueChallenge(bundleId: "b", challenge: challenge, expiresAt: Self.now + 120_000, now: Self.now)
        return try accept(ledger, challenge, counter: counter)
    }
}
