import OfferAPI
import OfferCrypto
import OfferServer

/// The test CA as `offer-signer-testkit ca` writes it to a folder: the chain and the key that
/// `offer-signer-testkit sign` and the fake App Store Server API sign Apple-like data with.
public struct TestAuthorityFolder: Sendable {
    /// The `x5c` certificates, leaf first (DER).
    public let certificates: [[UInt8]]
    public let key: SigningKey

    /// A folder that cannot be read; the message names the file and how to make it.
    public struct Error: Swift.Error, Equatable, Sendable, CustomStringConvertible {
        public let message: String
        public init(_ message: String) { self.message = message }
        public var description: String { message }
    }

    /// Reads `leaf.cer`, `intermediate.cer`, `root.cer` and `leaf.p8` from `directory`, or with `xcode` the
    /// self-signed `xcode.cer` and `xcode.p8`.
    public init(directory: String, xcode: Bool = false) throws(Error) {
        let names = xcode ? ["xcode.cer"] : ["leaf.cer", "intermediate.cer", "root.cer"]
        var certificates: [[UInt8]] = []
        for name in names {
            guard let der = FileBytes.read("\(directory)/\(name)") else {
                throw Error("\(directory)/\(name): cannot read; run `offer-signer-testkit ca --out \(directory)`")
            }
            certificates.append(der)
        }
        let keyPath = "\(directory)/\(xcode ? "xcode.p8" : "leaf.p8")"
        do {
            key = try PrivateKeyFile.load(path: keyPath)
        } catch let error as CryptoError {
            throw Error("\(keyPath): \(error.message)")
        } catch {
            throw Error("\(keyPath): cannot load the key")
        }
        self.certificates = certificates
    }

    /// The chain and leaf key of `factory` (a test CA made in memory), as if read from its folder.
    public init(_ factory: SignedDataFactory) {
        certificates = [factory.leaf.der, factory.intermediate.der, factory.root.der]
        key = factory.leaf.key
    }

    /// `payload` (a JSON object) signed as App Store data with this chain.
    public func sign(_ payload: JSONValue) throws -> String {
        try SignedDataFactory.sign(payload, certificates: certificates, key: key)
    }
}
