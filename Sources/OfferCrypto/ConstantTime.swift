import COpenSSL

/// Comparisons of secrets that take the same time wherever the first difference is, so a caller who can time the
/// answers learns nothing of the secret (OpenSSL's `CRYPTO_memcmp`).
public enum ConstantTime {
    /// Whether `left` and `right` hold the same bytes. Only their lengths may leak, never where they differ.
    public static func equals(_ left: [UInt8], _ right: [UInt8]) -> Bool {
        guard left.count == right.count else { return false }
        guard !left.isEmpty else { return true }
        return left.withUnsafeBytes { a in
            right.withUnsafeBytes { b in CRYPTO_memcmp(a.baseAddress, b.baseAddress, a.count) == 0 }
        }
    }
}
