/// The UUID text form: 36 characters, hex digits in either case in groups of 8-4-4-4-12, without braces.
public enum UUIDText {
    /// Whether `text` is a UUID in its text form (any version, any case).
    public static func isValid(_ text: String) -> Bool {
        guard text.utf8.count == 36 else { return false }
        for (index, byte) in text.utf8.enumerated() {
            if index == 8 || index == 13 || index == 18 || index == 23 {
                guard byte == UInt8(ascii: "-") else { return false }
            } else {
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "f"),
                    UInt8(ascii: "A")...UInt8(ascii: "F"):
                    continue
                default: return false
                }
            }
        }
        return true
    }
}
