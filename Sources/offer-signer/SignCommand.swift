import OfferAPI
import OfferCommandLine
import OfferCore
import OfferCrypto
import OfferServer

/// `offer-signer sign ...`: one signature offline, printed as the HTTP API would return it.
enum SignCommand {
    static func run(_ kind: String, _ arguments: ArraySlice<String>) throws -> Int32 {
        let common: Set<String> = ["key", "key-id", "bundle-id", "product-id"]
        let now = SystemClock.nowMilliseconds()
        let nonce = SecureRandom.uuidV7(milliseconds: now)
        var writer = JSONWriter()
        writer.beginObject()
        switch kind {
        case "promotional-offer":
            let options = try Arguments(arguments, valued: common.union(["issuer-id", "offer-id", "transaction-id"]))
            let key = try signingKey(options, issuerRequired: true)
            let claims = PromotionalOfferClaims(
                bundleId: try options.required("bundle-id"), productId: try options.required("product-id"),
                offerIdentifier: try options.required("offer-id"), transactionId: options["transaction-id"])
            let jws = try OfferSignatures.promotionalOfferJWS(claims, key: key, issuedAt: now / 1000, nonce: nonce)
            writer.member("format", "jws")
            writer.member("keyId", key.keyId)
            writer.member("compactJWS", jws)
            writer.member("nonce", nonce)
            writer.member("issuedAt", now / 1000)
        case "introductory-offer-eligibility":
            let options = try Arguments(arguments, valued: common.union(["issuer-id", "transaction-id", "allow"]))
            let key = try signingKey(options, issuerRequired: true)
            let allow: Bool
            switch try options.required("allow") {
            case "true": allow = true
            case "false": allow = false
            default: throw UsageError("--allow must be true or false")
            }
            let claims = IntroductoryOfferEligibilityClaims(
                bundleId: try options.required("bundle-id"), productId: try options.required("product-id"),
                allowIntroductoryOffer: allow, transactionId: try options.required("transaction-id"))
            let jws = try OfferSignatures.introductoryOfferEligibilityJWS(
                claims, key: key, issuedAt: now / 1000, nonce: nonce)
            writer.member("format", "jws")
            writer.member("keyId", key.keyId)
            writer.member("compactJWS", jws)
            writer.member("nonce", nonce)
            writer.member("issuedAt", now / 1000)
            writer.member("allowIntroductoryOffer", allow)
        case "legacy":
            let options = try Arguments(arguments, valued: common.union(["offer-id", "app-account-token"]))
            let key = try signingKey(options, issuerRequired: false)
            let token = options["app-account-token"]
            if let token, !UUIDText.isValid(token) { throw UsageError("--app-account-token must be a UUID") }
            let offer = LegacyPromotionalOffer(
                bundleId: try options.required("bundle-id"), keyId: key.keyId,
                productId: try options.required("product-id"), offerId: try options.required("offer-id"),
                appAccountToken: token, nonce: nonce, timestamp: now)
            writer.member("format", "legacy")
            writer.member("keyId", key.keyId)
            writer.member("nonce", nonce)
            writer.member("timestamp", now)
            writer.member("signature", try OfferSignatures.legacySignature(offer, key: key.key))
            if let token { writer.member("appAccountToken", token.lowercased()) }
        default:
            throw UsageError(
                "unknown signature kind '\(kind)': promotional-offer, introductory-offer-eligibility or legacy")
        }
        writer.endObject()
        Console.out(String(decoding: writer.bytes, as: UTF8.self))
        return 0
    }

    private static func signingKey(_ options: Arguments, issuerRequired: Bool) throws -> OfferSigningKey {
        try options.noPositionals()
        let keyId = try options.required("key-id")
        guard Identifiers.isKeyId(keyId) else { throw UsageError("--key-id must be 1 to 64 letters or digits") }
        let issuerId = issuerRequired ? try options.required("issuer-id") : ""
        if issuerRequired && !UUIDText.isValid(issuerId) { throw UsageError("--issuer-id must be a UUID") }
        do {
            return OfferSigningKey(
                issuerId: issuerId, keyId: keyId, key: try PrivateKeyFile.load(path: options.required("key")))
        } catch let error as CryptoError {
            throw CommandError(error.message)
        }
    }
}
