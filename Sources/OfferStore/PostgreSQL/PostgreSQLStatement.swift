/// A statement that connections prepare by name (`PQprepare`) the first time they run it and then only execute.
/// `sql` takes its parameters as `$1`, `$2`, ...; they are always bound as text, never spliced into the SQL.
/// One name, one SQL text: a connection refuses a second statement under a name it has prepared for another.
struct PostgreSQLStatement: Sendable, Hashable {
    /// The name the server knows the statement by on each connection; names the statement in errors.
    let name: String
    let sql: String

    init(_ name: String, _ sql: String) {
        self.name = name
        self.sql = sql
    }
}
