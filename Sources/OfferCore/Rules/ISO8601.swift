/// ISO 8601 / RFC 3339 date-times in Unix milliseconds, without Foundation (the hot path and the domain
/// never load it).
public enum ISO8601 {
    /// Unix milliseconds of an RFC 3339 / ISO 8601 date-time with seconds and an offset:
    /// `2026-12-01T00:00:00Z`, `2026-12-01T02:00:00+02:00`, `2026-12-01T00:00:00.250Z`. Fractions beyond
    /// milliseconds are truncated. `nil` for anything else, including local times without an offset.
    public static func parse(_ text: String) -> Int64? {
        var scanner = ISO8601Scanner(Array(text.utf8))
        guard let year = scanner.number(digits: 4), scanner.skip("-"),
            let month = scanner.number(digits: 2), scanner.skip("-"),
            let day = scanner.number(digits: 2), scanner.skip("T") || scanner.skip("t"),
            let hour = scanner.number(digits: 2), scanner.skip(":"),
            let minute = scanner.number(digits: 2), scanner.skip(":"),
            let second = scanner.number(digits: 2)
        else { return nil }
        var milliseconds: Int64 = 0
        if scanner.skip(".") {
            guard let fraction = scanner.fractionMilliseconds() else { return nil }
            milliseconds = fraction
        }
        var offsetSeconds: Int64 = 0
        if scanner.skip("Z") || scanner.skip("z") {
            offsetSeconds = 0
        } else {
            let sign: Int64
            if scanner.skip("+") {
                sign = 1
            } else if scanner.skip("-") {
                sign = -1
            } else {
                return nil
            }
            guard let offsetHours = scanner.number(digits: 2), scanner.skip(":"),
                let offsetMinutes = scanner.number(digits: 2), offsetHours <= 23, offsetMinutes <= 59
            else { return nil }
            offsetSeconds = sign * (offsetHours * 3600 + offsetMinutes * 60)
        }
        guard scanner.atEnd, (1...12).contains(month), day >= 1, day <= daysInMonth(year: year, month: month),
            hour <= 23, minute <= 59, second <= 59
        else { return nil }
        let days = daysFromCivil(year: year, month: month, day: day)
        let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offsetSeconds
        return seconds * 1000 + milliseconds
    }

    /// `2026-12-01T00:00:00Z`, with `.mmm` only when the milliseconds are not zero.
    public static func format(_ milliseconds: Int64) -> String {
        let (seconds, millis) = floorDivide(milliseconds, 1000)
        let (days, secondOfDay) = floorDivide(seconds, 86_400)
        let (year, month, day) = civilFromDays(days)
        var text = "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))T"
        text += "\(pad(secondOfDay / 3600, 2)):\(pad(secondOfDay / 60 % 60, 2)):\(pad(secondOfDay % 60, 2))"
        if millis != 0 { text += ".\(pad(millis, 3))" }
        return text + "Z"
    }

    /// `2026-12-01T00:00:00.000Z`: always with milliseconds, so every line of a log has the same width of time.
    /// Written digit by digit into one buffer (it is on every log line); years 0 to 9999, else as `format` writes.
    public static func formatWithMilliseconds(_ milliseconds: Int64) -> String {
        let (seconds, millis) = floorDivide(milliseconds, 1000)
        let (days, secondOfDay) = floorDivide(seconds, 86_400)
        let (year, month, day) = civilFromDays(days)
        guard (0...9999).contains(year) else {
            let text = format(milliseconds)
            return millis == 0 ? String(text.dropLast()) + ".000Z" : text
        }
        return String(unsafeUninitializedCapacity: 24) { buffer in
            func put(_ value: Int64, _ width: Int, at offset: Int) {
                var value = value
                for index in stride(from: offset + width - 1, through: offset, by: -1) {
                    buffer[index] = UInt8(ascii: "0") + UInt8(value % 10)
                    value /= 10
                }
            }
            put(year, 4, at: 0)
            put(month, 2, at: 5)
            put(day, 2, at: 8)
            put(secondOfDay / 3600, 2, at: 11)
            put(secondOfDay / 60 % 60, 2, at: 14)
            put(secondOfDay % 60, 2, at: 17)
            put(millis, 3, at: 20)
            for (offset, byte) in [(4, "-"), (7, "-"), (10, "T"), (13, ":"), (16, ":"), (19, "."), (23, "Z")]
                as [(Int, Unicode.Scalar)]
            {
                buffer[offset] = UInt8(ascii: byte)
            }
            return 24
        }
    }

    // MARK: - Calendar arithmetic (proleptic Gregorian, after Howard Hinnant's algorithms)

    private static func isLeap(_ year: Int64) -> Bool { year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) }

    private static func daysInMonth(year: Int64, month: Int64) -> Int64 {
        switch month {
        case 2: return isLeap(year) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    private static func daysFromCivil(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    private static func civilFromDays(_ days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shiftedMonth = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * shiftedMonth + 2) / 5 + 1
        let month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    private static func floorDivide(_ a: Int64, _ b: Int64) -> (quotient: Int64, remainder: Int64) {
        let remainder = a % b
        return remainder < 0 ? (a / b - 1, remainder + b) : (a / b, remainder)
    }

    private static func pad(_ value: Int64, _ width: Int) -> String {
        let digits = String(value.magnitude)
        let padded = String(repeating: "0", count: max(0, width - digits.count)) + digits
        return value < 0 ? "-" + padded : padded
    }
}

/// Reads the fixed-width fields of an ISO 8601 date-time.
private struct ISO8601Scanner {
    private let bytes: [UInt8]
    private var index = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var atEnd: Bool { index == bytes.count }

    mutating func skip(_ character: Unicode.Scalar) -> Bool {
        guard index < bytes.count, bytes[index] == UInt8(ascii: character) else { return false }
        index += 1
        return true
    }

    /// Exactly `digits` ASCII digits.
    mutating func number(digits: Int) -> Int64? {
        guard bytes.count - index >= digits else { return nil }
        var value: Int64 = 0
        for _ in 0..<digits {
            let byte = bytes[index]
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            value = value * 10 + Int64(byte - UInt8(ascii: "0"))
            index += 1
        }
        return value
    }

    /// One to nine digits after the decimal point, as whole milliseconds (truncated).
    mutating func fractionMilliseconds() -> Int64? {
        var count = 0
        var milliseconds: Int64 = 0
        while index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") {
            if count < 3 { milliseconds = milliseconds * 10 + Int64(bytes[index] - UInt8(ascii: "0")) }
            count += 1
            index += 1
        }
        guard (1...9).contains(count) else { return nil }
        while count < 3 {
            milliseconds *= 10
            count += 1
        }
        return milliseconds
    }
}
