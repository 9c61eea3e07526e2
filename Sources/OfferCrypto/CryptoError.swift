/// An error from the crypto layer. `message` never contains key material.
public struct CryptoError: Error, Equatable, Sendable, CustomStringConvertible {
    public struct Code: RawRepresentable, Hashable, Sendable {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        public static let keyFileMissing = Code(rawValue: "key_file_missing")
        public static let keyFileUnreadable = Code(rawValue: "key_file_unreadable")
        public static let keyFileTooOpen = Code(rawValue: "key_file_permissions_too_open")
        public static let invalidKey = Code(rawValue: "invalid_key")
        public static let wrongCurve = Code(rawValue: "wrong_key_type")
        public static let invalidSignature = Code(rawValue: "invalid_signature")
        public static let invalidCertificate = Code(rawValue: "invalid_certificate")
        public static let internalFailure = Code(rawValue: "crypto_failure")
        /// The certificate chain does not lead to a configured root, or is invalid at the given time.
        public static let untrustedChain = Code(rawValue: "untrusted_certificate_chain")
        /// A certificate in an otherwise valid chain lacks the Apple extension its position requires.
        public static let missingAppleExtension = Code(rawValue: "missing_apple_extension")
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
