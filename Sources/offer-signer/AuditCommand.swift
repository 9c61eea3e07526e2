import OfferCommandLine
import OfferServer
import OfferStore

/// `offer-signer audit verify`: checks the admin audit log's hash chain in the configuration's storage, and with
/// `--anchor` that the log still holds a head published earlier (a log line `audit appended`, or the metrics), so
/// deleting the newest entries is caught too. Exit status 0 when valid, 1 with one problem per line, 2 on a usage
/// mistake.
enum AuditCommand {
    static func verify(_ arguments: ArraySlice<String>) throws -> Int32 {
        let options = try Arguments(arguments, valued: ["config", "anchor"])
        try options.noPositionals()
        let path = try options.required("config")
        var anchor: AuditChain.Head?
        if let text = options["anchor"] {
            guard let head = AuditChain.Head(text) else {
                throw UsageError(
                    "--anchor must be COUNT:HASH (a sequence and its 64 lowercase hex digit hash, as the log line "
                        + "\"audit appended\" gives them), not \(text)")
            }
            anchor = head
        }
        let (_, store) = try AdminCommand.openStore(path)
        let entries: [AuditEntry]
        do {
            entries = try store.allAuditEntries()
        } catch {
            throw CommandError("storage: \(error.description)")
        }
        let verification = AuditChain.verify(entries, anchor: anchor)
        guard verification.isValid else {
            Console.out(verification.problems.joined(separator: "\n"))
            Console.err("audit log NOT valid: \(verification.problems.count) problem(s)")
            return 1
        }
        var line = "audit log valid: \(verification.head.count) entries, head \(verification.head)"
        if let anchor, anchor.count > 0 { line += "; it holds the anchor \(anchor)" }
        Console.out(line)
        return 0
    }
}
