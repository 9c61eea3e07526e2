import OfferCommandLine

/// `offer-signer`'s commands (`CommandLineProgram` dispatches them and maps failures to exit statuses).
enum CommandLineTool {
    static func run(_ arguments: ArraySlice<String>) -> Int32 {
        program.run(arguments)
    }

    static var program: CommandLineProgram {
        CommandLineProgram(
            name: "offer-signer", help: Help.main,
            commands: [
                Command("serve", help: Help.serve, run: ServeCommand.run),
                Command("reload", help: Help.reload, run: ReloadCommand.run),
                Command("config", subcommands: ["check"], help: Help.configCheck) { _, arguments in
                    try ConfigCheckCommand.run(arguments)
                },
                Command(
                    "keys", subcommands: ["generate", "import", "import-storekit"],
                    help: Help.keysGenerate + "\n" + Help.keysImport + "\n" + Help.keysImportStoreKit,
                    subcommandHelp: [
                        "generate": Help.keysGenerate, "import": Help.keysImport,
                        "import-storekit": Help.keysImportStoreKit,
                    ],
                    run: KeysCommand.run),
                Command(
                    "sign", subcommands: ["promotional-offer", "introductory-offer-eligibility", "legacy"],
                    help: Help.sign, run: SignCommand.run),
                Command("explain", help: Help.explain, run: ExplainCommand.run),
                Command(
                    "ledger",
                    subcommands: [
                        "stats", "customer", "forget", "grant", "reset", "actions", "purge", "app-attest-keys",
                        "app-attest-revoke",
                    ],
                    help: Help.ledger, run: LedgerCommand.run),
                Command(
                    "catalog", subcommands: ["export", "import", "check"], help: Help.catalog, run: CatalogCommand.run),
                Command("apple", subcommands: ["status", "backfill"], help: Help.apple, run: AppleCommand.run),
                Command(
                    "report", subcommands: ["outcomes", "experiment"], help: Help.report, run: ReportCommand.run),
                Command("admin", subcommands: ["token"], help: Help.admin) { _, arguments in
                    try AdminCommand.run(arguments)
                },
                Command("audit", subcommands: ["verify"], help: Help.auditVerify) { _, arguments in
                    try AuditCommand.verify(arguments)
                },
            ],
            moved: [
                "testkit":
                    "the test kit is its own executable: run `offer-signer-testkit ca|sign|apple-api` (built beside "
                    + "offer-signer by `swift build`; `offer-signer-testkit --help` shows its usage)"
            ],
            reportsHardening: ["serve"])
    }
}
