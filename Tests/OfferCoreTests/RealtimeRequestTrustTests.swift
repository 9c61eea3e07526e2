import OfferAPI
import OfferCrypto
import OfferTesting
import Testing

@testable import OfferCore

@Suite("Retention requests are verified as Apple's verify_and_decode_realtime_request does")
struct RealtimeRequestTrustTests {
    static let now: Int64 = 1_796_000_000_000
    static let bundleId = "com.example.app"
    static let appAppleId: Int64 = 1_234_567_890
    static let requestIdentifier = "3db5c98d-8acf-4e29-831e-8e1f82f9f6e9"

    let factory: SignedDataFactory
    let verifier: SignedDataVerifier

    init() throws {
        factory = try SignedDataFactory.make(notBefore: Self.now / 1000 - 86_400, notAfter: Self.now / 1000 + 86_400)
        verifier = SignedDataVerifier(trustedRoots: [factory.root.certificate])
    }

    func trust(
        environments: Set<AppStoreEnvironment> = [.production, .sandbox], appAppleId: Int64? = appAppleId
    ) -> RealtimeRequestTrust {
        RealtimeRequestTrust(app: AppTrust(bundleId: Self.bundleId, environments: environments), appAppleId: appAppleId)
    }

    static func template(environment: String = "Sandbox", appAppleId: Int64 = appAppleId) -> RealtimeRequestTemplate {
        RealtimeRequestTemplate(
            originalTransactionId: "99371282", productId: "com.example.product", appAppleId: appAppleId,
            userLocale: "en-US", requestIdentifier: requestIdentifier, environment: environment, signedDate: now)
    }

    @Test("a Sandbox request verifies and decodes every field")
    func sandbox() throws {
        let payload = try trust().verify(try Self.template().sign(with: factory), with: verifier, now: Self.now)
        #expect(
            payload
                == RealtimeRequestPayload(
                    originalTransactionId: "99371282", appAppleId: Self.appAppleId, productId: "com.example.product",
                    userLocale: "en-US", requestIdentifier: Self.requestIdentifier, environment: .sandbox,
                    signedDate: Self.now))
        #expect(payload.namespace == .sandbox)
    }

    @Test("a Sandbox request's appAppleId is not checked, as Apple's verifier does not")
    func sandboxAppAppleId() throws {
        let token = try Self.template(appAppleId: 42).sign(with: factory)
        #expect(try trust(appAppleId: nil).verify(token, with: verifier, now: Self.now).appAppleId == 42)
    }

    @Test("a Production request verifies with the app's appAppleId")
    func production() throws {
        let payload = try trust().verify(
            try Self.template(environment: "Production").sign(with: factory), with: verifier, now: Self.now)
        #expect(payload.environment == .production)
        #expect(payload.namespace == .production)
    }

    @Test("a Production request is refused without the app's appAppleId, and with another app's")
    func productionAppAppleId() throws {
        let token = try Self.template(environment: "Production").sign(with: factory)
        #expect(
            throws: SignedDataError(
                .appAppleIdNotConfigured,
                "Production retention requests for com.example.app are refused: set the app's appAppleId in the "
                    + "configuration (App Store Connect, App Information, Apple ID)")
        ) { _ = try trust(appAppleId: nil).verify(token, with: verifier, now: Self.now) }
        #expect(
            throws: SignedDataError(
                .wrongApp, "retention request is for another app (its appAppleId is not this app's)")
        ) { _ = try trust(appAppleId: 7).verify(token, with: verifier, now: Self.now) }
    }

    @Test("an environment the deployment does not trust is refused")
    func environment() throws {
        let token = try Self.template(environment: "Production").sign(with: factory)
        #expect(throws: SignedDataError(.wrongEnvironment, "environment Production is not accepted here")) {
            _ = try trust(environments: [.sandbox]).verify(token, with: verifier, now: Self.now)
        }
    }

    @Test(
        "every field of DecodedRealtimeRequestBody is required",
        arguments: [
            "originalTransactionId", "appAppleId", "productId", "userLocale", "requestIdentifier", "environment",
            "signedDate",
        ])
    func required(field: String) throws {
        guard case .object(var members) = Self.template().payload else { throw PayloadError("no object") }
        members[field] = nil
        let token = try factory.sign(.object(members))
        // Without signedDate there is no time to check the chain at; without its identity fields the payload is not
        // a retention request at all.
        let message =
            field == "signedDate"
            ? "payload has no valid signedDate"
            : ["requestIdentifier", "originalTransactionId"].contains(field)
                ? "signed data is not a retention request" : "field \"\(field)\" is required"
        #expect(throws: SignedDataError(.malformed, message)) {
            _ = try trust().verify(token, with: verifier, now: Self.now)
        }
    }

    @Test("a requestIdentifier that is not a UUID, an empty field and a field of the wrong type are refused")
    func malformedFields() throws {
        let cases: [(String, JSONValue, String)] = [
            ("requestIdentifier", .string("not-a-uuid"), "field \"requestIdentifier\": expected a UUID"),
            ("productId", .string(""), "field \"productId\" is empty"),
            ("appAppleId", .string("1234567890"), "field \"appAppleId\": expected an integer, found a string"),
        ]
        for (field, value, message) in cases {
            guard case .object(var members) = Self.template().payload else { throw PayloadError("no object") }
            members[field] = value
            let token = try factory.sign(.object(members))
            #expect(throws: SignedDataError(.malformed, message)) {
                _ = try trust().verify(token, with: verifier, now: Self.now)
            }
        }
    }

    @Test("one byte changed in the payload fails the signature; another chain fails the chain")
    func tamperedAndUntrusted() throws {
        let token = try Self.template().sign(with: factory)
        var parts = token.split(separator: ".").map(String.init)
        var payload = try #require(Base64.decodeURL(parts[1]))
        let index = try #require(payload.firstIndex(of: UInt8(ascii: "9")))
        payload[index] = UInt8(ascii: "8")
        parts[1] = Base64.encodeURL(payload)
        #expect {
            _ = try trust().verify(parts.joined(separator: "."), with: verifier, now: Self.now)
        } throws: { ($0 as? SignedDataError)?.reason == .badSignature }
        let stranger = try SignedDataFactory.make(
            notBefore: Self.now / 1000 - 86_400, notAfter: Self.now / 1000 + 86_400)
        #expect {
            _ = try trust().verify(try Self.template().sign(with: stranger), with: verifier, now: Self.now)
        } throws: { ($0 as? SignedDataError)?.reason == .untrustedChain }
    }

    @Test("a notification or a transaction posted as a retention request is refused")
    func otherKinds() throws {
        let notification = try NotificationTemplate(
            type: "TEST", uuid: Self.requestIdentifier, bundleId: Self.bundleId, signedDate: Self.now
        ).sign(with: factory)
        let transaction = try factory.sign(
            SignedDataFactory.subscriptionTransaction(
                bundleId: Self.bundleId, purchaseDate: Self.now, expiresDate: Self.now + 1, signedDate: Self.now))
        for token in [notification, transaction] {
            #expect(throws: SignedDataError(.malformed, "signed data is not a retention request")) {
                _ = try trust().verify(token, with: verifier, now: Self.now)
            }
        }
    }
}
