import OfferAPI
import OfferCommandLine
import OfferCore
import OfferCrypto
import OfferServer
import OfferTesting

/// `offer-signer-testkit app-attest ca|attest|assert`: a private App Attestation CA, and a device's attestations and
/// assertions made with it, so app teams' tests and ours meet (or miss on purpose) every App Attest check.
enum AppAttestCommand {
    static func run(_ arguments: ArraySlice<String>) throws -> Int32 {
        guard let word = arguments.first else { throw UsageError("name what to do: ca, key, attest or assert") }
        let rest = arguments.dropFirst()
        switch word {
        case "ca": return try makeAuthority(rest)
        case "key": return try key(rest)
        case "attest": return try attest(rest)
        case "assert": return try assert(rest)
        default: throw UsageError("unknown app-attest command \"\(word)\" (ca, key, attest or assert)")
        }
    }

    static func makeAuthority(_ arguments: ArraySlice<String>) throws -> Int32 {
        let options = try Arguments(arguments, valued: ["out"])
        try options.noPositionals()
        let directory = try options.required("out")
        let now = SystemClock.nowMilliseconds() / 1000
        let authority = try TestAppAttestAuthority.make(notBefore: now - 30 * 86_400, notAfter: now + 365 * 86_400)
        try makeDirectory(directory)
        try authority.write(to: directory)
        Console.out(
            """
            wrote a test App Attestation CA to \(directory): root.cer (list it in trust.appAttestRootCertificates),
            receipt-root.cer (add it to trust.rootCertificates), and the keys that make attestations and receipts.
            It stands in for Apple's App Attest service: never trust it in production.
            """)
        return 0
    }

    /// `key --key FILE`: the device key FILE (made unless it exists) and its ID, as `generateKey` gives it.
    static func key(_ arguments: ArraySlice<String>) throws -> Int32 {
        let options = try Arguments(arguments, valued: ["key"])
        try options.noPositionals()
        Console.out(try device(options).keyIdText)
        return 0
    }

    static let flaws = ["nonce", "app", "counter", "environment", "receipt"]

    static func attest(_ arguments: ArraySlice<String>) throws -> Int32 {
        let options = try Arguments(
            arguments,
            valued: ["ca", "key", "team-id", "bundle-id", "challenge", "client-data-hash", "environment", "flaw"])
        try options.noPositionals()
        let authority = try TestAppAttestAuthority(directory: try options.required("ca"))
        let device = try device(options)
        let bundleId = try options.required("bundle-id")
        let (challenge, clientDataHash) = try clientData(options) { AppAttestChallenge.attestationClientDataHash($0) }
        let environment = try environment(options["environment"])
        var flaws = TestAppAttestAuthority.Flaws()
        switch options["flaw"] {
        case nil: break
        case "nonce": flaws.wrongNonce = true
        case "app": flaws.appId = "\(try options.required("team-id")).\(bundleId).other"
        case "counter": flaws.counter = 1
        case "environment": flaws.environment = environment == .production ? .development : .production
        case "receipt": flaws.receiptType = "RECEIPT"
        case let other?:
            throw UsageError("unknown --flaw \"\(other)\" (\(Self.flaws.joined(separator: ", ")))")
        }
        let attestation = try authority.attestation(
            of: device, appId: try appId(options), clientDataHash: clientDataHash, environment: environment,
            flaws: flaws, now: SystemClock.nowMilliseconds() / 1000)
        let body = AppAttestKeyRequest(
            bundleId: bundleId, keyId: device.keyIdText, attestation: Base64.encode(attestation),
            challenge: challenge ?? "")
        Console.out(String(decoding: body.jsonBytes, as: UTF8.self))
        return 0
    }

    static func assert(_ arguments: ArraySlice<String>) throws -> Int32 {
        let options = try Arguments(
            arguments, valued: ["key", "team-id", "bundle-id", "challenge", "body", "client-data-hash", "counter"])
        try options.noPositionals()
        let device = try device(options, create: false)
        let keyPath = try options.required("key")
        let counterPath = keyPath + ".counter"
        var given: UInt32?
        if let text = options["counter"] {
            guard let value = UInt32(text) else {
                throw UsageError("--counter must be an integer from 0 to 4294967295")
            }
            given = value
        }
        let body = try options["body"].map(readFile)
        let (challenge, clientDataHash) = try clientData(options) { bytes in
            AppAttestProof.clientDataHash(challenge: bytes, body: body ?? [])
        }
        if challenge != nil && body == nil { throw UsageError("--challenge needs --body, the request's body file") }
        let appId = try appId(options)
        // The counter file is read, raised and written under a lock: concurrent asserts never share a counter.
        let assertion = try updatingFile(counterPath) { (stored: inout [UInt8]) throws -> [UInt8] in
            var counter: UInt32
            if let given {
                counter = given
            } else {
                let text = String(decoding: stored.filter { $0 > 0x20 }, as: UTF8.self)
                guard let last = text.isEmpty ? 0 : UInt32(text) else {
                    throw CommandError("\(counterPath) holds no counter; remove it or pass --counter N")
                }
                guard last < .max else { throw CommandError("the counter in \(counterPath) is at its maximum") }
                counter = last + 1
            }
            stored = Array(String(counter).utf8)
            return try device.assertion(clientDataHash: clientDataHash, appId: appId, counter: counter)
        }
        var answer: [String: JSONValue] = ["X-App-Attest-Key-Id": .string(device.keyIdText)]
        answer["X-App-Attest-Assertion"] = .string(Base64.encode(assertion))
        if let challenge { answer["X-App-Attest-Challenge"] = .string(challenge) }
        var writer = JSONWriter()
        writer.value(.object(answer))
        Console.out(String(decoding: writer.bytes, as: UTF8.self))
        return 0
    }

    /// The client data hash to attest or assert over: made from `--challenge` by `hash` (a device's app does that),
    /// or given as it is with `--client-data-hash HEX` (for a client under test that makes it itself); one of the two.
    static func clientData(
        _ options: Arguments, _ hash: ([UInt8]) -> [UInt8]
    ) throws -> (challenge: String?, clientDataHash: [UInt8]) {
        switch (options["challenge"], options["client-data-hash"]) {
        case (let challenge?, nil):
            guard let bytes = AppAttestChallenge.bytes(challenge) else {
                throw UsageError(
                    "--challenge must be a challenge from POST /v1/app-attest/challenge (43 Base64URL characters)")
            }
            return (challenge, hash(bytes))
        case (nil, let text?):
            guard let bytes = Hex.decode(text), bytes.count == 32 else {
                throw UsageError("--client-data-hash must be 64 hexadecimal digits (a SHA-256)")
            }
            return (nil, bytes)
        default: throw UsageError("give --challenge C or --client-data-hash HEX, one of the two")
        }
    }

    /// The device's key from `--key`: made and written there when the file does not exist (for `attest`).
    static func device(_ options: Arguments, create: Bool = true) throws -> TestAppAttestDevice {
        let path = try options.required("key")
        if create, !fileExists(path) {
            let key = try SigningKey.generate()
            try PrivateKeyFile.writeNew(path: path, contents: try key.pkcs8PEM())
            return try TestAppAttestDevice(key: key)
        }
        return try TestAppAttestDevice(key: try PrivateKeyFile.load(path: path))
    }

    static func appId(_ options: Arguments) throws -> String {
        "\(try options.required("team-id")).\(try options.required("bundle-id"))"
    }

    static func environment(_ text: String?) throws -> AppAttestEnvironment {
        guard let text else { return .production }
        guard let environment = AppAttestEnvironment(rawValue: text) else {
            throw UsageError("--environment must be production or development")
        }
        return environment
    }

    static func readFile(_ path: String) throws -> [UInt8] {
        switch FileBytes.readRegularFile(path, limit: 1 << 20) {
        case .success(let bytes): return bytes
        case .failure(let failure): throw UsageError("\(path): cannot read: \(failure.reason)")
        }
    }
}
