import COpenSSL

/// Drains OpenSSL's thread-local error queue so one failure never leaks into the next call's report.
enum OpenSSLError {
    /// The first queued reason, or `nil`. Reasons are library text, never key material.
    @discardableResult
    static func drain() -> String? {
        var first: String?
        while case let code = ERR_get_error(), code != 0 {
            if first == nil, let reason = ERR_reason_error_string(code) { first = String(cString: reason) }
        }
        return first
    }
}

/// Reads all bytes an OpenSSL memory BIO holds.
func readMemoryBIO(_ bio: OpaquePointer) -> [UInt8] {
    var data: UnsafeMutablePointer<CChar>?
    let length = offer_BIO_get_mem_data(bio, &data)
    guard length > 0, let data else { return [] }
    return data.withMemoryRebound(to: UInt8.self, capacity: length) {
        Array(UnsafeBufferPointer(start: $0, count: length))
    }
}
