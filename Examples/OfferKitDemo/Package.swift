// swift-tools-version:6.0
// An app's view of offer-signer: this package depends on the repository as an app would, and uses only the
// OfferKit product. An app writes `.package(url: "https://github.com/<owner>/offer-signer", from: "<version>")`;
// here the dependency is the checkout two folders up.
import Foundation
import PackageDescription

// SwiftPM names a path dependency after its folder (lowercased, a `.git` ending dropped), not after the `name` in its
// manifest: a checkout in a folder called `offer-signer` is the package `offer-signer`, one in `main` is `main`. So the identity is read
// from the folder, and the example builds whatever the checkout is called.
let checkout = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..")
    .standardizedFileURL
let folder = checkout.lastPathComponent.lowercased()
let identity = folder.hasSuffix(".git") ? String(folder.dropLast(4)) : folder

let package = Package(
    name: "OfferKitDemo",
    platforms: [.macOS(.v12)],
    dependencies: [.package(path: "../..")],
    targets: [
        .executableTarget(
            name: "offerkit-demo", dependencies: [.product(name: "OfferKit", package: identity)])
    ]
)
