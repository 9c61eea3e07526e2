import COpenSSL

/// SHA-256 through OpenSSL.
public enum SHA256 {
    /// SHA-256 fetched once. `EVP_sha256()` makes OpenSSL 3 look the algorithm up again on every use, which
    /// showed in profiles of the signing path; a fetched `EVP_MD` is immutable and safe to share between threads.
    nonisolated(unsafe) static let algorithm: OpaquePointer = {
        guard let digest = EVP_MD_fetch(nil, "SHA256", nil) else { fatalError("OpenSSL has no SHA-256") }
        return digest
    }()

    public static func hash<Bytes: ContiguousBytes>(_ data: Bytes) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        let ok = data.withUnsafeBytes { input in
            digest.withUnsafeMutableBufferPointer { out in
                EVP_Digest(input.baseAddress, input.count, out.baseAddress, &length, algorithm, nil)
            }
        }
        precondition(ok == 1 && length == 32, "EVP_Digest(SHA-256) failed")
        return digest
    }
}

/// Lets `[UInt8]`, `ArraySlice<UInt8>` and `UnsafeRawBufferPointer` feed the hash and the signers.
public protocol ContiguousBytes {
    func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R
}

extension Array: ContiguousBytes where Element == UInt8 {}
extension ArraySlice: ContiguousBytes where Element == UInt8 {}
extension UnsafeRawBufferPointer: ContiguousBytes {
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R { try body(self) }
}
