// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "offer-signer",
    // For OfferKit in apps; the service itself builds on Linux.
    platforms: [.iOS(.v15), .macOS(.v12), .tvOS(.v15), .watchOS(.v8), .visionOS(.v1)],
    products: [
        .executable(name: "offer-signer", targets: ["offer-signer"]),
        // What apps add: Foundation and the wire types only, none of the service's C libraries.
        .library(name: "OfferKit", targets: ["OfferKit"]),
        .library(name: "OfferAPI", targets: ["OfferAPI"]),
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
        .systemLibrary(name: "CPostgreSQL", pkgConfig: "libpq", providers: [.apt(["libpq-dev"])]),
        // The HTTP API's wire types with their JSON and Base64 code: no C library, no Foundation.
        // `Double.rounded()` calls libm, which Linux links only on request (Darwin's libSystem has it).
        .target(name: "OfferAPI", linkerSettings: [.linkedLibrary("m", .when(platforms: [.linux]))]),
        // The client module apps embed: Foundation (FoundationNetworking on Linux) and OfferAPI, nothing else.
        .target(name: "OfferKit", dependencies: ["OfferAPI"]),
        .target(name: "OfferCrypto", dependencies: ["COpenSSL"]),
        .target(name: "OfferCore", dependencies: ["OfferAPI", "OfferCrypto"]),
        .target(name: "OfferStore", dependencies: ["OfferCore", "OfferCrypto", "CSQLite", "CPostgreSQL"]),
        .target(
            name: "OfferServer", dependencies: ["OfferAPI", "OfferCore", "OfferCrypto", "OfferStore", "CMicroHTTPD"]),
        // The test kit: test CA, Apple-like signed data, and a client that calls the service in process. Depends on
        // the server; the server never depends on it.
        .target(
            name: "OfferTesting",
            dependencies: ["OfferServer", "OfferStore", "OfferAPI", "OfferCore", "OfferCrypto", "COpenSSL"]),
        .executableTarget(
            name: "offer-signer",
            dependencies: ["OfferServer", "OfferStore", "OfferAPI", "OfferCore", "OfferCrypto", "OfferTesting"]),
        .testTarget(name: "OfferAPITests", dependencies: ["OfferAPI"]),
        .testTarget(name: "OfferCryptoTests", dependencies: ["OfferCrypto", "OfferTesting"]),
        .testTarget(name: "OfferCoreTests", dependencies: ["OfferAPI", "OfferCore", "OfferCrypto", "OfferTesting"]),
        .testTarget(
            name: "OfferServerTests",
            dependencies: ["OfferServer", "OfferStore", "OfferAPI", "OfferCore", "OfferCrypto", "OfferTesting"]),
        .testTarget(name: "OfferStoreTests", dependencies: ["OfferStore", "OfferCore"]),
        .testTarget(name: "OfferKitTests", dependencies: ["OfferKit", "OfferAPI"]),
        .testTarget(
            name: "EndToEndTests",
            dependencies: [
                "OfferKit", "OfferServer", "OfferStore", "OfferAPI", "OfferCore", "OfferCrypto", "OfferTesting",
            ]),
    ]
)
