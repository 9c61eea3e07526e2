// swift-tools-version:6.0
// The libFuzzer targets of offer-signer's own parsers, a package of its own so that `swift build` of the service
// never links them: they need the fuzzer runtime, which only `-sanitize=fuzzer` brings. `make fuzz` builds it with
// `swift build --package-path Fuzz -c release -Xswiftc -sanitize=fuzzer,address`, the smoke in `make test` the same
// in debug mode.
// The service is the checkout one folder up, as the OfferKit example depends on it (no network needed).
import PackageDescription

let package = Package(
    name: "offer-signer-fuzz",
    dependencies: [.package(name: "offer-signer", path: "..")],
    targets: [
        // Declares libFuzzer's `LLVMFuzzerRunDriver` for Swift. The executable keeps its own `main`, which takes the
        // target's name off the arguments and hands the rest, with the chosen target's callback, to the driver
        // (libFuzzer's own `main` could run only one fixed `LLVMFuzzerTestOneInput`).
        .target(name: "CFuzzerDriver"),
        .executableTarget(
            name: "offer-signer-fuzz",
            dependencies: [
                "CFuzzerDriver",
                .product(name: "OfferAPI", package: "offer-signer"),
                .product(name: "OfferAppStore", package: "offer-signer"),
                .product(name: "OfferCore", package: "offer-signer"),
                .product(name: "OfferCrypto", package: "offer-signer"),
                .product(name: "OfferServer", package: "offer-signer"),
            ]),
    ]
)
