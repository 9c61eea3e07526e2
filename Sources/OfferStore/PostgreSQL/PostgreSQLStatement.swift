/// A statement that connections prepare by name (`PQprepare`) the first time they run it and then only execute.
typealias PostgreSQLStatement = SQLStatement
