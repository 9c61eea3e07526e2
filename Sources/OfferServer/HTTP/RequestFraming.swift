import CMicroHTTPD
import OfferCore

#if canImport(Glibc)
    import Glibc
#endif

/// What a request head says about its body's length, checked as RFC 9112 (section 6) asks before a byte of the
/// body is read: a head whose framing two parties could read differently is refused with 400 and the connection
/// closed, so a request hidden in its body is never served.
///
/// libmicrohttpd 0.9.75 reads `Transfer-Encoding` and ignores `Content-Length` beside it, takes the first of two
/// `Content-Length`s, and keeps `Transfer-Encoding : chunked` (a space before the colon) as a header named
/// `Transfer-Encoding ` that it then does not apply. A proxy in front may read any of these the other way, so
/// each is refused here. (Its strict mode that refuses a space before the colon, level -1, also stops checking
/// `Host`; the server keeps level 1 for `Host` and checks names here.)
///
/// The same pass refuses what a proxy could read as a line end or a different header: two `Host` headers (RFC 9112,
/// section 3.2), a name with a byte that is not a token character, and a value with a control character other
/// than a tab (a bare CR, which libmicrohttpd keeps inside the value, DEL, ...).
struct RequestFraming {
    private var contentLengths = 0
    private var firstContentLength: [UInt8] = []
    private var differingContentLengths = false
    private var transferEncodings = 0
    private var chunkedOnly = true
    private var malformedName = false
    private var hosts = 0
    /// A header name with a byte outside RFC 9110's token characters, or a value with a control character other
    /// than a tab (a bare CR, DEL, ...).
    private var controlCharacter: String?

    /// Looks at every header of `connection`'s request once (one pass, no copies but a `Content-Length`'s value).
    init(of connection: OpaquePointer) {
        withUnsafeMutablePointer(to: &self) { framing in
            _ = MHD_get_connection_values(connection, .HEADER_KIND, inspectHeader, framing)
        }
    }

    init() {}

    /// Why the head's framing is refused, or `nil` when it is unambiguous.
    var problem: String? {
        if malformedName { return "a header name contains whitespace (no space is allowed before the colon)" }
        if let controlCharacter { return controlCharacter }
        if hosts > 1 { return "more than one Host header (RFC 9112, section 3.2)" }
        if transferEncodings > 0 && contentLengths > 0 {
            return "Transfer-Encoding and Content-Length together"
        }
        if transferEncodings > 1 { return "more than one Transfer-Encoding header" }
        if transferEncodings == 1 && !chunkedOnly { return "a Transfer-Encoding other than chunked" }
        if differingContentLengths { return "Content-Length headers that differ" }
        if contentLengths > 1 { return "more than one Content-Length header" }
        return nil
    }

    /// Takes one header line as libmicrohttpd split it: the name (up to the colon) and the value.
    mutating func see(name: UnsafePointer<CChar>, value: UnsafePointer<CChar>?) {
        if strpbrk(name, " \t") != nil { malformedName = true }
        if controlCharacter == nil {
            if name.pointee == 0 {
                controlCharacter = "a header with an empty name (a line starting with its colon)"
            } else if let byte = Self.firstNonToken(name) {
                controlCharacter =
                    "a header name contains the byte 0x\(Self.hex(byte)) (only letters, digits and !#$%&'*+-.^_`|~)"
            } else if let value, let byte = Self.firstControl(value) {
                controlCharacter = "a header value contains the control character 0x\(Self.hex(byte))"
            }
        }
        if strcasecmp(name, "Host") == 0 { hosts += 1 }
        if strcasecmp(name, "Content-Length") == 0 {
            let bytes = value.map { Array(UnsafeRawBufferPointer(start: $0, count: strlen($0))) } ?? []
            if contentLengths == 0 {
                firstContentLength = bytes
            } else if bytes != firstContentLength {
                differingContentLengths = true
            }
            contentLengths += 1
        } else if strcasecmp(name, "Transfer-Encoding") == 0 {
            transferEncodings += 1
            if value.map({ strcasecmp($0, "chunked") }) != 0 { chunkedOnly = false }
        }
    }

    /// RFC 9110's `tchar`: the bytes a header name is made of.
    private static let tokenBytes: [Bool] = (0..<256).map { byte in
        Identifiers.isAlphanumeric(UInt8(byte)) || "!#$%&'*+-.^_`|~".utf8.contains(UInt8(byte))
    }

    /// The first byte of `name` that is not a token character.
    private static func firstNonToken(_ name: UnsafePointer<CChar>) -> UInt8? {
        var cursor = UnsafeRawPointer(name).assumingMemoryBound(to: UInt8.self)
        while cursor.pointee != 0 {
            if !tokenBytes[Int(cursor.pointee)] { return cursor.pointee }
            cursor += 1
        }
        return nil
    }

    /// The first control character of `value` other than a tab: a bare CR (libmicrohttpd ends lines at LF and
    /// keeps a lone CR), DEL, or any other byte below 0x20. (A NUL ends the C string libmicrohttpd hands over.)
    private static func firstControl(_ value: UnsafePointer<CChar>) -> UInt8? {
        var cursor = UnsafeRawPointer(value).assumingMemoryBound(to: UInt8.self)
        while cursor.pointee != 0 {
            let byte = cursor.pointee
            if (byte < 0x20 && byte != 0x09) || byte == 0x7F { return byte }
            cursor += 1
        }
        return nil
    }

    private static func hex(_ byte: UInt8) -> String {
        let digits = Array("0123456789ABCDEF")
        return String([digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]])
    }

    /// The 400 for `problem`: the usual JSON error, and `Connection: close` (libmicrohttpd closes after it too,
    /// since the answer comes before the body is read).
    static func refusal(_ problem: String) -> HTTPResponse {
        var response =
            HTTPError(code: .invalidRequest, message: "a request two parsers could read differently: \(problem)")
            .response
        response.headers.append(HTTPHeader("Connection", "close"))
        return response
    }
}

/// libmicrohttpd's header iterator: hands each header to the `RequestFraming` behind `cls`.
private func inspectHeader(
    _ cls: UnsafeMutableRawPointer?, _ kind: MHD_ValueKind, _ key: UnsafePointer<CChar>?,
    _ value: UnsafePointer<CChar>?
) -> MHD_Result {
    guard let cls, let key else { return .YES }
    cls.assumingMemoryBound(to: RequestFraming.self).pointee.see(name: key, value: value)
    return .YES
}

/// The type of `MHD_OPTION_UNESCAPE_CALLBACK`'s function (0.9.75's header names none).
typealias UnescapeCallback =
    @convention(c) (
        UnsafeMutableRawPointer?, OpaquePointer?, UnsafeMutablePointer<CChar>?
    ) -> Int

/// libmicrohttpd's unescape callback, given for the path and the query string's names and values: it decodes
/// nothing, so the router sees the path as the client sent it (`/%6detrics` is not `/metrics`, and `%00` does not
/// cut the path short). The query arguments handlers read are decoded once, in `QueryDecoding`.
func keepEscaped(
    _ cls: UnsafeMutableRawPointer?, _ connection: OpaquePointer?, _ text: UnsafeMutablePointer<CChar>?
) -> Int {
    text.map { strlen($0) } ?? 0
}
