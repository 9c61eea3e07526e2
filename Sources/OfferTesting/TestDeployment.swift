import OfferAPI
import OfferCore
import OfferCrypto
import OfferServer
import OfferStore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A throwaway deployment for tests, in a fresh temporary folder: a test CA (`authority`) whose root the
/// configuration trusts, an In-App Purchase signing key written with mode 0600, and the configuration file
/// around the caller's apps. Run it in process with `client()`, or point the real binary at
/// `configurationPath`; sign the customer's data with `transaction`, `renewalInfo` and `appTransaction`, dated
/// by `clock`; check what the service signed with `verifiedClaims`. `remove()` deletes the folder.
///
/// Apps are written as in the configuration file, less what the deployment fills in when missing: `issuerId`
/// and `keys` (the deployment's key).
///
/// ```swift
/// let deployment = try TestDeployment(apps: """
///     [{"bundleId": "com.example.app", "offers": [{"id": "welcome_back", "type": "promotional",
///       "productIds": ["com.example.pro.monthly"], "eligibility": {"subscriptionStatus": ["expired"]}}]}]
///     """)
/// defer { deployment.remove() }
/// let client = try deployment.client()
/// ```
public struct TestDeployment: Sendable {
    /// The key ID of the signing key unless told otherwise.
    public static let defaultKeyId = "TESTKEY001"
    /// The issuer ID written into apps that name none.
    public static let defaultIssuerId = "57246542-96fe-1a63-e053-0824d011072a"

    /// The deployment's folder: the configuration, the key and the root certificate; the ledger's file too
    /// when `storage` is `sqlite:` with a relative path.
    public let directory: String
    /// `offer-signer.json` in `directory`.
    public let configurationPath: String
    /// The configuration file's text.
    public let configuration: String
    /// The signing key's ID (the JWS `kid`).
    public let keyId: String
    /// The signing key's file, `SubscriptionKey_<keyId>.p8` in `directory`, mode 0600.
    public let keyPath: String
    /// The issuer ID filled into apps that name none.
    public let issuerId: String
    /// The public half of the signing key: signatures the service returns verify with it.
    public let verifyingKey: VerifyingKey
    /// The test CA that signs the customer's data; its root is `root.cer` in `directory`, trusted by the
    /// configuration.
    public let authority: SignedDataFactory
    /// The date test data is signed at, and the service's time in `client()`.
    public let clock: TestClock

    /// A deployment that may not be made, with the reason.
    public struct Error: Swift.Error, Equatable, CustomStringConvertible {
        /// What went wrong, for people.
        public let message: String
        public init(_ message: String) { self.message = message }
        public var description: String { message }
    }

    /// Makes the folder, the CA (valid from 30 days before `clock.now` to a year after), the key and the
    /// configuration: `apps` is the JSON text of the `apps` array; `settings` adds root members such as
    /// `rateLimit` or `storage` (`memory` unless given); `trust` is the deployment's: `root.cer`, then
    /// `extraRootCertificates` (paths), with `environments`; with `appAttest`, that test CA's App Attestation root
    /// replaces Apple's and its receipt root is trusted too.
    public init(
        apps: String, settings: [String: JSONValue] = [:], environments: [String] = ["Production", "Sandbox"],
        extraRootCertificates: [String] = [], appAttest: TestAppAttestAuthority? = nil,
        keyId: String = TestDeployment.defaultKeyId, issuerId: String = TestDeployment.defaultIssuerId,
        clock: TestClock = TestClock()
    ) throws {
        let parsedApps: JSONValue
        do {
            parsedApps = try JSONParser.parse(Array(apps.utf8))
        } catch {
            throw Error("apps: not valid JSON: \(error.description)")
        }
        guard case .array(let appList) = parsedApps else {
            throw Error("apps: expected a JSON array of apps, found \(parsedApps.typeDescription)")
        }
        let directory = try Self.makeTemporaryDirectory()
        do {
            let seconds = clock.now / 1000
            authority = try SignedDataFactory.make(notBefore: seconds - 30 * 86_400, notAfter: seconds + 365 * 86_400)
            let signingKey = try SigningKey.generate()
            let keyFile = "SubscriptionKey_\(keyId).p8"
            try PrivateKeyFile.writeNew(path: "\(directory)/\(keyFile)", contents: try signingKey.pkcs8PEM())
            try PrivateKeyFile.writeNew(path: "\(directory)/root.cer", contents: authority.root.der)
            var document = settings
            if document["storage"] == nil { document["storage"] = .string("memory") }
            var roots = [JSONValue.string("root.cer")] + extraRootCertificates.map(JSONValue.string)
            var trust: [String: JSONValue] = ["environments": .array(environments.map(JSONValue.string))]
            if let appAttest {
                try PrivateKeyFile.writeNew(path: "\(directory)/app-attest-root.cer", contents: appAttest.root.der)
                try PrivateKeyFile.writeNew(
                    path: "\(directory)/app-attest-receipt-root.cer", contents: appAttest.receiptRoot.der)
                trust["appAttestRootCertificates"] = .array([.string("app-attest-root.cer")])
                roots.append(.string("app-attest-receipt-root.cer"))
            }
            trust["rootCertificates"] = .array(roots)
            document["trust"] = .object(trust)
            document["apps"] = .array(
                appList.map { Self.filled($0, issuerId: issuerId, keyId: keyId, keyFile: keyFile) })
            var writer = JSONWriter()
            writer.value(.object(document))
            let text = String(decoding: writer.bytes, as: UTF8.self)
            try PrivateKeyFile.writeNew(path: "\(directory)/offer-signer.json", contents: writer.bytes)
            self.configuration = text
            self.verifyingKey = try signingKey.publicKey
            self.keyPath = "\(directory)/\(keyFile)"
        } catch {
            Self.removeTree(directory)
            throw error
        }
        self.directory = directory
        self.configurationPath = "\(directory)/offer-signer.json"
        self.keyId = keyId
        self.issuerId = issuerId
        self.clock = clock
    }

    /// The deployment served in process, on `clock`, its `storage` opened for this client (`memory`: an empty
    /// ledger of its own) unless `ledger` stands in for it; retention requests look facts up through `lookup`.
    public func client(
        nonces: TestNonces = .sequence(), log: Logger = Logger(level: .error),
        timeout: Duration = TestClient.defaultTimeout, ledger: (any Ledger)? = nil,
        lookup: (any SubscriptionLookup)? = nil
    ) throws -> TestClient {
        try TestClient(
            configuration: try Configuration.read(path: configurationPath), clock: clock, nonces: nonces, log: log,
            timeout: timeout, ledger: ledger, lookup: lookup)
    }

    /// Deletes the folder and everything in it (the ledger's files too).
    public func remove() { Self.removeTree(directory) }

    /// Verifies a compact JWS the service returned with the deployment's key (ES256, header `kid` = `keyId`)
    /// and returns its claims; throws when it does not verify.
    public func verifiedClaims(_ jws: String) throws -> [String: JSONValue] {
        let parts = try CompactJWS.decode(jws)
        guard parts.header["alg"] == .string("ES256"), parts.header["kid"] == .string(keyId),
            parts.header["typ"] == .string("JWT")
        else {
            throw Error("the JWS header is not {\"alg\":\"ES256\",\"kid\":\"\(keyId)\",\"typ\":\"JWT\"}")
        }
        guard verifyingKey.isValidSignature(raw: parts.signature, for: parts.signingInput) else {
            throw Error("the JWS signature does not verify with the deployment's key")
        }
        guard case .object(let claims) = parts.payload else { throw Error("the JWS payload is no object") }
        return claims
    }

    // MARK: - The customer's signed data, dated by `clock`

    /// An auto-renewable subscription bought `expiredDaysAgo + 30` days ago that expired `expiredDaysAgo` days
    /// ago (negative: still active), signed by the test CA now (`clock.now`).
    public func transaction(
        bundleId: String, expiredDaysAgo: Int64, originalTransactionId: String = "2000000000000001",
        environment: String = "Sandbox", overrides: [String: JSONValue] = [:]
    ) throws -> String {
        try authority.sign(
            transactionPayload(
                bundleId: bundleId, expiredDaysAgo: expiredDaysAgo, originalTransactionId: originalTransactionId,
                environment: environment, overrides: overrides))
    }

    /// The same subscription signed the way Xcode's StoreKit testing does (one self-signed certificate),
    /// environment `Xcode` unless `overrides` says otherwise.
    public func xcodeTransaction(
        bundleId: String, expiredDaysAgo: Int64, originalTransactionId: String = "2000000000000001",
        overrides: [String: JSONValue] = [:]
    ) throws -> String {
        try authority.signForLocalTesting(
            transactionPayload(
                bundleId: bundleId, expiredDaysAgo: expiredDaysAgo, originalTransactionId: originalTransactionId,
                environment: "Xcode", overrides: overrides))
    }

    /// The transaction payload `transaction` signs.
    public func transactionPayload(
        bundleId: String, expiredDaysAgo: Int64, originalTransactionId: String = "2000000000000001",
        environment: String = "Sandbox", overrides: [String: JSONValue] = [:]
    ) -> JSONValue {
        let now = clock.now
        let day = TestClock.millisecondsPerDay
        return SignedDataFactory.subscriptionTransaction(
            bundleId: bundleId, originalTransactionId: originalTransactionId,
            purchaseDate: now - (expiredDaysAgo + 30) * day, expiresDate: now - expiredDaysAgo * day, signedDate: now,
            environment: environment, overrides: overrides)
    }

    /// Renewal info of `originalTransactionId`, auto-renew off and no billing retry unless `overrides` says
    /// otherwise, signed now.
    public func renewalInfo(
        originalTransactionId: String = "2000000000000001", environment: String = "Sandbox",
        overrides: [String: JSONValue] = [:]
    ) throws -> String {
        try authority.sign(
            SignedDataFactory.renewalInfo(
                originalTransactionId: originalTransactionId, autoRenewStatus: 0, signedDate: clock.now,
                environment: environment, overrides: overrides))
    }

    /// The app transaction of `bundleId` (a customer with no subscription history in it), signed now.
    public func appTransaction(
        bundleId: String, environment: String = "Sandbox", overrides: [String: JSONValue] = [:]
    ) throws -> String {
        try authority.sign(
            SignedDataFactory.appTransaction(
                bundleId: bundleId, signedDate: clock.now, environment: environment, overrides: overrides))
    }

    // MARK: - Files

    /// An app of `apps` with `issuerId` and `keys` filled in when it has none.
    private static func filled(_ app: JSONValue, issuerId: String, keyId: String, keyFile: String) -> JSONValue {
        guard case .object(var members) = app else { return app }
        if members["issuerId"] == nil { members["issuerId"] = .string(issuerId) }
        if members["keys"] == nil {
            members["keys"] = .array([.object(["keyId": .string(keyId), "privateKeyFile": .string(keyFile)])])
        }
        return .object(members)
    }

    /// A new folder `offer-signer-test-XXXXXX` (mode 0700) in `$TMPDIR`, else `/tmp`.
    private static func makeTemporaryDirectory() throws -> String {
        var base = getenv("TMPDIR").map { String(cString: $0) } ?? "/tmp"
        if base.isEmpty { base = "/tmp" }
        while base.count > 1, base.hasSuffix("/") { base.removeLast() }
        var template = Array("\(base)/offer-signer-test-XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { buffer in
            buffer.baseAddress.map { mkdtemp($0) != nil } ?? false
        }
        guard made else { throw Error("cannot create a temporary folder in \(base): \(systemError())") }
        // mkdtemp replaced the Xs in place; the array ends with the C string's NUL.
        return String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Deletes `path` and, if it is a folder, everything under it; symbolic links are removed, never followed.
    private static func removeTree(_ path: String) {
        var info = stat()
        guard lstat(path, &info) == 0 else { return }
        if info.st_mode & S_IFMT == S_IFDIR, let folder = opendir(path) {
            var children: [String] = []
            while let entry = readdir(folder) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                    String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
                }
                if name != "." && name != ".." { children.append(name) }
            }
            closedir(folder)
            for child in children { removeTree("\(path)/\(child)") }
            rmdir(path)
        } else {
            unlink(path)
        }
    }
}
