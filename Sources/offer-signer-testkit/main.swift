import OfferCommandLine

#if canImport(Glibc)
    import Glibc
#endif

/// `offer-signer-testkit`: the test kit's commands, in an executable of their own so that the shipped
/// `offer-signer` carries neither the test CA nor the fake App Store Server API.
let program = CommandLineProgram(
    name: "offer-signer-testkit", help: Help.main,
    commands: [
        Command("ca", help: Help.ca, run: TestKitCommand.makeAuthority),
        Command("sign", help: Help.sign, run: TestKitCommand.sign),
        Command("apple-api", help: Help.appleAPI, run: AppleAPICommand.run),
        Command("app-store-connect", help: Help.appStoreConnect, run: AppStoreConnectCommand.run),
        Command("app-attest", help: Help.appAttest, run: AppAttestCommand.run),
        Command("simulate-campaign", help: Help.simulateCampaign, run: SimulateCampaignCommand.run),
    ])
exit(program.run(CommandLine.arguments.dropFirst()))
