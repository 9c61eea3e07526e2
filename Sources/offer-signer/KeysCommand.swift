import OfferAPI
import OfferCommandLine
import OfferCore
import OfferCrypto
import OfferServer

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `offer-signer keys generate`, `keys import --pkcs11` and `keys import-storekit`.
enum KeysCommand {
    static func run(_ subcommand: String, _ arguments: ArraySlice<String>) throws -> Int32 {
        switch subcommand {
        case "generate": return try generate(arguments)
        case "import": return try importIntoToken(arguments)
        default: return try importStoreKit(arguments)
        }
    }

    static func generate(_ arguments: ArraySlice<String>) throws -> Int32 {
        let options = try Arguments(arguments, valued: ["key-id", "out"])
        let keyId = try options.required("key-id")
        guard Identifiers.isKeyId(keyId) else { throw UsageError("--key-id must be 1 to 64 letters or digits") }
        let out = try options.required("out")
        let key = try SigningKey.generate()
        try PrivateKeyFile.writeNew(path: out, contents: try key.pkcs8PEM())
        Console.out("wrote P-256 key \(keyId) to \(out) (mode 0600)\npublic key:\n\(try key.publicKey.pem())")
        return 0
    }

    static func importStoreKit(_ arguments: ArraySlice<String>) throws -> Int32 {
        let options = try Arguments(arguments, valued: ["out"])
        guard options.positionals.count == 1 else { throw UsageError("name one .storekit file") }
        let file = options.positionals[0]
        let directory = try options.required("out")
        guard let bytes = FileBytes.read(file) else { throw CommandError("\(file): cannot read file") }
        let document: JSONValue
        do {
            document = try JSONParser.parse(bytes, maxDepth: 64)
        } catch {
            throw CommandError("\(file): not a StoreKit configuration file (invalid JSON: \(error.description))")
        }
        guard let pair = document["subscriptionOffersKeyPair"] else {
            throw CommandError(
                "\(file): no \"subscriptionOffersKeyPair\"; in Xcode, open the file and generate the "
                    + "subscription offers key (Editor > Subscription Offers Key)")
        }
        guard let keyId = pair["id"]?.stringValue, Identifiers.isKeyId(keyId) else {
            throw CommandError("\(file): subscriptionOffersKeyPair.id is missing or not letters and digits")
        }
        guard let encoded = pair["privateKey"]?.stringValue, let der = Base64.decode(encoded) else {
            throw CommandError("\(file): subscriptionOffersKeyPair.privateKey is missing or not Base64")
        }
        let key: SigningKey
        do {
            key = try SigningKey(pkcs8DER: der)
        } catch let error as CryptoError {
            throw CommandError("\(file): subscriptionOffersKeyPair.privateKey: \(error.message)")
        }
        try makeDirectory(directory)
        let out =
            directory.hasSuffix("/")
            ? "\(directory)SubscriptionKey_\(keyId).p8" : "\(directory)/SubscriptionKey_\(keyId).p8"
        try PrivateKeyFile.writeNew(path: out, contents: try key.pkcs8PEM())
        Console.out("key ID: \(keyId)\nwrote \(out) (mode 0600)")
        return 0
    }

    /// `keys import --pkcs11 URI --module PATH (--pin-file FILE | --pin-env NAME) [--key-id ID] FILE.p8`: puts the
    /// App Store key into the token as a non-extractable private key and its public key, opens it back from the
    /// token, checks it is the same key, and prints the configuration's key entry.
    static func importIntoToken(_ arguments: ArraySlice<String>) throws -> Int32 {
        let options = try Arguments(arguments, valued: ["pkcs11", "module", "pin-file", "pin-env", "key-id"])
        guard options.positionals.count == 1 else { throw UsageError("name one .p8 file") }
        let file = options.positionals[0]
        let uri: PKCS11URI
        do {
            uri = try PKCS11URI(parsing: try options.required("pkcs11"))
        } catch let error as CryptoError {
            throw UsageError("--pkcs11: \(error.message)")
        }
        guard uri.object != nil else { throw UsageError("--pkcs11: name the key's label with object=") }
        let module = try options.required("module")
        let pin: PKCS11KeyReference.PINSource
        switch (options["pin-file"], options["pin-env"]) {
        case (let path?, nil): pin = .file(path)
        case (nil, let name?): pin = .environment(name)
        default: throw UsageError("give the token's user PIN with --pin-file FILE or --pin-env NAME (one of them)")
        }
        let keyId = try options["key-id"] ?? keyId(fromFileName: file)
        guard Identifiers.isKeyId(keyId) else { throw UsageError("--key-id must be 1 to 64 letters or digits") }
        let reference = PKCS11KeyReference(uri: uri, modulePath: module, pin: pin)
        let key = try PrivateKeyFile.load(path: file)
        try key.importIntoToken(reference)
        let stored = try SigningKey(pkcs11: reference)
        guard try stored.publicKey.spkiDER() == key.publicKey.spkiDER() else {
            throw CommandError("\(uri): the key opened from the token is not the key of \(file)")
        }
        var entry = JSONWriter()
        entry.beginObject()
        entry.member("keyId", keyId)
        entry.member("pkcs11", uri.description)
        entry.member("pkcs11Module", module)
        switch pin {
        case .file(let path): entry.member("pinFile", absolute(path))
        case .environment(let name): entry.member("pinEnvironment", name)
        }
        entry.endObject()
        Console.out(
            """
            imported key \(keyId) from \(file) into \(uri) as a sensitive, non-extractable private key (and its \
            public key); it signs in the token and cannot be read back.
            key entry for the configuration's "keys":
              \(String(decoding: entry.bytes, as: UTF8.self))
            \(file) is no longer needed by the service: keep a copy offline if you want one (App Store Connect \
            downloads a key once), then destroy it (shred -u \(file)).
            """)
        return 0
    }

    /// `path` made absolute, so the printed entry means the same file whatever directory the configuration is in.
    private static func absolute(_ path: String) -> String {
        guard let resolved = realpath(path, nil) else { return path }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// `AuthKey_ABC123.p8` or `SubscriptionKey_ABC123.p8` (as App Store Connect names downloads) gives `ABC123`.
    private static func keyId(fromFileName path: String) throws(UsageError) -> String {
        let name = path.split(separator: "/").last.map(String.init) ?? path
        for prefix in ["AuthKey_", "SubscriptionKey_"] where name.hasPrefix(prefix) && name.hasSuffix(".p8") {
            return String(name.dropFirst(prefix.count).dropLast(3))
        }
        throw UsageError("cannot tell the key ID from the file name \(name); give --key-id")
    }
}
