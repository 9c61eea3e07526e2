import OfferCommandLine
import OfferCore
import OfferCrypto
import OfferServer
import OfferTesting

/// `offer-signer-testkit app-store-connect`: the fake App Store Connect API (`FakeAppStoreConnect`), served until
/// SIGTERM or SIGINT.
enum AppStoreConnectCommand {
    static func run(_ arguments: ArraySlice<String>) throws -> Int32 {
        let options = try Arguments(arguments, valued: ["state", "port", "host", "public-key", "token-file"])
        try options.noPositionals()
        let statePath = try options.required("state")
        let host = options["host"] ?? "127.0.0.1"
        guard let port = Int(try options.required("port")), (0...65535).contains(port) else {
            throw UsageError("--port must be a number from 0 to 65535")
        }
        var publicKey: VerifyingKey?
        if let path = options["public-key"] { publicKey = try AppleAPICommand.loadPublicKey(path) }
        guard FileBytes.read(statePath) != nil else { throw CommandError("\(statePath): cannot read the state file") }
        let fake = FakeAppStoreConnect(
            options: FakeAppStoreConnect.Options(
                statePath: statePath, publicKey: publicKey, tokenFile: options["token-file"]),
            clock: SystemClock.nowMilliseconds, log: { Console.err($0) })
        try AppleAPICommand.serveUntilSignal(
            name: "app-store-connect", host: host,
            start: { () throws(ServerError) in try fake.start(host: host, port: port) }, stop: fake.stop)
        return 0
    }
}
