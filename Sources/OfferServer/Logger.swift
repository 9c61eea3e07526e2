#if canImport(Glibc)
    import Glibc
#endif

/// A minimal structured logger writing one line per event to standard error.
/// Callers pass it in; it never receives key material, tokens or signed data, only identifiers.
public struct Logger: Sendable {
    public enum Level: Int, Sendable, Comparable {
        case debug, info, warning, error
        public static func < (lhs: Level, rhs: Level) -> Bool { lhs.rawValue < rhs.rawValue }
        var label: String {
            switch self {
            case .debug: return "debug"
            case .info: return "info"
            case .warning: return "warning"
            case .error: return "error"
            }
        }
    }

    public var level: Level

    public init(level: Level) { self.level = level }

    public func debug(_ message: @autoclosure () -> String) { write(.debug, message) }
    public func info(_ message: @autoclosure () -> String) { write(.info, message) }
    public func warning(_ message: @autoclosure () -> String) { write(.warning, message) }
    public func error(_ message: @autoclosure () -> String) { write(.error, message) }

    private func write(_ level: Level, _ message: () -> String) {
        guard level >= self.level else { return }
        // One event, one line: newlines and quotes inside the message are escaped.
        var text = ""
        for character in message() {
            switch character {
            case "\n", "\r", "\r\n": text += "\\n"
            case "\"": text += "\\\""
            case "\\": text += "\\\\"
            default: text.append(character)
            }
        }
        let line = Array("level=\(level.label) msg=\"\(text)\"\n".utf8)
        line.withUnsafeBytes { _ = Glibc.write(2, $0.baseAddress, $0.count) }
    }
}
