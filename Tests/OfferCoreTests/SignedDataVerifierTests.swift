import Foundation
import OfferAPI
import OfferCrypto
import OfferTesting
import Testing

@testable import OfferCore

@Suite("App Store signed data is verified as Apple's SignedDataVerifier does")
struct SignedDataVerifierTests {
    static let now: Int64 = 1_796_000_000_000
    static let bundleId = "com.example.app"

    static func fixture(_ name: String) throws -> [UInt8] {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/apple/\(name)")
        return Array(try Data(contentsOf: url))
    }

    func makeFactory() throws -> SignedDataFactory {
        try SignedDataFactory.make(notBefore: Self.now / 1000 - 86_400, notAfter: Self.now / 1000 + 86_400)
    }

    func transaction(signedDate: Int64 = now, bundleId: String = bundleId, environment: String = "Sandbox") -> JSONValue
    {
        SignedDataFactory.subscriptionTransaction(
            bundleId: bundleId, purchaseDate: signedDate - 1000, expiresDate: signedDate + 1000, signedDate: signedDate,
            environment: environment)
    }

    @Test("Apple's real sandbox transaction verifies against Apple Root CA - G3")
    func realAppleTransaction() throws {
        let root = try Certificate(der: try Self.fixture("AppleRootCA-G3.cer"))
        let verifier = AppVerifier(trustedRoots: [root], allowedEnvironments: ["Sandbox"])
        let token = String(decoding: try Self.fixture("sandbox-consumable-transaction.jws"), as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let payload = try verifier.verify(token, kind: .transaction, bundleId: "com.goodheartapp")
        #expect(payload["transactionId"] == .string("2000000847061981"))
        #expect(payload["productId"] == .string("gh_super_good_ticket_1"))
        #expect(verifier.cachedChainCount == 1)
        #expect(throws: SignedDataError(.wrongApp, "signed data is for another app")) {
            _ = try verifier.verify(token, kind: .transaction, bundleId: "com.example.app")
        }
        let productionOnly = AppVerifier(trustedRoots: [root], allowedEnvironments: ["Production"])
        #expect {
            _ = try productionOnly.verify(token, kind: .transaction, bundleId: "com.goodheartapp")
        } throws: { ($0 as? SignedDataError)?.reason == .wrongEnvironment }
    }

    enum Part: Int, CaseIterable, Sendable { case header, payload, signature }

    @Test(
        "one changed byte in the header, the payload or the signature of Apple's real transaction fails",
        arguments: Part.allCases)
    func realAppleTransactionTampered(part: Part) throws {
        let root = try Certificate(der: try Self.fixture("AppleRootCA-G3.cer"))
        let verifier = AppVerifier(trustedRoots: [root], allowedEnvironments: ["Sandbox"])
        let token = String(decoding: try Self.fixture("sandbox-consumable-transaction.jws"), as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(throws: Never.self) { _ = try verifier.verify(token, kind: .transaction, bundleId: "com.goodheartapp") }
        let segments = token.split(separator: ".").map { Array($0.utf8) }
        // The middle of the chosen segment, so the change lands inside it whatever its length.
        let start = segments[..<part.rawValue].reduce(0) { $0 + $1.count + 1 }
        let index = start + segments[part.rawValue].count / 2
        var bytes = Array(token.utf8)
        bytes[index] = bytes[index] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        #expect(throws: SignedDataError.self) {
            _ = try verifier.verify(
                String(decoding: bytes, as: UTF8.self), kind: .transaction, bundleId: "com.goodheartapp")
        }
    }

    @Test("the chain is checked at signedDate: data signed while the leaf was valid verifies later too")
    func validationTimeIsSignedDate() throws {
        let factory = try makeFactory()
        let verifier = AppVerifier(trustedRoots: [factory.root.certificate], allowedEnvironments: ["Sandbox"])
        #expect(throws: Never.self) {
            _ = try verifier.verify(try factory.sign(transaction()), kind: .transaction, bundleId: Self.bundleId)
        }
        let afterExpiry = transaction(signedDate: Self.now + 2 * 86_400_000)
        #expect {
            _ = try verifier.verify(try factory.sign(afterExpiry), kind: .transaction, bundleId: Self.bundleId)
        } throws: { ($0 as? SignedDataError)?.reason == .untrustedChain }
    }

    /// A policy of another kind of signed data (as notifications will bring): the chain check is reused as is.
    struct NotificationTypePolicy: SignedDataPolicy {
        func check(_ data: VerifiedJWS) throws(SignedDataError) {
            guard data.payload["notificationType"]?.stringValue == "SUBSCRIBED" else {
                throw SignedDataError(.malformed, "not a SUBSCRIBED notification")
            }
        }
    }

    @Test("the chain check composes with another kind's own payload policy")
    func customPolicy() throws {
        let factory = try makeFactory()
        let verifier = SignedDataVerifier(trustedRoots: [factory.root.certificate])
        let notification: JSONValue = .object([
            "notificationType": .string("SUBSCRIBED"), "signedDate": .int(Self.now),
        ])
        let verify = { (token: String) throws(SignedDataError) -> VerifiedJWS in
            try verifier.verify(
                token, signingDate: { $0["signedDate"] }, selfSignedEnvironment: { _ in nil }, allowSelfSigned: false,
                now: Self.now, policies: [NotificationTypePolicy()])
        }
        let verified = try verify(try factory.sign(notification))
        #expect(verified.origin == .appStore)
        #expect(verified.signedDate == Self.now)
        #expect(throws: SignedDataError(.malformed, "not a SUBSCRIBED notification")) {
            _ = try verify(
                try factory.sign(.object(["notificationType": .string("EXPIRED"), "signedDate": .int(Self.now)])))
        }
        // The chain still decides first: the same payload under an unknown root is untrusted, whatever the policy.
        let stranger = try makeFactory()
        #expect {
            _ = try verify(try stranger.sign(notification))
        } throws: { ($0 as? SignedDataError)?.reason == .untrustedChain }
    }

    @Test("verified chains are cached and the cache is bounded")
    func cache() throws {
        let factories = try (0..<3).map { _ in try makeFactory() }
        let verifier = AppVerifier(
            trustedRoots: factories.map(\.root.certificate), allowedEnvironments: ["Sandbox"], cacheCapacity: 2)
        for factory in factories {
            for _ in 0..<3 {
                _ = try verifier.verify(try factory.sign(transaction()), kind: .transaction, bundleId: Self.bundleId)
            }
        }
        #expect(verifier.cachedChainCount == 2)
        // A cached chain still needs a valid signature over the data.
        let token = try factories[2].sign(transaction())
        let forged = token.dropLast(3) + (token.hasSuffix("AAA") ? "BBB" : "AAA")
        #expect {
            _ = try verifier.verify(String(forged), kind: .transaction, bundleId: Self.bundleId)
        } throws: { ($0 as? SignedDataError)?.reason == .badSignature }
    }

    @Test("Xcode data verifies only when local testing is allowed, and only as Xcode data")
    func localTesting() throws {
        let factory = try makeFactory()
        let verifier = AppVerifier(trustedRoots: [factory.root.certificate], allowedEnvironments: ["Sandbox"])
        let xcode = try factory.signForLocalTesting(transaction(environment: "Xcode"))
        #expect {
            _ = try verifier.verify(xcode, kind: .transaction, bundleId: Self.bundleId)
        } throws: { ($0 as? SignedDataError)?.reason == .wrongEnvironment }
        let payload = try verifier.verify(xcode, kind: .transaction, bundleId: Self.bundleId, allowLocalTesting: true)
        #expect(payload["environment"] == .string("Xcode"))
        // A self-signed certificate claiming Sandbox is no App Store chain, local testing or not.
        let sandboxClaim = try factory.signForLocalTesting(transaction(environment: "Sandbox"))
        #expect(throws: SignedDataError.self) {
            _ = try verifier.verify(sandboxClaim, kind: .transaction, bundleId: Self.bundleId, allowLocalTesting: true)
        }
    }

    @Test("renewal info needs no bundleId, but one that is present must match")
    func renewalInfoBundle() throws {
        let factory = try makeFactory()
        let verifier = AppVerifier(trustedRoots: [factory.root.certificate], allowedEnvironments: ["Sandbox"])
        let renewal = try factory.sign(SignedDataFactory.renewalInfo(signedDate: Self.now))
        #expect(throws: Never.self) { _ = try verifier.verify(renewal, kind: .renewalInfo, bundleId: Self.bundleId) }
        let foreign = try factory.sign(SignedDataFactory.renewalInfo(bundleId: "com.other", signedDate: Self.now))
        #expect {
            _ = try verifier.verify(foreign, kind: .renewalInfo, bundleId: Self.bundleId)
        } throws: { ($0 as? SignedDataError)?.reason == .wrongApp }
        let transactionWithoutBundle = try factory.sign(
            SignedDataFactory.subscriptionTransaction(
                bundleId: Self.bundleId, purchaseDate: 1, expiresDate: 2, signedDate: Self.now,
                overrides: ["bundleId": .null]))
        #expect(throws: SignedDataError.self) {
            _ = try verifier.verify(transactionWithoutBundle, kind: .transaction, bundleId: Self.bundleId)
        }
    }

    @Test("an app transaction's environment is its receiptType")
    func appTransactionEnvironment() throws {
        let factory = try makeFactory()
        let verifier = AppVerifier(trustedRoots: [factory.root.certificate], allowedEnvironments: ["Production"])
        let sandbox = try factory.sign(SignedDataFactory.appTransaction(bundleId: Self.bundleId, signedDate: Self.now))
        #expect {
            _ = try verifier.verify(sandbox, kind: .appTransaction, bundleId: Self.bundleId)
        } throws: { ($0 as? SignedDataError)?.reason == .wrongEnvironment }
        let production = try factory.sign(
            SignedDataFactory.appTransaction(bundleId: Self.bundleId, signedDate: Self.now, environment: "Production"))
        #expect(throws: Never.self) {
            _ = try verifier.verify(production, kind: .appTransaction, bundleId: Self.bundleId)
        }
    }

    @Test("missing signedDate, non-ES256 alg and broken x5c are malformed")
    func malformed() throws {
        let factory = try makeFactory()
        let verifier = AppVerifier(trustedRoots: [factory.root.certificate], allowedEnvironments: ["Sandbox"])
        let certificates = [factory.leaf.der, factory.intermediate.der, factory.root.der]
        let cases = [
            try SignedDataFactory.sign(
                SignedDataFactory.subscriptionTransaction(
                    bundleId: Self.bundleId, purchaseDate: 1, expiresDate: 2, signedDate: Self.now,
                    overrides: ["signedDate": .null]),
                certificates: certificates, key: factory.leaf.key),
            try SignedDataFactory.sign(transaction(), certificates: certificates, key: factory.leaf.key, alg: "ES384"),
            try SignedDataFactory.sign(transaction(), certificates: [[1, 2, 3], [4], [5]], key: factory.leaf.key),
            try SignedDataFactory.sign(
                transaction(), certificates: certificates + [factory.root.der], key: factory.leaf.key),
            "a.b", "..", "",
        ]
        for token in cases {
            #expect {
                _ = try verifier.verify(token, kind: .transaction, bundleId: Self.bundleId)
            } throws: { ($0 as? SignedDataError)?.reason == .malformed }
        }
    }

    @Test("each kind of signed data is accepted only as itself")
    func kindsAreNotInterchangeable() throws {
        let factory = try makeFactory()
        let verifier = AppVerifier(trustedRoots: [factory.root.certificate], allowedEnvironments: ["Sandbox"])
        let transaction = try factory.sign(transaction())
        let renewal = try factory.sign(SignedDataFactory.renewalInfo(signedDate: Self.now))
        let app = try factory.sign(SignedDataFactory.appTransaction(bundleId: Self.bundleId, signedDate: Self.now))
        let notification = try NotificationTemplate(
            type: "TEST", uuid: "0b8a4d6e-1f2c-4e3d-9a8b-7c6d5e4f3a2b", bundleId: Self.bundleId, signedDate: Self.now
        ).sign(with: factory)
        // A retention request names a subscription without a transaction, as renewal info does.
        let retention = try RealtimeRequestTemplate(
            originalTransactionId: "1000000000000001", productId: "com.example.pro.monthly", signedDate: Self.now
        ).sign(with: factory)
        let cases: [(String, SignedDataKind)] = [
            (transaction, .renewalInfo), (transaction, .appTransaction), (renewal, .transaction),
            (renewal, .appTransaction), (app, .transaction), (app, .renewalInfo), (transaction, .notification),
            (renewal, .notification), (app, .notification), (notification, .transaction),
            (notification, .renewalInfo), (notification, .appTransaction), (retention, .renewalInfo),
            (retention, .transaction), (retention, .notification), (transaction, .realtimeRequest),
            (renewal, .realtimeRequest), (app, .realtimeRequest), (notification, .realtimeRequest),
        ]
        for (token, kind) in cases {
            #expect {
                _ = try verifier.verify(token, kind: kind, bundleId: Self.bundleId)
            } throws: { ($0 as? SignedDataError)?.reason == .malformed }
        }
        for (token, kind) in [
            (transaction, SignedDataKind.transaction), (renewal, .renewalInfo), (app, .appTransaction),
            (notification, .notification), (retention, .realtimeRequest),
        ] {
            #expect(throws: Never.self) { _ = try verifier.verify(token, kind: kind, bundleId: Self.bundleId) }
        }
    }

    @Test("an app transaction without signedDate is checked at its receiptCreationDate, as Apple's libraries do")
    func appTransactionWithoutSignedDate() throws {
        let factory = try makeFactory()
        let verifier = AppVerifier(trustedRoots: [factory.root.certificate], allowedEnvironments: ["Sandbox"])
        let payload = SignedDataFactory.appTransaction(
            bundleId: Self.bundleId, signedDate: Self.now, overrides: ["signedDate": .null])
        #expect(throws: Never.self) {
            _ = try verifier.verify(try factory.sign(payload), kind: .appTransaction, bundleId: Self.bundleId)
        }
        let late = SignedDataFactory.appTransaction(
            bundleId: Self.bundleId, signedDate: Self.now,
            overrides: ["signedDate": .null, "receiptCreationDate": .int(Self.now + 3 * 86_400_000)])
        #expect {
            _ = try verifier.verify(try factory.sign(late), kind: .appTransaction, bundleId: Self.bundleId)
        } throws: { ($0 as? SignedDataError)?.reason == .untrustedChain }
    }

    @Test("Xcode's fractional signedDate is accepted; dates out of range are malformed")
    func xcodeDates() throws {
        let factory = try makeFactory()
        let verifier = AppVerifier(trustedRoots: [factory.root.certificate], allowedEnvironments: ["Sandbox"])
        let fractional = SignedDataFactory.subscriptionTransaction(
            bundleId: Self.bundleId, purchaseDate: 1, expiresDate: 2, signedDate: 0, environment: "Xcode",
            overrides: ["signedDate": .double(Double(Self.now) + 0.485)])
        #expect(throws: Never.self) {
            _ = try verifier.verify(
                try factory.signForLocalTesting(fractional), kind: .transaction, bundleId: Self.bundleId,
                allowLocalTesting: true)
        }
        let negative = SignedDataFactory.subscriptionTransaction(
            bundleId: Self.bundleId, purchaseDate: 1, expiresDate: 2, signedDate: -5, environment: "Xcode")
        #expect {
            _ = try verifier.verify(
                try factory.signForLocalTesting(negative), kind: .transaction, bundleId: Self.bundleId,
                allowLocalTesting: true)
        } throws: { ($0 as? SignedDataError)?.reason == .malformed }
    }
}

/// The verifier composed with an app's trust, as `EligibilityService` does; answers with the verified payload as
/// JSON so tests can read any member.
struct AppVerifier {
    let verifier: SignedDataVerifier
    let environments: Set<AppStoreEnvironment>

    init(trustedRoots: [Certificate], allowedEnvironments: Set<AppStoreEnvironment>, cacheCapacity: Int = 256) {
        verifier = SignedDataVerifier(trustedRoots: trustedRoots, cacheCapacity: cacheCapacity)
        environments = allowedEnvironments
    }

    var cachedChainCount: Int { verifier.cachedChainCount }

    func verify(
        _ token: String, kind: SignedDataKind, bundleId: String, allowLocalTesting: Bool = false,
        now: Int64 = SignedDataVerifierTests.now
    ) throws(SignedDataError) -> JSONValue {
        let trust = AppTrust(bundleId: bundleId, environments: environments, localTesting: allowLocalTesting)
        switch kind {
        case .transaction: _ = try trust.verify(token, as: JWSTransactionPayload.self, with: verifier, now: now)
        case .renewalInfo: _ = try trust.verify(token, as: JWSRenewalInfoPayload.self, with: verifier, now: now)
        case .appTransaction: _ = try trust.verify(token, as: AppTransactionPayload.self, with: verifier, now: now)
        case .notification:
            _ = try NotificationTrust(app: trust, appAppleId: nil).verify(token, with: verifier, now: now)
        case .realtimeRequest:
            _ = try RealtimeRequestTrust(app: trust, appAppleId: nil).verify(token, with: verifier, now: now)
        }
        do {
            return try CompactJWS.decode(token).payload
        } catch {
            throw SignedDataError(.malformed, error.message)
        }
    }
}
