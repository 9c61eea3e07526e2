import OfferCore

/// Turns what libpq reports about a failed statement into a `LedgerError`: the kind from the SQLSTATE, a message in
/// words that names the statement and never holds a bound value.
///
/// The server's primary message is repeated only for the classes of SQLSTATE whose messages speak of the schema,
/// the transaction or the server (a constraint's name, a missing table, a lock, a full disk); a data exception
/// (class 22: `invalid input syntax for type bigint: "..."`) or a routine's own message could quote a bound value,
/// so for those only the SQLSTATE is given. The server's DETAIL, which quotes rows (`Key (nonce)=(...)`), is never
/// used. The server's own log has everything.
enum PostgreSQLFailure {
    /// Classes whose primary messages name only the schema, the transaction or the server.
    static let classesWithSafeMessages: Set<Substring> = [
        "08", "0A", "23", "25", "40", "42", "53", "54", "55", "57", "58", "XX",
    ]

    /// - Parameters:
    ///   - what: the statement, e.g. `PostgreSQL statement record_signature`.
    ///   - sqlState: the five-character SQLSTATE of the server's error, `nil` for a failure libpq found itself.
    ///   - primaryMessage: the server's primary message.
    ///   - libpqMessage: libpq's own text for the failure, used when the server sent no SQLSTATE.
    ///   - connectionBroken: libpq reports the connection closed.
    static func error(
        _ what: String, sqlState: String?, primaryMessage: String?, libpqMessage: String, connectionBroken: Bool
    ) -> LedgerError {
        let kind = kind(sqlState: sqlState, connectionBroken: connectionBroken)
        var reason: String
        if let sqlState {
            let safe = classesWithSafeMessages.contains(sqlState.prefix(2))
            let primary = primaryMessage.map(firstLine) ?? ""
            reason =
                safe && !primary.isEmpty
                ? "\(primary) (SQLSTATE \(sqlState))"
                : "SQLSTATE \(sqlState) (the server's message is not repeated: it may quote a value)"
        } else {
            reason = withoutSeverity(firstLine(libpqMessage))
            if reason.isEmpty { reason = "libpq gave no reason" }
        }
        if kind == .unavailable { reason = "the connection to PostgreSQL is lost: " + reason }
        return LedgerError("\(what) failed: \(reason)", kind: kind)
    }

    static func kind(sqlState: String?, connectionBroken: Bool) -> LedgerError.Kind {
        if connectionBroken { return .unavailable }
        switch sqlState {
        case "23505": return .uniqueViolation
        case "40001", "40P01": return .serializationFailure
        case "57014", "55P03": return .timeout
        case "53100": return .full
        case "22012": return .leaseLost
        // admin_shutdown (pg_terminate_backend, a fast shutdown), crash_shutdown, cannot_connect_now.
        case "57P01", "57P02", "57P03": return .unavailable
        case let state? where state.hasPrefix("08"): return .unavailable
        default: return .other
        }
    }

    /// libpq's text without the server's severity in front (`FATAL:  terminating connection ...`).
    static func withoutSeverity(_ line: String) -> String {
        for severity in ["ERROR:", "FATAL:", "PANIC:"] where line.hasPrefix(severity) {
            return String(line.dropFirst(severity.count).trimmingSpaces())
        }
        return line
    }

    /// The first non-empty line, trimmed: libpq's texts end in new lines and carry hints on further lines.
    static func firstLine(_ text: String) -> String {
        let lines = text.split(whereSeparator: \.isNewline).map { $0.trimmingSpaces() }
        return lines.first(where: { !$0.isEmpty }).map(String.init) ?? ""
    }
}

extension StringProtocol {
    fileprivate func trimmingSpaces() -> SubSequence {
        let start = firstIndex(where: { !$0.isWhitespace }) ?? endIndex
        let end = lastIndex(where: { !$0.isWhitespace }).map(index(after:)) ?? start
        return self[start..<end]
    }
}
