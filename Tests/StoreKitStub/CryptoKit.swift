// A stub of exactly the CryptoKit declarations OfferKit uses (SHA-256 of the App Attest client data), with Apple's
// signatures, so that `Scripts/check-storekit.sh` type-checks OfferKit's CryptoKit branch on Linux, where OfferKit
// otherwise builds its own SHA-256. Never a package target; bodies never run.

import Foundation

// @available(iOS 13.0, macOS 10.15, tvOS 13.0, watchOS 6.0, *)
// public struct SHA256 : HashFunction
@available(iOS 13.0, macOS 10.15, tvOS 13.0, watchOS 6.0, *)
public struct SHA256 {
    // public typealias Digest = SHA256Digest
    public typealias Digest = SHA256Digest

    // static func hash<D>(data: D) -> Self.Digest where D : DataProtocol (from HashFunction)
    public static func hash<D: DataProtocol>(data: D) -> SHA256.Digest { fatalError("stub") }
}

// @available(iOS 13.0, macOS 10.15, tvOS 13.0, watchOS 6.0, *)
// public struct SHA256Digest : Digest (Hashable, ContiguousBytes, CustomStringConvertible, Sequence of UInt8)
@available(iOS 13.0, macOS 10.15, tvOS 13.0, watchOS 6.0, *)
public struct SHA256Digest: Hashable, Sequence, CustomStringConvertible {
    public typealias Element = UInt8

    public func makeIterator() -> Array<UInt8>.Iterator { fatalError("stub") }

    public var description: String { fatalError("stub") }
}
