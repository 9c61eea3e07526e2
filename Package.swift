// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "offer-signer",
    // For OfferKit in apps; the service itself builds on Linux.
    platforms: [.iOS(.v15), .macOS(.v12), .tvOS(.v15), .watchOS(.v8), .visionOS(.v1)],
    products: [
        .executable(name: "offer-signer", targets: ["offer-signer"]),
        // The test kit's command line (test CA, Apple-like signed data, fake App Store Server API): an executable of
        // its own, so that the shipped offer-signer carries none of it.
        .executable(name: "offer-signer-testkit", targets: ["offer-signer-testkit"]),
        // What apps add: Foundation and the wire types only, none of the service's C libraries.
        .library(name: "OfferKit", targets: ["OfferKit"]),
        .library(name: "OfferAPI", targets: ["OfferAPI"]),
        .library(name: "OfferCrypto", targets: ["OfferCrypto"]),
        .library(name: "OfferCore", targets: ["OfferCore"]),
        .library(name: "OfferStore", targets: ["OfferStore"]),
        .library(name: "OfferAppStore", targets: ["OfferAppStore"]),
        .library(name: "OfferServer", targets: ["OfferServer"]),
        .library(name: "OfferTesting", targets: ["OfferTesting"]),
    ],
    targets: [
        .systemLibrary(name: "COpenSSL", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CMicroHTTPD", pkgConfig: "libmicrohttpd", providers: [.apt(["libmicrohttpd-dev"])]),
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(name: "CPostgreSQL", pkgConfig: "libpq", providers: [.apt(["libpq-dev"])]),
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        // App Attest's CBOR (attestation objects, assertions), read by `CBORValue`'s bounded decoder.
        .systemLibrary(name: "CCBOR", pkgConfig: "libcbor", providers: [.apt(["libcbor-dev"])]),
        // PKCS#11 declarations only (p11-kit's header): a token's module is opened with dlopen when a key names it.
        .systemLibrary(name: "CPKCS11", providers: [.apt(["libp11-kit-dev"])]),
        // prctl(2) for `ProcessHardening`: a header of inline wrappers, no library.
        .systemLibrary(name: "CSystem"),
        // The HTTP API's wire types with their JSON and Base64 code: no C library, no Foundation.
        // `Double.rounded()` calls libm, which Linux links only on request (Darwin's libSystem has it).
        .target(name: "OfferAPI", linkerSettings: [.linkedLibrary("m", .when(platforms: [.linux]))]),
        // The client module apps embed: Foundation (FoundationNetworking on Linux) and OfferAPI, nothing else.
        .target(name: "OfferKit", dependencies: ["OfferAPI"]),
        .target(name: "OfferCrypto", dependencies: ["OfferAPI", "COpenSSL", "CPKCS11", "CSystem", "CCBOR"]),
        .target(name: "OfferCore", dependencies: ["OfferAPI", "OfferCrypto"]),
        .target(name: "OfferStore", dependencies: ["OfferCore", "OfferCrypto", "CSQLite", "CPostgreSQL"]),
        // The App Store Server API client: HTTPS over libcurl, the authentication JWT, lookups with a cache, a
        // circuit breaker and Apple's rate limits. No Foundation.
        .target(name: "OfferAppStore", dependencies: ["OfferAPI", "OfferCore", "OfferCrypto", "CCurl"]),
        // The web console's HTML, CSS and JavaScript are compiled into the binary (`PackageResources`): nothing to
        // install beside it, nothing loaded from elsewhere.
        .target(
            name: "OfferServer",
            dependencies: ["OfferAPI", "OfferCore", "OfferCrypto", "OfferStore", "OfferAppStore", "CMicroHTTPD"],
            resources: [.embedInCode("Console")]),
        // The test kit: test CA, Apple-like signed data, and a client that calls the service in process. Depends on
        // the server; the server never depends on it.
        .target(
            name: "OfferTesting",
            dependencies: [
                "OfferServer", "OfferStore", "OfferAppStore", "OfferAPI", "OfferCore", "OfferCrypto", "COpenSSL",
            ]),
        // What both executables' command lines share: the dispatch of commands with their usage and exit statuses,
        // the options parser, the console and the usage and command errors.
        .target(name: "OfferCommandLine", dependencies: ["OfferAPI", "OfferCrypto"]),
        // The shipped executable: never OfferTesting (EndToEndTests' `TestKitExecutableTests` checks the binary).
        .executableTarget(
            name: "offer-signer",
            dependencies: [
                "OfferCommandLine", "OfferServer", "OfferStore", "OfferAppStore", "OfferAPI", "OfferCore",
                "OfferCrypto",
            ],
            // The HTTP server's `recv` (OfferServer's `ReceiveHook`) must be the one libmicrohttpd calls: exported,
            // so that the dynamic linker binds the library's calls to it. `serve` checks that it is.
            linkerSettings: [.unsafeFlags(["-Xlinker", "--export-dynamic-symbol=recv"])]),
        // The test kit's executable; its fake App Store Server API runs on the same HTTP server, `recv` exported too.
        .executableTarget(
            name: "offer-signer-testkit",
            dependencies: ["OfferCommandLine", "OfferTesting", "OfferServer", "OfferAPI", "OfferCore", "OfferCrypto"],
            linkerSettings: [.unsafeFlags(["-Xlinker", "--export-dynamic-symbol=recv"])]),
        // `make bench`'s raw-crypto floor: the service's own ES256 sign and verify calls in a loop.
        .executableTarget(name: "offer-signer-bench-crypto", dependencies: ["OfferAPI", "OfferCore", "OfferCrypto"]),
        .testTarget(name: "OfferAPITests", dependencies: ["OfferAPI"]),
        .testTarget(name: "OfferCryptoTests", dependencies: ["OfferCrypto", "OfferTesting", "CPKCS11"]),
        .testTarget(name: "OfferCoreTests", dependencies: ["OfferAPI", "OfferCore", "OfferCrypto", "OfferTesting"]),
        .testTarget(
            name: "OfferServerTests",
            dependencies: [
                "OfferServer", "OfferStore", "OfferAppStore", "OfferAPI", "OfferCore", "OfferCrypto", "OfferTesting",
            ]),
        .testTarget(name: "OfferStoreTests", dependencies: ["OfferStore", "OfferCore", "OfferTesting"]),
        .testTarget(name: "OfferKitTests", dependencies: ["OfferKit", "OfferAPI"]),
        .testTarget(
            name: "OfferAppStoreTests",
            dependencies: [
                "OfferAppStore", "OfferServer", "OfferAPI", "OfferCore", "OfferCrypto", "OfferTesting", "CCurl",
            ]),
        .testTarget(
            name: "EndToEndTests",
            dependencies: [
                "OfferKit", "OfferServer", "OfferStore", "OfferAPI", "OfferCore", "OfferCrypto", "OfferTesting",
            ]),
    ]
)
