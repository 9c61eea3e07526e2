// swift-tools-version:6.0
// An app's view of offer-signer: this package depends on the repository as an app would, and uses only the
// OfferKit product. An app writes `.package(url: "https://github.com/<owner>/offer-signer", from: "<version>")`;
// here the dependency is the checkout two folders up.
import PackageDescription

let package = Package(
    name: "OfferKitDemo",
    platforms: [.macOS(.v12)],
    dependencies: [.package(name: "offer-signer", path: "../..")],
    targets: [
        .executableTarget(
            name: "offerkit-demo", dependencies: [.product(name: "OfferKit", package: "offer-signer")])
    ]
)
