import Foundation
import OfferAPI
import OfferCore
import OfferTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What only the real binary can show: a signature made and verified across a real socket, a refusal of
/// tampered data there, and a graceful stop. The endpoint tables run in process (Tests/OfferServerTests/Endpoints).
@Suite("End to end: the real binary over HTTP")
struct ServeTests {
    static let promotional = "v1/signatures/promotional-offer"

    @Test("a lapsed subscriber gets a JWS that verifies with the app's key, signed now with a fresh nonce")
    func signatureVerifies() async throws {
        let deployment = try Deployment.make()
        defer { deployment.remove() }
        let server = try ServerProcess(configPath: deployment.configurationPath)
        let before = Deployment.wallClock() / 1000
        let response = try await server.post(Self.promotional, try Deployment.lapsedCustomer(deployment))
        let after = Deployment.wallClock() / 1000
        #expect(server.stop() == 0)
        #expect(response.status == 200, "\(response)")
        guard case .jws(let signature) = try response.decode(PromotionalOfferSignature.self) else {
            Issue.record("expected the JWS form: \(response)")
            return
        }
        #expect(signature.keyId == deployment.keyId)
        #expect(UUIDText.isValid(signature.nonce) && signature.nonce == signature.nonce.lowercased())
        #expect((before...after).contains(signature.issuedAt))
        #expect(
            try deployment.verifiedClaims(signature.compactJWS) == [
                "iss": .string(deployment.issuerId), "iat": .int(signature.issuedAt),
                "aud": .string("promotional-offer"), "bid": .string(Deployment.bundleId),
                "nonce": .string(signature.nonce), "productId": .string(Deployment.product),
                "offerIdentifier": .string("welcome_back"), "transactionId": .string("7042895723110001"),
            ])
    }

    @Test("a customer transaction with one changed signature byte is refused as bad_signature")
    func tamperedRefused() async throws {
        let deployment = try Deployment.make()
        defer { deployment.remove() }
        var request = try Deployment.lapsedCustomer(deployment)
        var token = Array(try #require(request.signedData.transaction).utf8)
        let index = token.count - 10
        token[index] = token[index] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        request.signedData.transaction = String(decoding: token, as: UTF8.self)
        let server = try ServerProcess(configPath: deployment.configurationPath)
        let response = try await server.post(Self.promotional, request)
        #expect(server.stop() == 0)
        #expect(response.status == 400)
        #expect(response.errorCode == .untrustedSignedData)
        #expect(response.errorReason == "bad_signature", "\(response)")
        #expect(response.errorField == "signedTransaction")
    }

    @Test("SIGTERM stops the server gracefully: exit status 0, and the port is closed")
    func gracefulStop() async throws {
        let deployment = try Deployment.make()
        defer { deployment.remove() }
        let server = try ServerProcess(configPath: deployment.configurationPath)
        let (_, live) = try await URLSession.shared.data(from: server.baseURL.appendingPathComponent("livez"))
        #expect((live as? HTTPURLResponse)?.statusCode == 200)
        #expect(server.stop() == 0)
        await #expect(throws: (any Error).self) {
            _ = try await URLSession.shared.data(from: server.baseURL.appendingPathComponent("livez"))
        }
    }
}
