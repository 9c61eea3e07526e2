import OfferAPI

/// A decoded App Store payload that is not what Apple documents: not an object, or a field of the wrong type.
/// The message names the field; it never contains the payload's values.
public struct PayloadError: Error, Equatable, Sendable, CustomStringConvertible {
    public let message: String

    public init(_ message: String) { self.message = message }

    public var description: String { message }
}

/// What the three kinds of App Store signed data share, for the verifier (APPLE.md section 7).
public protocol AppStoreSignedPayload: Sendable, Equatable {
    /// Which kind of signed data this is, for the verifier's kind policy.
    static var kind: SignedDataKind { get }
    init(json: JSONValue) throws(PayloadError)
    /// When the App Store signed the data, Unix milliseconds: the time the certificate chain is checked at.
    var signedDate: Int64? { get }
    /// The app the data belongs to; `nil` when Apple does not put it in this kind of payload.
    var bundleId: String? { get }
    /// `Production`, `Sandbox`, `Xcode` or `LocalTesting`.
    var environment: AppStoreEnvironment? { get }
    /// Apple's names of the fields this kind decodes, with their JSON types (learnt by decoding, so never out of
    /// step with the decoder): for test kits that check a payload template's field names and dates.
    static var fieldTypes: [String: PayloadFieldType] { get }
}

/// The JSON a payload field holds, as the decoder reads it (`object`: a nested object, such as a notification's
/// `data`, whose fields are recorded as `data.bundleId`).
public enum PayloadFieldType: Sendable, Equatable {
    case string, boolean, integer, date, strings, object
}
