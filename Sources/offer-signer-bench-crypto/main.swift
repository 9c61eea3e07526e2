// The raw-crypto floor of `make bench`: the service's own ES256 calls in a loop, nothing else.
//
//   offer-signer-bench-crypto sign N            N signatures of a promotional offer JWS's signing input
//   offer-signer-bench-crypto verify N < JWS    N verifications of the compact JWS's signature with its x5c leaf key
//
// Prints one JSON line: the operation, the iterations, the wall-clock seconds of the loop and the operations per
// second (one thread: per core). Benchmarks/run.py also runs it under callgrind for N and 2N iterations: the
// difference of the two instruction counts over N is one operation's instructions, start-up excluded.
import OfferAPI
import OfferCore
import OfferCrypto

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

/// ES256 over the signing input of a typical promotional offer JWS, as `CompactJWS.sign` calls it.
func signLoop(iterations: Int) throws -> Duration {
    let key = try SigningKey.generate()
    let claims = PromotionalOfferClaims(
        bundleId: "com.example.bench", productId: "com.example.pro.monthly", offerIdentifier: "bench_open")
    let payload = OfferSignatures.promotionalOfferPayload(
        claims, issuerId: "57246542-96fe-1a63-e053-0824d011072a", issuedAt: 1_764_590_000,
        nonce: "0193d6a0-7c8e-7b52-9a3e-4f1d2c3b4a59")
    var signingInput = CompactJWS.encodedHeader(keyId: "BENCHKEY01")
    signingInput.append(UInt8(ascii: "."))
    Base64.appendURL(payload, to: &signingInput)
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

func run(_ arguments: [String]) throws {
    guard arguments.count == 2, ["sign", "verify"].contains(arguments[0]), let iterations = Int(arguments[1]),
        (1...10_000_000).contains(iterations)
    else {
        throw BenchCryptoError.usage(
            "usage: offer-signer-bench-crypto sign N | offer-signer-bench-crypto verify N < JWS (N from 1 to 10000000)")
    }
    let elapsed: Duration
    if arguments[0] == "sign" {
        elapsed = try signLoop(iterations: iterations)
    } else {
        var token = ""
        while let line = readLine() { token += line }
        elapsed = try verifyLoop(iterations: iterations, token: token.filter { !$0.isWhitespace })
    }
    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    let rate = seconds > 0 ? Double(iterations) / seconds : 0
    print(
        "{\"operation\":\"\(arguments[0])\",\"iterations\":\(iterations),\"seconds\":\(seconds),"
            + "\"perSecond\":\(rate)}")
}

do {
    try run(Array(CommandLine.arguments.dropFirst()))
} catch {
    let message = Array("offer-signer-bench-crypto: \(error)\n".utf8)
    _ = message.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
    exit(error is BenchCryptoError ? 2 : 1)
}
