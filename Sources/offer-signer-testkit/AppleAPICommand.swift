import OfferCommandLine
import OfferCore
import OfferCrypto
import OfferServer
import OfferTesting

#if canImport(Glibc)
    import Glibc
#endif

/// `offer-signer-testkit apple-api`: the fake App Store Server API (`FakeAppStoreServerAPI`), served until
/// SIGTERM or SIGINT.
enum AppleAPICommand {
    static func run(_ arguments: ArraySlice<String>) throws -> Int32 {
        let options = try Arguments(
            arguments, valued: ["ca", "state", "port", "host", "key-id", "public-key", "token-file"])
        try options.noPositionals()
        let directory = try options.required("ca")
        let statePath = try options.required("state")
        let host = options["host"] ?? "127.0.0.1"
        guard let port = Int(try options.required("port")), (0...65535).contains(port) else {
            throw UsageError("--port must be a number from 0 to 65535")
        }
        let authority: TestAuthorityFolder
        do {
            authority = try TestAuthorityFolder(directory: directory)
        } catch {
            throw CommandError(error.message)
        }
        var publicKey: VerifyingKey?
        if let path = options["public-key"] { publicKey = try loadPublicKey(path) }
        guard FileBytes.read(statePath) != nil else { throw CommandError("\(statePath): cannot read the state file") }

        let fake = FakeAppStoreServerAPI(
            options: FakeAppStoreServerAPI.Options(
                statePath: statePath, keyId: options["key-id"], publicKey: publicKey, tokenFile: options["token-file"]),
            authority: authority, clock: SystemClock.nowMilliseconds, log: { Console.err($0) })
        try serveUntilSignal(
            name: "apple-api", host: host,
            start: { () throws(ServerError) in
                try fake.start(host: host, port: port)
            }, stop: fake.stop)
        return 0
    }

    /// Starts a fake with signals blocked, says where it listens, and serves until SIGTERM or SIGINT.
    static func serveUntilSignal(
        name: String, host: String, start: () throws(ServerError) -> Int, stop: () -> Void
    ) throws {
        var signals = sigset_t()
        sigemptyset(&signals)
        sigaddset(&signals, SIGTERM)
        sigaddset(&signals, SIGINT)
        pthread_sigmask(SIG_BLOCK, &signals, nil)
        signal(SIGPIPE, SIG_IGN)
        let bound: Int
        do {
            bound = try start()
        } catch {
            throw CommandError(error.description)
        }
        let shownHost = host.contains(":") ? "[\(host)]" : host
        Console.out("offer-signer-testkit \(name) listening on http://\(shownHost):\(bound)")
        var received: Int32 = 0
        sigwait(&signals, &received)
        stop()
    }

    /// A PEM public key, or the public half of a PEM private key (an In-App Purchase `.p8`).
    static func loadPublicKey(_ path: String) throws -> VerifyingKey {
        // Read as a key file (wiped after parsing), without the private key's access checks: a public key is
        // usually readable by all.
        let key: VerifyingKey?
        do {
            key = try PrivateKeyFile.withContents(path: path, requireProtected: false) { pem in
                if let key = try? SigningKey(pem: pem) { return try? key.publicKey }
                return try? VerifyingKey(pem: Array(pem))
            }
        } catch let error as CryptoError {
            throw CommandError(error.message)
        }
        guard let key else { throw CommandError("\(path): not a PEM public key (or private key)") }
        return key
    }
}
