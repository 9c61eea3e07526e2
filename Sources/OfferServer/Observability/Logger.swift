import OfferAPI
import OfferCore

#if canImport(Glibc)
    import Glibc
#endif

/// A structured logger writing one line per event to standard error (or to a given writer), as logfmt
/// (`time=2026-12-04T15:24:52.123Z level=info msg="..." k=v`) or JSON, each line starting with its time (RFC 3339,
/// UTC, milliseconds, from the clock given: the system's real-time clock unless a test passes its own). Callers pass it in and add metadata with `with(_:_:)` (a request's ID,
/// its route); it never receives key material, tokens or signed data, only identifiers.
public struct Logger: Sendable {
    public enum Level: Int, Sendable, Comparable, CaseIterable {
        case debug, info, warning, error
        public static func < (lhs: Level, rhs: Level) -> Bool { lhs.rawValue < rhs.rawValue }
        public var label: String {
            switch self {
            case .debug: return "debug"
            case .info: return "info"
            case .warning: return "warning"
            case .error: return "error"
            }
        }
        public init?(label: String) {
            guard let level = Self.allCases.first(where: { $0.label == label }) else { return nil }
            self = level
        }
    }

    public enum Format: String, Sendable, CaseIterable {
        case logfmt
        case json
    }

    /// Where finished lines go: one call per line, newline included.
    public typealias Writer = @Sendable ([UInt8]) -> Void

    public var level: Level
    public var format: Format
    /// Fields added to every line, in order.
    public private(set) var metadata: [(String, String)] = []
    private let writer: Writer
    /// Unix milliseconds, for each line's `time`.
    private let clock: @Sendable () -> Int64

    /// A logger writing to `writer`; by default to standard error (file descriptor 2).
    public init(
        level: Level, format: Format = .logfmt, writer: @escaping Writer = Logger.standardError,
        clock: @escaping @Sendable () -> Int64 = Logger.realTime
    ) {
        self.level = level
        self.format = format
        self.writer = writer
        self.clock = clock
    }

    /// The system's real-time clock, in Unix milliseconds.
    @Sendable public static func realTime() -> Int64 {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return Int64(spec.tv_sec) * 1000 + Int64(spec.tv_nsec) / 1_000_000
    }

    /// Writes a line to file descriptor 2 in one `write` call, so lines from several threads never interleave.
    public static let standardError: Writer = { line in
        line.withUnsafeBytes { _ = Glibc.write(2, $0.baseAddress, $0.count) }
    }

    /// A logger that adds `key=value` to every line.
    public func with(_ key: String, _ value: String) -> Logger {
        var copy = self
        copy.metadata.append((key, value))
        return copy
    }

    public func debug(_ message: @autoclosure () -> String, _ fields: [(String, String)] = []) {
        write(.debug, message, fields)
    }
    public func info(_ message: @autoclosure () -> String, _ fields: [(String, String)] = []) {
        write(.info, message, fields)
    }
    public func warning(_ message: @autoclosure () -> String, _ fields: [(String, String)] = []) {
        write(.warning, message, fields)
    }
    public func error(_ message: @autoclosure () -> String, _ fields: [(String, String)] = []) {
        write(.error, message, fields)
    }

    /// Whether a line at `level` would be written (to skip building expensive fields).
    public func isEnabled(_ level: Level) -> Bool { level >= self.level }

    private func write(_ level: Level, _ message: () -> String, _ fields: [(String, String)]) {
        guard level >= self.level else { return }
        writer(
            Self.line(
                time: ISO8601.formatWithMilliseconds(clock()), level: level, message: message(),
                fields: metadata + fields, format: format))
    }

    /// One event as one line, newline-terminated: quotes, backslashes and control characters are escaped in
    /// both formats, so a value can never start a new line.
    static func line(
        time: String, level: Level, message: String, fields: [(String, String)], format: Format
    ) -> [UInt8] {
        switch format {
        case .json:
            var writer = JSONWriter(capacity: 192)
            writer.beginObject()
            writer.member("time", time)
            writer.member("level", level.label)
            writer.member("msg", message)
            for (key, value) in fields { writer.member(key, value) }
            writer.endObject()
            return writer.bytes + [UInt8(ascii: "\n")]
        case .logfmt:
            var out = "time=\(time) level=\(level.label) msg=\(quoted(message))"
            for (key, value) in fields { out += " \(key)=\(logfmtValue(value))" }
            return Array((out + "\n").utf8)
        }
    }

    private static func logfmtValue(_ value: String) -> String {
        let plain =
            !value.isEmpty && value.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F && $0 != 0x22 && $0 != 0x3D && $0 != 0x5C }
        return plain ? value : quoted(value)
    }

    private static func quoted(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case _ where scalar.value < 0x20 || scalar.value == 0x7F: out += "\\u{\(String(scalar.value, radix: 16))}"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}
