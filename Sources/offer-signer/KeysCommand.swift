import OfferAPI
import OfferCore
import OfferCrypto
import OfferServer

/// `offer-signer keys generate` and `keys import-storekit`.
enum KeysCommand {
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
}
