// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "offer-signer",
    products: [
        .executable(name: "offer-signer", targets: ["offer-signer"]),
        .library(name: "OfferCrypto", targets: ["OfferCrypto"]),
        .library(name: "OfferCore", targets: ["OfferCore"]),
        .library(name: "OfferStore", targets: ["OfferStore"]),
        .library(name: "OfferServer", targets: ["OfferServer"]),
        .library(name: "OfferTesting", targets: ["OfferTesting"]),
    ],
    targets: [
        .systemLibrary(name: "COpenSSL", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CMicroHTTPD", pkgConfig: "libmicrohttpd", providers: [.apt(["libmicrohttpd-dev"])]),
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        .target(name: "OfferCrypto", dependencies: ["COpenSSL"]),
        .target(name: "OfferCore", dependencies: ["OfferCrypto"]),
        .target(name: "OfferStore", dependencies: ["CSQLite"]),
        .target(name: "OfferServer", dependencies: ["OfferCore", "OfferCrypto", "OfferStore", "CMicroHTTPD"]),
        .target(name: "OfferTesting", dependencies: ["OfferCore", "OfferCrypto", "COpenSSL"]),
        .executableTarget(
            name: "offer-signer",
            dependencies: ["OfferServer", "OfferStore", "OfferCore", "OfferCrypto", "OfferTesting"]),
        .testTarget(name: "OfferCryptoTests", dependencies: ["OfferCrypto", "OfferTesting"]),
        .testTarget(name: "OfferCoreTests", dependencies: ["OfferCore", "OfferCrypto", "OfferTesting"]),
        .testTarget(
            name: "OfferServerTests",
            dependencies: ["OfferServer", "OfferStore", "OfferCore", "OfferCrypto", "OfferTesting"]),
        .testTarget(name: "OfferStoreTests", dependencies: ["OfferStore"]),
        .testTarget(name: "EndToEndTests", dependencies: ["OfferCore", "OfferCrypto", "OfferTesting"]),
    ]
)
