import OfferAPI

/// Dates in App Store payloads: Unix milliseconds, integral (App Store) or fractional (Xcode).
public enum PayloadDate {
    /// The last millisecond of the year 9999.
    public static let latest: Int64 = 253_402_300_799_999

    /// The value as whole milliseconds, or `nil` when it is not a number in 1970...9999.
    public static func milliseconds(_ value: JSONValue) -> Int64? {
        switch value {
        case .int(let number): return (0...latest).contains(number) ? number : nil
        case .double(let number):
            guard number.isFinite, number >= 0, number <= Double(latest) else { return nil }
            return Int64(number.rounded(.down))
        default: return nil
        }
    }
}
