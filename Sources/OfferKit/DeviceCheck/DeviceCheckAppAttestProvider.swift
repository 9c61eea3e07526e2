#if canImport(DeviceCheck)
    import DeviceCheck
    import Foundation

    /// The device's App Attest: `DCAppAttestService.shared`, with Apple's `DCError`s sorted into
    /// `AppAttestProviderError`s. Where App Attest does not exist (watchOS before 9) it reports `isSupported` as
    /// `false`, so `AppAttest`'s policy decides.
    public struct DeviceCheckAppAttestProvider: AppAttestProvider {
        /// The provider over `DCAppAttestService.shared`.
        public init() {}

        /// `DCAppAttestService.shared.isSupported`.
        public var isSupported: Bool {
            guard #available(iOS 14.0, macOS 11.0, tvOS 15.0, watchOS 9.0, *) else { return false }
            return DCAppAttestService.shared.isSupported
        }

        /// A new key in the Secure Enclave; its ID.
        public func generateKey() async throws -> String {
            guard #available(iOS 14.0, macOS 11.0, tvOS 15.0, watchOS 9.0, *) else { throw Self.unsupported }
            do {
                return try await DCAppAttestService.shared.generateKey()
            } catch {
                throw Self.sorted(error)
            }
        }

        /// Apple's attestation of key `keyId` over `clientDataHash`.
        public func attestKey(_ keyId: String, clientDataHash: Data) async throws -> Data {
            guard #available(iOS 14.0, macOS 11.0, tvOS 15.0, watchOS 9.0, *) else { throw Self.unsupported }
            do {
                return try await DCAppAttestService.shared.attestKey(keyId, clientDataHash: clientDataHash)
            } catch {
                throw Self.sorted(error)
            }
        }

        /// An assertion with key `keyId` over `clientDataHash`.
        public func generateAssertion(_ keyId: String, clientDataHash: Data) async throws -> Data {
            guard #available(iOS 14.0, macOS 11.0, tvOS 15.0, watchOS 9.0, *) else { throw Self.unsupported }
            do {
                return try await DCAppAttestService.shared.generateAssertion(keyId, clientDataHash: clientDataHash)
            } catch {
                throw Self.sorted(error)
            }
        }

        static let unsupported = AppAttestProviderError(.unsupported, "App Attest needs watchOS 9")

        /// `DCError` by its code, read through `NSError` (domain and code), which works whichever way the SDK
        /// bridges it. `invalidInput` counts as an invalid key: OfferKit's client data hashes are always 32 bytes,
        /// so the input Apple refuses is the key ID (one not from this device, or garbled in the store).
        @available(iOS 14.0, macOS 11.0, tvOS 15.0, watchOS 9.0, *)
        static func sorted(_ error: any Error) -> any Error {
            if error is CancellationError { return error }
            let nsError = error as NSError
            guard nsError.domain == DCError.errorDomain, let code = DCError.Code(rawValue: nsError.code) else {
                return AppAttestProviderError(.failed, "\(nsError.domain) \(nsError.code)")
            }
            switch code {
            case .invalidKey:
                return AppAttestProviderError(.invalidKey, "DCError.invalidKey")
            case .invalidInput:
                return AppAttestProviderError(.invalidKey, "DCError.invalidInput")
            case .serverUnavailable:
                return AppAttestProviderError(.serverUnavailable, "DCError.serverUnavailable")
            case .featureUnsupported:
                return AppAttestProviderError(.unsupported, "DCError.featureUnsupported")
            case .unknownSystemFailure:
                return AppAttestProviderError(.failed, "DCError.unknownSystemFailure")
            @unknown default:
                return AppAttestProviderError(.failed, "DCError \(nsError.code)")
            }
        }
    }
#endif
