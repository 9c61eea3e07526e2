// The raw-crypto floor of `make bench`: the service's own ES256 calls in a loop, nothing else.
//
//   offer-signer-bench-crypto sign N            N signatures of a promotional offer JWS's signing input
//   offer-signer-bench-crypto verify N < JWS    N verifications of the compact JWS's signature with its x5c leaf key
//   offer-signer-bench-crypto sign-pkcs11 N THREADS [serialized]
//                                               N signatures with a key in a PKCS#11 token, from THREADS threads at
//                                               once (each signature in flight has its own session); `serialized`
//                                               makes them take turns under one lock instead, for comparison. The
//                                               key: OFFER_SIGNER_BENCH_PKCS11_URI, _MODULE, and the PIN in _PIN
//                                               (Scripts/bench-pkcs11.sh sets them up with SoftHSM)
//   offer-signer-bench-crypto sign-threads N THREADS
//                                               `sign` from THREADS threads at once, for the same comparison
//
// Prints one JSON line: the operation, the iterations, the wall-clock seconds of the loop and the operations per
// second (one thread: per core). Benchmarks/run.py also runs it under callgrind for N and 2N iterations: the
// difference of the two instruction counts over N is one operation's instructions, start-up excluded.
import Dispatch
import OfferAPI
import OfferCore
import OfferCrypto
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

enum BenchCryptoError: Error, CustomStringConvertible {
    case usage(String)

    var description: String {
        switch self {
        case .usage(let message): message
        }
    }
}

/// The signing input of a typical promotional offer JWS.
func promotionalSigningInput() -> [UInt8] {
    let claims = PromotionalOfferClaims(
        bundleId: "com.example.bench", productId: "com.example.pro.monthly", offerIdentifier: "bench_open")
    let payload = OfferSignatures.promotionalOfferPayload(
        claims, issuerId: "57246542-96fe-1a63-e053-0824d011072a", issuedAt: 1_764_590_000,
        nonce: "0193d6a0-7c8e-7b52-9a3e-4f1d2c3b4a59")
    var signingInput = CompactJWS.encodedHeader(keyId: "BENCHKEY01")
    signingInput.append(UInt8(ascii: "."))
    Base64.appendURL(payload, to: &signingInput)
    return signingInput
}

/// ES256 over the signing input of a typical promotional offer JWS, as `CompactJWS.sign` calls it.
func signLoop(iterations: Int) throws -> Duration {
    let key = try SigningKey.generate()
    let signingInput = promotionalSigningInput()
    var total = 0
    let start = ContinuousClock.now
    for _ in 0..<iterations {
        total &+= try key.signatureRaw(for: signingInput).count
    }
    let elapsed = ContinuousClock.now - start
    guard total == iterations * 64 else { throw BenchCryptoError.usage("a signature was not 64 bytes") }
    return elapsed
}

/// The leaf signature of an Apple-like compact JWS (its `x5c` leaf's key), as `SignedDataVerifier` checks it once
/// the chain is cached.
func verifyLoop(iterations: Int, token: String) throws -> Duration {
    let parts: CompactJWS.Parts
    do {
        parts = try CompactJWS.decode(token)
    } catch {
        throw BenchCryptoError.usage("standard input is not a compact JWS: \(error.message)")
    }
    guard let leaf = parts.header["x5c"]?.arrayValue?.first?.stringValue, let der = Base64.decode(leaf) else {
        throw BenchCryptoError.usage("the JWS header has no x5c leaf certificate")
    }
    let key = try Certificate(der: der).publicKey
    guard key.isValidSignature(raw: parts.signature, for: parts.signingInput) else {
        throw BenchCryptoError.usage("the JWS signature does not verify with its leaf certificate")
    }
    var valid = 0
    let start = ContinuousClock.now
    for _ in 0..<iterations where key.isValidSignature(raw: parts.signature, for: parts.signingInput) {
        valid += 1
    }
    let elapsed = ContinuousClock.now - start
    guard valid == iterations else { throw BenchCryptoError.usage("a verification failed") }
    return elapsed
}

/// `iterations` signatures with `key` spread over `threads` threads; with `serialized`, one at a time under a lock.
func threadedSignLoop(key: SigningKey, iterations: Int, threads: Int, serialized: Bool) throws -> Duration {
    let signingInput = promotionalSigningInput()
    let turn = Mutex(())
    let failures = Atomic<Int>(0)
    let start = ContinuousClock.now
    DispatchQueue.concurrentPerform(iterations: threads) { thread in
        let share = iterations / threads + (thread < iterations % threads ? 1 : 0)
        for _ in 0..<share {
            let signature =
                serialized
                ? turn.withLock { _ in try? key.signatureRaw(for: signingInput) }
                : try? key.signatureRaw(for: signingInput)
            if signature?.count != 64 { failures.add(1, ordering: .relaxed) }
        }
    }
    let elapsed = ContinuousClock.now - start
    guard failures.load(ordering: .relaxed) == 0 else { throw BenchCryptoError.usage("a signature failed") }
    return elapsed
}

/// The key `sign-pkcs11` uses, from the environment.
func benchTokenKey() throws -> SigningKey {
    func variable(_ name: String) throws -> String {
        guard let value = getenv(name) else { throw BenchCryptoError.usage("\(name) is not set") }
        return String(cString: value)
    }
    let uri = try PKCS11URI(parsing: try variable("OFFER_SIGNER_BENCH_PKCS11_URI"))
    return try SigningKey(
        pkcs11: PKCS11KeyReference(
            uri: uri, modulePath: try variable("OFFER_SIGNER_BENCH_PKCS11_MODULE"),
            pin: .environment("OFFER_SIGNER_BENCH_PKCS11_PIN")))
}

func run(_ arguments: [String]) throws {
    let usage =
        "usage: offer-signer-bench-crypto sign N | verify N < JWS | sign-threads N THREADS | "
        + "sign-pkcs11 N THREADS [serialized] (N from 1 to 10000000, THREADS from 1 to 64)"
    guard arguments.count >= 2, ["sign", "verify", "sign-threads", "sign-pkcs11"].contains(arguments[0]),
        let iterations = Int(arguments[1]), (1...10_000_000).contains(iterations)
    else { throw BenchCryptoError.usage(usage) }
    var threads = 1
    var serialized = false
    if arguments[0].hasPrefix("sign-") {
        guard arguments.count == 3 || (arguments.count == 4 && arguments[0] == "sign-pkcs11"),
            let count = Int(arguments[2]), (1...64).contains(count),
            arguments.count == 3 || arguments[3] == "serialized"
        else { throw BenchCryptoError.usage(usage) }
        threads = count
        serialized = arguments.count == 4
    } else {
        guard arguments.count == 2 else { throw BenchCryptoError.usage(usage) }
    }
    let elapsed: Duration
    if arguments[0] == "sign" {
        elapsed = try signLoop(iterations: iterations)
    } else if arguments[0] == "sign-threads" {
        elapsed = try threadedSignLoop(
            key: try SigningKey.generate(), iterations: iterations, threads: threads, serialized: false)
    } else if arguments[0] == "sign-pkcs11" {
        elapsed = try threadedSignLoop(
            key: try benchTokenKey(), iterations: iterations, threads: threads, serialized: serialized)
    } else {
        var token = ""
        while let line = readLine() { token += line }
        elapsed = try verifyLoop(iterations: iterations, token: token.filter { !$0.isWhitespace })
    }
    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    let rate = seconds > 0 ? Double(iterations) / seconds : 0
    let detail = arguments[0].hasPrefix("sign-") ? ",\"threads\":\(threads),\"serialized\":\(serialized)" : ""
    print(
        "{\"operation\":\"\(arguments[0])\",\"iterations\":\(iterations),\"seconds\":\(seconds),"
            + "\"perSecond\":\(rate)\(detail)}")
}

do {
    try run(Array(CommandLine.arguments.dropFirst()))
} catch {
    let message = Array("offer-signer-bench-crypto: \(error)\n".utf8)
    _ = message.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
    exit(error is BenchCryptoError ? 2 : 1)
}
