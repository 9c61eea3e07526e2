// A stub of exactly the DeviceCheck declarations OfferKit's App Attest provider (Sources/OfferKit/DeviceCheck) and
// the docs' app code use, with Apple's signatures (DCAppAttestService.h and DCError.h as Swift imports them), so
// that `Scripts/check-storekit.sh` type-checks that code on Linux. Never a package target: it would clash with
// Apple's DeviceCheck in an app's build. Bodies never run. Availability is written as Apple declares it, for the
// reader: on Linux the compiler checks names, labels and types, not availability.
// The class is not `Sendable` here: code that type-checks against it also does where Apple's SDK marks it so.

import Foundation

// @available(iOS 14.0, macOS 11.0, tvOS 15.0, watchOS 9.0, *)
// open class DCAppAttestService : NSObject
@available(iOS 14.0, macOS 11.0, tvOS 15.0, watchOS 9.0, *)
open class DCAppAttestService: NSObject {
    // open class var shared: DCAppAttestService { get }
    open class var shared: DCAppAttestService { fatalError("stub") }

    // open var isSupported: Bool { get }
    open var isSupported: Bool { fatalError("stub") }

    // open func generateKey(completionHandler: @escaping @Sendable (String?, (any Error)?) -> Void)
    open func generateKey(completionHandler: @escaping @Sendable (String?, (any Error)?) -> Void) {
        fatalError("stub")
    }

    // open func generateKey() async throws -> String
    open func generateKey() async throws -> String { fatalError("stub") }

    // open func attestKey(_ keyId: String, clientDataHash: Data,
    //     completionHandler: @escaping @Sendable (Data?, (any Error)?) -> Void)
    open func attestKey(
        _ keyId: String, clientDataHash: Data, completionHandler: @escaping @Sendable (Data?, (any Error)?) -> Void
    ) {
        fatalError("stub")
    }

    // open func attestKey(_ keyId: String, clientDataHash: Data) async throws -> Data
    open func attestKey(_ keyId: String, clientDataHash: Data) async throws -> Data { fatalError("stub") }

    // open func generateAssertion(_ keyId: String, clientDataHash: Data,
    //     completionHandler: @escaping @Sendable (Data?, (any Error)?) -> Void)
    open func generateAssertion(
        _ keyId: String, clientDataHash: Data, completionHandler: @escaping @Sendable (Data?, (any Error)?) -> Void
    ) {
        fatalError("stub")
    }

    // open func generateAssertion(_ keyId: String, clientDataHash: Data) async throws -> Data
    open func generateAssertion(_ keyId: String, clientDataHash: Data) async throws -> Data { fatalError("stub") }
}

// @available(iOS 11.0, macOS 10.15, tvOS 11.0, watchOS 9.0, *)
// public struct DCError : CustomNSError, Hashable, Error
@available(iOS 11.0, macOS 10.15, tvOS 11.0, watchOS 9.0, *)
public struct DCError: CustomNSError, Hashable, Error {
    // public static var errorDomain: String { get } (DCErrorDomain's value)
    public static var errorDomain: String { "com.apple.devicecheck.error" }

    // public enum Code : Int, @unchecked Sendable, Equatable
    public enum Code: Int, @unchecked Sendable, Equatable {
        case unknownSystemFailure = 0
        case featureUnsupported = 1
        @available(iOS 14.0, macOS 11.0, tvOS 15.0, watchOS 9.0, *)
        case invalidInput = 2
        @available(iOS 14.0, macOS 11.0, tvOS 15.0, watchOS 9.0, *)
        case invalidKey = 3
        @available(iOS 14.0, macOS 11.0, tvOS 15.0, watchOS 9.0, *)
        case serverUnavailable = 4
    }

    // public static var unknownSystemFailure: DCError.Code { get } (and one for each code)
    public static var unknownSystemFailure: DCError.Code { .unknownSystemFailure }
    public static var featureUnsupported: DCError.Code { .featureUnsupported }
    @available(iOS 14.0, macOS 11.0, tvOS 15.0, watchOS 9.0, *)
    public static var invalidInput: DCError.Code { .invalidInput }
    @available(iOS 14.0, macOS 11.0, tvOS 15.0, watchOS 9.0, *)
    public static var invalidKey: DCError.Code { .invalidKey }
    @available(iOS 14.0, macOS 11.0, tvOS 15.0, watchOS 9.0, *)
    public static var serverUnavailable: DCError.Code { .serverUnavailable }

    // var code: DCError.Code { get } (from _BridgedStoredNSError)
    public let code: DCError.Code

    // init(_ code: DCError.Code, userInfo: [String : Any] = [:]) (from _BridgedStoredNSError; userInfo dropped here)
    public init(_ code: DCError.Code, userInfo: [String: Any] = [:]) {
        self.code = code
    }

    public var errorCode: Int { code.rawValue }
}
