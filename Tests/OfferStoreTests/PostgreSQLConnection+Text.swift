import OfferCore

@testable import OfferStore

typealias PostgreSQLStatement = SQLStatement

/// The tests' short way to a connection: values and cells as text (`nil` for NULL).
extension PostgreSQLConnection {
    /// Runs `statement` with text values; returns how many rows it changed.
    @discardableResult
    func execute(_ statement: SQLStatement, _ values: [String?] = []) throws(LedgerError) -> Int64 {
        try run(statement, values.map(SQLValue.text)).changes
    }

    /// Every row `statement` returns, each column as text.
    func rows(_ statement: SQLStatement, _ values: [String?] = []) throws(LedgerError) -> [[String?]] {
        try run(statement, values.map(SQLValue.text)).texts
    }

    /// The first column of the first row, which must be an integer.
    func scalar(_ statement: SQLStatement, _ values: [String?] = []) throws(LedgerError) -> Int64 {
        guard let value = try run(statement, values.map(SQLValue.text)).rows.first?.integer(at: 0) else {
            throw LedgerError("PostgreSQL statement \(statement.name) returned no integer where one was expected")
        }
        return value
    }

    func pipeline(texts statements: [(SQLStatement, [String?])]) throws(LedgerError) -> [Result] {
        try pipeline(statements.map { ($0.0, $0.1.map(SQLValue.text)) })
    }
}

extension PostgreSQLConnection.Result {
    var texts: [[String?]] { rows.map { $0.cells.map(SQLRow.text) } }
}
