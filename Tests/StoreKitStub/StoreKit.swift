// A stub of exactly the StoreKit declarations OfferKit's StoreKit layer and the docs' app code use, with
// Apple's signatures (from developer.apple.com/documentation/storekit), so that `Scripts/check-storekit.sh`
// type-checks that code on Linux. Never a package target: it would clash with Apple's StoreKit in an app's build.
// Bodies never run. Availability is written as Apple declares it, for the reader: on Linux the compiler checks
// names, labels and types, not availability, so `#available` guards in OfferKit are reviewed by hand
// (Product and its nested types: iOS 15; AppTransaction: iOS 16; win-back offers: iOS 18).

import Foundation

public struct Product: Identifiable, Hashable, Sendable {
    public typealias ID = String

    public let id: Product.ID
    public let displayName: String
    public let displayPrice: String
    public let subscription: Product.SubscriptionInfo?

    /// The stub's own, for `PlanMappingCheck` (Apple's products come from the App Store).
    public init(id: Product.ID, subscription: Product.SubscriptionInfo?) {
        self.id = id
        self.displayName = id
        self.displayPrice = "$0.99"
        self.subscription = subscription
    }

    // @MainActor func purchase(options: Set<Product.PurchaseOption> = []) async throws -> Product.PurchaseResult
    @MainActor public func purchase(options: Set<Product.PurchaseOption> = []) async throws -> Product.PurchaseResult {
        fatalError("stub")
    }

    // static func products<Identifiers>(for identifiers: Identifiers) async throws -> [Product]
    //     where Identifiers : Collection, Identifiers.Element == String
    public static func products<Identifiers: Collection>(for identifiers: Identifiers) async throws -> [Product]
    where Identifiers.Element == String {
        fatalError("stub")
    }

    /// The stub's options record the constructor and arguments that made them (`recorded`), so that
    /// `PlanMappingCheck` can run OfferKit's mapping and compare; Apple's options are opaque.
    public struct PurchaseOption: Hashable, Sendable {
        public let recorded: String

        // static func appAccountToken(_ token: UUID) -> Product.PurchaseOption
        public static func appAccountToken(_ token: UUID) -> Product.PurchaseOption {
            PurchaseOption(recorded: "appAccountToken(\(token.uuidString))")
        }

        // @backDeployed(before: iOS 26.0, ...)
        // static func promotionalOffer(_ offerID: String, compactJWS: String) -> [Product.PurchaseOption]
        public static func promotionalOffer(_ offerID: String, compactJWS: String) -> [Product.PurchaseOption] {
            [PurchaseOption(recorded: "promotionalOffer(\(offerID), compactJWS: \(compactJWS))")]
        }

        // @backDeployed(before: iOS 18.4, ...)
        // static func introductoryOfferEligibility(compactJWS: String) -> Product.PurchaseOption
        public static func introductoryOfferEligibility(compactJWS: String) -> Product.PurchaseOption {
            PurchaseOption(recorded: "introductoryOfferEligibility(compactJWS: \(compactJWS))")
        }

        // iOS 15.0 - 26.0 (deprecated):
        // static func promotionalOffer(offerID: String, keyID: String, nonce: UUID, signature: Data, timestamp: Int)
        //     -> Product.PurchaseOption
        @available(iOS, introduced: 15.0, deprecated: 26.0)
        @available(macOS, introduced: 12.0, deprecated: 26.0)
        public static func promotionalOffer(
            offerID: String, keyID: String, nonce: UUID, signature: Data, timestamp: Int
        ) -> Product.PurchaseOption {
            let hex = signature.map { String($0, radix: 16) }.map { $0.count == 1 ? "0" + $0 : $0 }.joined()
            return PurchaseOption(
                recorded: "promotionalOffer(offerID: \(offerID), keyID: \(keyID), nonce: \(nonce.uuidString), "
                    + "signature: \(hex), timestamp: \(timestamp))")
        }

        // iOS 18.0: static func winBackOffer(_ offer: Product.SubscriptionOffer) -> Product.PurchaseOption
        @available(iOS 18.0, macOS 15.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *)
        public static func winBackOffer(_ offer: Product.SubscriptionOffer) -> Product.PurchaseOption {
            PurchaseOption(recorded: "winBackOffer(\(offer.id ?? "nil"))")
        }
    }

    public enum PurchaseResult: Sendable {
        case success(VerificationResult<Transaction>)
        case userCancelled
        case pending
    }

    public struct SubscriptionInfo: Hashable, Sendable {
        public let subscriptionGroupID: String
        public let introductoryOffer: Product.SubscriptionOffer?
        public let promotionalOffers: [Product.SubscriptionOffer]
        @available(iOS 18.0, macOS 15.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *)
        public var winBackOffers: [Product.SubscriptionOffer] { stubWinBackOffers }
        let stubWinBackOffers: [Product.SubscriptionOffer]

        /// The stub's own, for `PlanMappingCheck`.
        public init(promotionalOffers: [Product.SubscriptionOffer], winBackOffers: [Product.SubscriptionOffer]) {
            self.subscriptionGroupID = "21000001"
            self.introductoryOffer = nil
            self.promotionalOffers = promotionalOffers
            self.stubWinBackOffers = winBackOffers
        }

        // static func status(for groupID: String) async throws -> [Product.SubscriptionInfo.Status]
        public static func status(for groupID: String) async throws -> [Product.SubscriptionInfo.Status] {
            fatalError("stub")
        }

        public struct Status: Equatable, Sendable {
            public let transaction: VerificationResult<Transaction>
            public let renewalInfo: VerificationResult<Product.SubscriptionInfo.RenewalInfo>
        }

        public struct RenewalInfo: Equatable, Sendable {
            public let eligibleWinBackOfferIDs: [String]
        }
    }

    public struct SubscriptionOffer: Hashable, Sendable {
        public let id: String?
        public let displayPrice: String

        /// The stub's own, for `PlanMappingCheck`.
        public init(id: String?) {
            self.id = id
            self.displayPrice = "$0.49"
        }
    }
}

public enum VerificationResult<SignedType: Sendable>: Sendable {
    case unverified(SignedType, VerificationResult<SignedType>.VerificationError)
    case verified(SignedType)

    public enum VerificationError: Error, Sendable {
        case invalidSignature
    }

    // var payloadValue: SignedType { get throws }
    public var payloadValue: SignedType {
        get throws { fatalError("stub") }
    }

    // var jwsRepresentation: String { get }
    public var jwsRepresentation: String { fatalError("stub") }
}

extension VerificationResult: Equatable where SignedType: Equatable {}

public struct Transaction: Equatable, Sendable {
    public let id: UInt64
    public let productID: String
    public let appAccountToken: UUID?
    public let ownershipType: Transaction.OwnershipType

    public struct OwnershipType: Hashable, Sendable {
        let rawValue: String
        public static let purchased = OwnershipType(rawValue: "PURCHASED")
        public static let familyShared = OwnershipType(rawValue: "FAMILY_SHARED")
    }

    public func finish() async { fatalError("stub") }
}

@available(iOS 16.0, macOS 13.0, tvOS 16.0, watchOS 9.0, visionOS 1.0, *)
public struct AppTransaction: Equatable, Sendable {
    // static var shared: VerificationResult<AppTransaction> { get async throws }
    public static var shared: VerificationResult<AppTransaction> {
        get async throws { fatalError("stub") }
    }
}
