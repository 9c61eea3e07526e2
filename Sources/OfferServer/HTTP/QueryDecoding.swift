import OfferAPI

/// The one place query string arguments are percent-decoded. libmicrohttpd is told to decode nothing (the router
/// needs the raw path, and the same callback serves the path and the query), and it has already turned `+` into a
/// space, as forms encode it; what is left is `%XX`.
enum QueryDecoding {
    /// `text` with each `%XX` (two hex digits) replaced by its byte; a `%` not followed by two hex digits is kept
    /// as it is. Bytes that are not UTF-8 become U+FFFD.
    static func decode(_ text: String) -> String {
        guard text.utf8.contains(UInt8(ascii: "%")) else { return text }
        return String(decoding: Hex.percentDecoded(text.utf8).bytes, as: UTF8.self)
    }
}
