import OfferAPI
import OfferCore
import OfferCrypto
import OfferServer
import OfferTesting

/// `offer-signer testkit`: test certificates and Apple-like signed data for integration tests.
enum TestKitCommand {
    static func run(_ kind: String, _ arguments: ArraySlice<String>) throws -> Int32 {
        switch kind {
        case "ca": return try makeAuthority(arguments)
        case "sign": return try sign(arguments)
        case "apple-api": return try TestKitAppleAPICommand.run(arguments)
        default: throw UsageError("unknown testkit command '\(kind)': ca, sign or apple-api")
        }
    }

    private static func makeAuthority(_ arguments: ArraySlice<String>) throws -> Int32 {
        let options = try Arguments(arguments, valued: ["out", "valid-from", "valid-until"])
        let directory = try options.required("out")
        let now = SystemClock.nowMilliseconds() / 1000
        let from = try seconds(options["valid-from"], option: "valid-from") ?? now - 30 * 86_400
        let until = try seconds(options["valid-until"], option: "valid-until") ?? now + 365 * 86_400
        guard from < until else { throw UsageError("--valid-from must be before --valid-until") }
        let factory = try SignedDataFactory.make(notBefore: from, notAfter: until)
        try makeDirectory(directory)
        let files: [(String, [UInt8], Bool)] = [
            ("root.cer", factory.root.der, false),
            ("intermediate.cer", factory.intermediate.der, false),
            ("leaf.cer", factory.leaf.der, false),
            ("leaf.p8", try factory.leaf.key.pkcs8PEM(), true),
            ("xcode.cer", factory.localTesting.der, false),
            ("xcode.p8", try factory.localTesting.key.pkcs8PEM(), true),
        ]
        for (name, bytes, _) in files { try PrivateKeyFile.writeNew(path: "\(directory)/\(name)", contents: bytes) }
        Console.out(
            """
            wrote a test chain to \(directory): root.cer (trust it in a test config), intermediate.cer, leaf.cer,
            leaf.p8 (signs test data), xcode.cer and xcode.p8 (Xcode-style self-signed, for localTesting apps).
            These certificates carry Apple's marker extensions but chain to a test root: never trust it in production.
            """)
        return 0
    }

    private static func sign(_ arguments: ArraySlice<String>) throws -> Int32 {
        let options = try Arguments(arguments, valued: ["ca", "payload"], switches: ["xcode"])
        let kinds: [String: SignedDataKind] = [
            "transaction": .transaction, "renewal-info": .renewalInfo, "app-transaction": .appTransaction,
        ]
        guard options.positionals.count == 1 else {
            throw UsageError("name what to sign: transaction, renewal-info or app-transaction")
        }
        let word = options.positionals[0]
        guard let kind = kinds[word] else {
            var message = "unknown kind \"\(word)\" to sign"
            if let near = NameSuggestion.closest(to: word, among: kinds.keys.sorted()) {
                message += "; did you mean \"\(near)\"?"
            }
            throw UsageError(message + " (transaction, renewal-info or app-transaction)")
        }
        let directory = try options.required("ca")
        let payloadPath = try options.required("payload")
        let payloadBytes: [UInt8]?
        if payloadPath == "-" { payloadBytes = readStandardInput() } else { payloadBytes = FileBytes.read(payloadPath) }
        guard let payloadBytes else { throw CommandError("\(payloadPath): cannot read payload") }
        let template: PayloadTemplate
        do {
            template = try PayloadTemplate(
                try JSONParser.parse(payloadBytes), kind: kind, now: SystemClock.nowMilliseconds())
        } catch let error as JSONParser.Error {
            throw CommandError("\(payloadPath): payload is not valid JSON: \(error.description)")
        } catch let error as PayloadTemplate.Error {
            throw CommandError("\(payloadPath): \(error.message)")
        }
        for warning in template.warnings { Console.err("offer-signer: warning: \(payloadPath): \(warning)") }
        let authority: TestAuthorityFolder
        do {
            authority = try TestAuthorityFolder(directory: directory, xcode: options.flags.contains("xcode"))
        } catch {
            throw CommandError(error.message)
        }
        Console.out(try authority.sign(template.payload))
        return 0
    }

    private static func seconds(_ text: String?, option: String) throws -> Int64? {
        guard let text else { return nil }
        guard let milliseconds = ActiveWindow.parseISO8601(text) else {
            throw UsageError("--\(option) must be an ISO 8601 date-time like 2026-01-01T00:00:00Z")
        }
        return milliseconds / 1000
    }
}
