import OfferAPI
import OfferAppStore
import OfferCore
import OfferCrypto

#if canImport(Glibc)
    import Glibc
#endif

extension FakeAppStoreServerAPI {
    /// Why the `Authorization` header is not one Apple would accept, or `nil` when it is. Writes the token to
    /// `tokenFile` when one is set.
    func refusal(of authorization: String?, scenario: FakeAppStoreScenario, now: Int64) -> String? {
        guard let authorization, authorization.hasPrefix("Bearer ") else {
            return "no \"Authorization: Bearer\" header"
        }
        let token = String(authorization.dropFirst("Bearer ".utf8.count))
        if let tokenFile = options.tokenFile { Self.write(token, to: tokenFile) }
        return Self.refusal(
            of: token, bundleId: scenario.bundleId, issuerId: scenario.issuerId, keyId: options.keyId ?? scenario.keyId,
            publicKey: options.publicKey, now: now)
    }

    /// Why `token` is not an App Store Server API JWT for `bundleId` at `now` (Unix milliseconds), or `nil`
    /// (APPLE-S2S.md section 3.2): `alg` ES256, `typ` JWT, a `kid`, `aud` appstoreconnect-v1, `bid`, an issuer
    /// ID in `iss`, `exp` ahead and at most an hour after `iat` (or after now, for a token without `iat`, which
    /// Apple accepts: its Python library writes none). `issuerId`, `keyId` and `publicKey` are checked when
    /// given. Never quotes the token.
    ///
    /// With `bundleId` `nil`, an App Store Connect API team key's JWT instead: no `bid`, an `iat`, and `exp` at
    /// most `longestLifetimeSeconds` (Apple's 20 minutes) after it.
    public static func refusal(
        of token: String, bundleId: String?, issuerId: String?, keyId: String?, publicKey: VerifyingKey?, now: Int64,
        longestLifetimeSeconds: Int64 = 3600
    ) -> String? {
        let parts: CompactJWS.Parts
        do {
            parts = try CompactJWS.decode(token, maxLength: 8192)
        } catch {
            return "the token is not a compact JWS: \(error.message)"
        }
        let header = parts.header
        let claims = parts.payload
        guard header["alg"]?.stringValue == "ES256" else { return "header alg is not ES256" }
        guard header["typ"]?.stringValue == "JWT" else { return "header typ is not JWT" }
        guard let kid = header["kid"]?.stringValue, !kid.isEmpty else { return "header kid is missing" }
        if let keyId, kid != keyId { return "header kid \(kid) is not \(keyId)" }
        guard claims["aud"]?.stringValue == AuthenticationToken.audience else {
            return "aud is not \(AuthenticationToken.audience)"
        }
        if let bundleId {
            guard claims["bid"]?.stringValue == bundleId else { return "bid is not \(bundleId)" }
        } else {
            guard claims["bid"] == nil else { return "bid belongs to App Store Server API tokens, not this API's" }
            guard claims["iat"] != nil else { return "iat is missing" }
        }
        guard let iss = claims["iss"]?.stringValue, UUIDText.isValid(iss) else { return "iss is not an issuer ID" }
        if let issuerId, iss != issuerId { return "iss is not \(issuerId)" }
        guard case .int(let expires)? = claims["exp"] else { return "exp is missing or not an integer" }
        let seconds = now / 1000
        switch claims["iat"] {
        case nil:
            // Apple accepts tokens without iat: its Python library writes none.
            guard expires - seconds <= longestLifetimeSeconds else {
                return "exp is more than \(longestLifetimeSeconds / 60) minutes away"
            }
        case .int(let issuedAt)?:
            guard issuedAt <= seconds + 60 else { return "iat is in the future" }
            guard expires > issuedAt, expires - issuedAt <= longestLifetimeSeconds else {
                return "exp must be after iat and at most \(longestLifetimeSeconds / 60) minutes after it"
            }
        default:
            return "iat is not an integer"
        }
        guard expires > seconds else { return "the token expired" }
        if let publicKey, !publicKey.isValidSignature(raw: parts.signature, for: parts.signingInput) {
            return "the signature does not verify with the public key"
        }
        return nil
    }

    /// Replaces `path` with `text`, mode 0600.
    static func write(_ text: String, to path: String) {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { return }
        defer { close(descriptor) }
        let bytes = Array(text.utf8)
        var written = 0
        while written < bytes.count {
            let count = bytes[written...].withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
            guard count > 0 else { return }
            written += count
        }
    }
}
