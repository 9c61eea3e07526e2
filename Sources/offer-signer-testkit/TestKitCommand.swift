import OfferAPI
import OfferCommandLine
import OfferCore
import OfferCrypto
import OfferServer
import OfferTesting

/// `offer-signer-testkit ca` and `sign`: test certificates and Apple-like signed data for integration tests.
enum TestKitCommand {
    static func makeAuthority(_ arguments: ArraySlice<String>) throws -> Int32 {
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

    static func sign(_ arguments: ArraySlice<String>) throws -> Int32 {
        let options = try Arguments(
            arguments,
            valued: Set([
                "ca", "payload", "type", "subtype", "environment", "app-apple-id", "bundle-id", "uuid", "transaction",
                "renewal-info",
            ]).union(retentionOptions), switches: ["xcode"])
        let kinds: [String: SignedDataKind] = [
            "transaction": .transaction, "renewal-info": .renewalInfo, "app-transaction": .appTransaction,
            "notification": .notification, "retention-request": .realtimeRequest,
        ]
        let names = "transaction, renewal-info, app-transaction, notification or retention-request"
        guard options.positionals.count == 1 else { throw UsageError("name what to sign: \(names)") }
        let word = options.positionals[0]
        guard let kind = kinds[word] else {
            var message = "unknown kind \"\(word)\" to sign"
            if let near = NameSuggestion.closest(to: word, among: kinds.keys.sorted()) {
                message += "; did you mean \"\(near)\"?"
            }
            throw UsageError(message + " (\(names))")
        }
        let notificationOptions = [
            "type", "subtype", "environment", "app-apple-id", "bundle-id", "uuid", "transaction", "renewal-info",
        ]
        let ownOptions: [SignedDataKind: Set<String>] = [
            .notification: Set(notificationOptions), .realtimeRequest: retentionOptions,
        ]
        let allowed = ownOptions[kind] ?? []
        for option in notificationOptions + retentionOptions.sorted()
        where options[option] != nil && !allowed.contains(option) {
            let commands = [
                ("notification", notificationOptions.contains(option)),
                ("retention-request", retentionOptions.contains(option)),
            ]
            .filter(\.1).map { "`offer-signer-testkit sign \($0.0)`" }
            throw UsageError("--\(option) is for " + commands.joined(separator: " and "))
        }
        let signer: TestAuthorityFolder
        do {
            signer = try TestAuthorityFolder(
                directory: try options.required("ca"), xcode: options.flags.contains("xcode"))
        } catch let error as TestAuthorityFolder.Error {
            throw CommandError(error.message)
        }
        let now = SystemClock.nowMilliseconds()
        if kind == .notification, options["payload"] == nil {
            Console.out(try signer.sign(try notification(options, signer: signer, now: now)))
            return 0
        }
        if kind == .realtimeRequest, options["payload"] == nil {
            for request in try retentionRequests(options, now: now) {
                Console.out(try request.sign(signing: signer.sign))
            }
            return 0
        }
        if let option = (ownOptions[kind] ?? []).sorted().first(where: { options[$0] != nil }) {
            throw UsageError("--\(option) cannot be combined with --payload: the payload is the whole request")
        }
        Console.out(try signer.sign(try template(try options.required("payload"), kind: kind, now: now)))
        return 0
    }

    /// The payload in `path` (or standard input for `-`) as a template of `kind`, its warnings printed.
    private static func template(_ path: String, kind: SignedDataKind, now: Int64) throws -> JSONValue {
        let bytes = path == "-" ? readStandardInput() : FileBytes.read(path)
        guard let bytes else { throw CommandError("\(path): cannot read payload") }
        let template: PayloadTemplate
        do {
            template = try PayloadTemplate(try JSONParser.parse(bytes), kind: kind, now: now)
        } catch let error as JSONParser.Error {
            throw CommandError("\(path): payload is not valid JSON: \(error.description)")
        } catch let error as PayloadTemplate.Error {
            throw CommandError("\(path): \(error.message)")
        }
        for warning in template.warnings { Console.err("offer-signer-testkit: warning: \(path): \(warning)") }
        return template.payload
    }

    /// The notification the options describe (`NotificationTemplate`): its transaction and renewal info read as
    /// templates and signed inside it; the app and environment taken from the transaction unless given.
    private static func notification(
        _ options: Arguments, signer: TestAuthorityFolder, now: Int64
    ) throws -> JSONValue {
        let type = try options.required("type")
        let transaction = try options["transaction"].map { try template($0, kind: .transaction, now: now) }
        let renewalInfo = try options["renewal-info"].map { try template($0, kind: .renewalInfo, now: now) }
        guard
            let bundleId = options["bundle-id"] ?? transaction?["bundleId"]?.stringValue
        else { throw UsageError("--bundle-id is required without a --transaction that names the app") }
        let environment =
            options["environment"] ?? transaction?["environment"]?.stringValue ?? renewalInfo?["environment"]?
            .stringValue ?? "Sandbox"
        var appAppleId: Int64?
        if let text = options["app-apple-id"] {
            guard let number = Int64(text), number > 0 else {
                throw UsageError("--app-apple-id must be a positive integer (the app's Apple ID)")
            }
            appAppleId = number
        } else if environment == "Production" {
            Console.err(
                "offer-signer-testkit: warning: a Production notification without --app-apple-id: Apple always sends "
                    + "it, and the service refuses one without")
        }
        let uuid = options["uuid"] ?? SecureRandom.uuidV4()
        guard !uuid.isEmpty else { throw UsageError("--uuid must not be empty") }
        let notification = NotificationTemplate(
            type: type, subtype: options["subtype"], uuid: uuid, bundleId: bundleId, environment: environment,
            appAppleId: appAppleId, transaction: transaction, renewalInfo: renewalInfo, signedDate: now)
        return try notification.payload(signing: signer.sign)
    }

    /// The options of `sign retention-request`.
    private static let retentionOptions: Set<String> = [
        "original-transaction-id", "product-id", "app-apple-id", "locale", "environment", "request-id", "count",
    ]

    /// The retention requests the options describe (`RealtimeRequestTemplate`): one, or `--count` of them, each with
    /// its own `requestIdentifier` (the first `--request-id` when given), for load tests.
    private static func retentionRequests(_ options: Arguments, now: Int64) throws -> [RealtimeRequestTemplate] {
        let originalTransactionId = try options.required("original-transaction-id")
        let productId = try options.required("product-id")
        let environment = options["environment"] ?? "Sandbox"
        var appAppleId = RealtimeRequestTemplate.defaultAppAppleId
        if let text = options["app-apple-id"] {
            guard let number = Int64(text), number > 0 else {
                throw UsageError("--app-apple-id must be a positive integer (the app's Apple ID)")
            }
            appAppleId = number
        } else if environment == "Production" {
            throw UsageError(
                "--app-apple-id is required for a Production request: the service checks it against the app's")
        }
        var count = 1
        if let text = options["count"] {
            guard let number = Int(text), (1...1_000_000).contains(number) else {
                throw UsageError("--count must be an integer from 1 to 1000000")
            }
            count = number
        }
        if let requestId = options["request-id"], !UUIDText.isValid(requestId) {
            throw UsageError("--request-id must be a UUID (Apple's requestIdentifier is one)")
        }
        let locale = options["locale"] ?? "en-US"
        guard !locale.isEmpty, !originalTransactionId.isEmpty, !productId.isEmpty else {
            throw UsageError("--original-transaction-id, --product-id and --locale must not be empty")
        }
        return (0..<count).map { index in
            RealtimeRequestTemplate(
                originalTransactionId: originalTransactionId, productId: productId, appAppleId: appAppleId,
                userLocale: locale,
                requestIdentifier: index == 0 ? options["request-id"] ?? SecureRandom.uuidV4() : SecureRandom.uuidV4(),
                environment: environment, signedDate: now)
        }
    }

    private static func seconds(_ text: String?, option: String) throws -> Int64? {
        guard let text else { return nil }
        guard let milliseconds = ActiveWindow.parseISO8601(text) else {
            throw UsageError("--\(option) must be an ISO 8601 date-time like 2026-01-01T00:00:00Z")
        }
        return milliseconds / 1000
    }
}
