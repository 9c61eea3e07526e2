#if canImport(Glibc)
    import Glibc
#endif

/// Reads a connection's bytes as they arrive, before libmicrohttpd parses them, for what its API cannot show: a NUL
/// in the request head (libmicrohttpd cuts a header value at it and drops the rest), a folded header line
/// (obs-fold, which it joins), and a chunk-size line, chunk end or trailer line ended by a bare LF (which it takes
/// as a line end where a proxy in front may not: RFC 9112 sections 2.2 and 7.1 let a recipient refuse them, and
/// refusing is what keeps two parsers from reading one stream as different requests).
///
/// It follows the stream's framing itself, request after request on a keep-alive connection: the head up to its
/// empty line (`Content-Length` and `Transfer-Encoding: chunked` noted on the way), then the body by its length or
/// its chunks. Any other framing question (two lengths, another coding) is `RequestFraming`'s, which refuses the
/// request and closes the connection, so this reader never has to agree with libmicrohttpd about such a stream.
///
/// What it finds is `problem`, read by the server before it answers (400 and close); it stays for the connection's
/// life, so once set no further request on it is served. A stream it cannot follow (a length or chunk size too
/// long, a CR inside a chunk-size line, a chunk longer than its size) is a problem too: fail closed. A bare LF in a
/// chunk-size line or at a chunk's end is also replaced, in the buffer libmicrohttpd is about to read, with a NUL,
/// so that libmicrohttpd refuses the body as malformed chunked encoding (its own 400 and close) rather than read on
/// in a framing the proxy may not share; where it would read on anyway (the LF after a chunk extension), the
/// service refuses the request when the body ends. Pure: bytes in, a verdict out.
struct RawRequestCheck {
    enum Phase: Equatable {
        /// Before a request line (empty lines are skipped, as libmicrohttpd does).
        case start
        /// In the request line or a header line; `line` counts its bytes so far.
        case head
        /// A body of known length: bytes left.
        case body(Int)
        /// A chunk-size line (with any extension).
        case chunkSize
        /// A chunk's data: bytes left.
        case chunkData(Int)
        /// After a chunk's data: its CR.
        case chunkEnd
        /// After a chunk's data and CR: its LF.
        case chunkEndLF
        /// Trailer lines after the last chunk, up to an empty line.
        case trailer
        /// The stream can no longer be followed: nothing more is checked, and `problem` refuses the connection.
        case lost
    }

    private(set) var phase = Phase.start
    /// The first problem found, for the 400.
    private(set) var problem: String?
    /// Bytes of the current line so far, and whether the byte before was a CR.
    private var lineLength = 0
    private var afterCR = false
    /// Whether the current line is the request line, and whether a header line has been seen.
    private var inRequestLine = true
    /// Whether the current header line may still be `Transfer-Encoding:` or `Content-Length:` (matched byte by
    /// byte, without case), and, past `Content-Length:`, its value's digits so far.
    private var mayBeTransferEncoding = false
    private var mayBeContentLength = false
    /// Significant digits (leading zeros are not counted, as libmicrohttpd does not count them) and whether any.
    private var lengthDigits = 0
    private var lengthSeen = false
    private var lengthValue = 0
    private var lengthEnded = false
    private var chunked = false
    private var contentLength: Int?
    /// A chunk-size line's value so far, and whether its digits have ended (an extension or whitespace follows).
    private var chunkSize = 0
    private var chunkDigits = 0
    private var chunkSeen = false
    private var chunkDigitsEnded = false

    static let transferEncoding = Array("transfer-encoding:".utf8)
    static let contentLength = Array("content-length:".utf8)

    init() {}

    /// Reads `count` bytes at `bytes`, the next ones of the stream; may replace a bare LF with a NUL (see above).
    mutating func scan(_ bytes: UnsafeMutablePointer<UInt8>, count: Int) {
        var index = 0
        while index < count {
            switch phase {
            case .lost:
                return
            case .body(let left):
                let taken = min(left, count - index)
                index += taken
                phase = left == taken ? .start : .body(left - taken)
                if left == taken { inRequestLine = true }
                continue
            case .chunkData(let left):
                let taken = min(left, count - index)
                index += taken
                phase = left == taken ? .chunkEnd : .chunkData(left - taken)
                continue
            case .head:
                // The head is most of what arrives: a line at a time, its LF and any NUL found by `memchr`.
                let start = bytes + index
                let lineFeed = memchr(start, Int32(UInt8(ascii: "\n")), count - index)
                let length = lineFeed.map { $0.assumingMemoryBound(to: UInt8.self) - start } ?? count - index
                if length > 0 { headText(start, count: length) }
                index += length
                if lineFeed != nil {
                    endHeadLine()
                    index += 1
                }
            default:
                step(&bytes[index])
                index += 1
            }
        }
    }

    private mutating func step(_ byte: inout UInt8) {
        switch phase {
        case .start:
            if byte == UInt8(ascii: "\n") || byte == UInt8(ascii: "\r") { return }
            phase = .head
            inRequestLine = true
            startLine()
            headByte(byte)
        case .head:
            headByte(byte)
        case .chunkSize:
            chunkSizeByte(&byte)
        case .chunkEnd:
            if byte == UInt8(ascii: "\r") {
                phase = .chunkEndLF
            } else if byte == UInt8(ascii: "\n") {
                byte = 0
                lose("a chunk's data ends with a bare LF (chunked encoding needs CRLF)")
            } else {
                lose("a chunk's data is longer than its size line says")
            }
        case .chunkEndLF:
            if byte == UInt8(ascii: "\n") {
                phase = .chunkSize
                startChunk()
            } else {
                lose("a CR after a chunk's data is not followed by LF")
            }
        case .trailer:
            trailerByte(byte)
        case .body, .chunkData, .lost:
            break
        }
    }

    private mutating func startLine() {
        lineLength = 0
        afterCR = false
        mayBeTransferEncoding = !inRequestLine
        mayBeContentLength = !inRequestLine
        lengthDigits = 0
        lengthSeen = false
        lengthValue = 0
        lengthEnded = false
    }

    private mutating func startChunk() {
        chunkSize = 0
        chunkDigits = 0
        chunkSeen = false
        chunkDigitsEnded = false
        afterCR = false
    }

    private mutating func refuse(_ why: String) {
        if problem == nil { problem = why }
    }

    /// Stops following the stream, and refuses it: whatever libmicrohttpd makes of bytes this reader cannot follow,
    /// nothing after them is checked, so the connection must not be served further (fail closed).
    private mutating func lose(_ why: String) {
        refuse(why)
        phase = .lost
    }

    // MARK: The head

    private mutating func headByte(_ byte: UInt8) {
        if byte == UInt8(ascii: "\n") {
            endHeadLine()
        } else {
            withUnsafePointer(to: byte) { headText(UnsafeMutablePointer(mutating: $0), count: 1) }
        }
    }

    /// `count` bytes of a head line, none of them its LF.
    private mutating func headText(_ text: UnsafeMutablePointer<UInt8>, count: Int) {
        if memchr(text, 0, count) != nil { refuse("a NUL byte in the request head") }
        if lineLength == 0 && !inRequestLine && (text[0] == UInt8(ascii: " ") || text[0] == UInt8(ascii: "\t")) {
            refuse("a header line folded onto the one before (obs-fold, RFC 9112 section 5.2)")
        }
        var index = 0
        while index < count && (mayBeTransferEncoding || mayBeContentLength) {
            matchName(text[index])
            lineLength += 1
            index += 1
        }
        lineLength += count - index
        afterCR = text[count - 1] == UInt8(ascii: "\r")
    }

    /// A head line's LF (libmicrohttpd takes a bare LF as a line end in the head, as RFC 9112 allows).
    private mutating func endHeadLine() {
        let empty = lineLength == 0 || (lineLength == 1 && afterCR)
        if inRequestLine {
            inRequestLine = false
        } else if empty {
            endHead()
            return
        } else {
            noteHeader()
        }
        startLine()
    }

    /// Byte `lineLength` of a header line: still `Transfer-Encoding:` or `Content-Length:` so far, or the latter's
    /// value.
    private mutating func matchName(_ byte: UInt8) {
        let lower = byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte
        if mayBeTransferEncoding {
            if lineLength < Self.transferEncoding.count {
                mayBeTransferEncoding = lower == Self.transferEncoding[lineLength]
            } else {
                chunked = true
                mayBeTransferEncoding = false
            }
        }
        guard mayBeContentLength else { return }
        if lineLength < Self.contentLength.count {
            mayBeContentLength = lower == Self.contentLength[lineLength]
        } else if !lengthEnded {
            if byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") && lengthDigits < 18 {
                lengthSeen = true
                if lengthDigits > 0 || byte != UInt8(ascii: "0") { lengthDigits += 1 }
                lengthValue = lengthValue * 10 + Int(byte - UInt8(ascii: "0"))
            } else if !(!lengthSeen && (byte == UInt8(ascii: " ") || byte == 9)) {
                lengthEnded = true
            }
        }
    }

    private mutating func noteHeader() {
        // A name matched to its colon with nothing after it ends here.
        if mayBeTransferEncoding && lineLength >= Self.transferEncoding.count { chunked = true }
        guard mayBeContentLength && lineLength >= Self.contentLength.count, contentLength == nil else { return }
        contentLength = lengthValue
        // No digits, or 18 significant ones (a length no body here reaches): stop following, and refuse.
        if !lengthSeen { lose("a Content-Length without digits") }
        if lengthDigits >= 18 { lose("a Content-Length of 18 digits or more") }
    }

    private mutating func endHead() {
        if phase == .lost { return }
        if chunked {
            phase = .chunkSize
            startChunk()
        } else if let length = contentLength, length > 0 {
            phase = .body(length)
        } else {
            phase = .start
            inRequestLine = true
        }
        chunked = false
        contentLength = nil
    }

    // MARK: Chunks

    private mutating func chunkSizeByte(_ byte: inout UInt8) {
        if byte == UInt8(ascii: "\n") {
            guard afterCR else {
                byte = 0
                lose("a chunk-size line ends with a bare LF (chunked encoding needs CRLF)")
                return
            }
            guard chunkSeen else {
                lose("a chunk-size line without a size")
                return
            }
            if chunkSize == 0 {
                phase = .trailer
                startLine()
            } else {
                phase = .chunkData(chunkSize)
            }
            return
        }
        if afterCR {
            // A CR inside the line, extension included (RFC 9112 allows none there): refused.
            lose("a CR inside a chunk-size line")
            return
        }
        if byte == UInt8(ascii: "\r") {
            afterCR = true
            chunkDigitsEnded = true
            return
        }
        if byte == 0 {
            lose("a NUL byte in a chunk-size line")
            return
        }
        if !chunkDigitsEnded, let digit = Self.hexValue(byte) {
            chunkSeen = true
            if chunkDigits > 0 || digit != 0 { chunkDigits += 1 }
            guard chunkDigits <= 15 else {
                lose("a chunk size of 16 hexadecimal digits or more")
                return
            }
            chunkSize = chunkSize << 4 | digit
        } else {
            chunkDigitsEnded = true
        }
    }

    private mutating func trailerByte(_ byte: UInt8) {
        if byte == 0 { refuse("a NUL byte in a trailer line") }
        guard byte == UInt8(ascii: "\n") else {
            lineLength += 1
            afterCR = byte == UInt8(ascii: "\r")
            return
        }
        if !afterCR { refuse("a trailer line ends with a bare LF (chunked encoding needs CRLF)") }
        let empty = lineLength == 0 || (lineLength == 1 && afterCR)
        startLine()
        if empty {
            phase = .start
            inRequestLine = true
        }
    }

    private static func hexValue(_ byte: UInt8) -> Int? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return Int(byte - UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return Int(byte - UInt8(ascii: "a") + 10)
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return Int(byte - UInt8(ascii: "A") + 10)
        default: return nil
        }
    }
}
