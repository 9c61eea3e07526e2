/// Why the device's App Attest did not give a key, an attestation or an assertion, by a stable `code`. A provider
/// throws it to say what happened in terms OfferKit acts on; OfferKit reports it as `OfferKitError.appAttest`.
public struct AppAttestProviderError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong. Extensible: switch on the known codes and treat any other as `.failed`.
    public struct Code: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        /// The code's stable text.
        public let rawValue: String

        /// A code from its text.
        public init(rawValue: String) { self.rawValue = rawValue }

        /// The code's text.
        public var description: String { rawValue }

        /// Apple says the key cannot be used (`DCError.invalidKey`, or `invalidInput` for a key ID it does not
        /// know): OfferKit drops the key and attests a new one.
        public static let invalidKey = Code(rawValue: "invalid_key")
        /// Apple's App Attest service could not be reached (`DCError.serverUnavailable`): try again later.
        public static let serverUnavailable = Code(rawValue: "server_unavailable")
        /// This device cannot attest (`isSupported` is `false`, or `DCError.featureUnsupported`).
        public static let unsupported = Code(rawValue: "unsupported")
        /// Anything else (`DCError.unknownSystemFailure`, an error a provider does not sort).
        public static let failed = Code(rawValue: "failed")
    }

    /// What went wrong.
    public let code: Code
    /// For logs: never a key ID, an attestation or an assertion.
    public let message: String

    /// An error with its code and a message for logs.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// `code: message`, for logs.
    public var description: String { "\(code): \(message)" }
}
