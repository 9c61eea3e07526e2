import Foundation
import Testing

/// Issue 20, item 5: the test kit is an executable of its own, `offer-signer-testkit`, so that the shipped
/// `offer-signer` carries neither the test CA nor the fake App Store Server API.
@Suite("End to end: the test kit is its own executable, and offer-signer carries none of it")
struct TestKitExecutableTests {
    /// What only the test kit has: its module's name (in every one of its symbols, Swift's mangling writes it as
    /// `12OfferTesting`), the fake App Store Server API's type and its counting route, the test CA's type.
    static let markers = ["OfferTesting", "FakeAppStoreServerAPI", "/__fake/requests", "TestCertificateAuthority"]

    static func contents(_ path: String) throws -> Data {
        try #require(FileManager.default.isExecutableFile(atPath: path), "build it first: swift build (\(path))")
        return try Data(contentsOf: URL(fileURLWithPath: path))
    }

    @Test("the offer-signer binary holds no symbol or string of the test kit; offer-signer-testkit holds each")
    func offerSignerCarriesNoTestKit() throws {
        let shipped = try Self.contents(ServerProcess.binary)
        let testKit = try Self.contents(ServerProcess.testKitBinary)
        for marker in Self.markers {
            #expect(shipped.range(of: Data(marker.utf8)) == nil, "offer-signer contains \"\(marker)\"")
            // The same search finds it where it is: the check can fail.
            #expect(testKit.range(of: Data(marker.utf8)) != nil, "offer-signer-testkit lacks \"\(marker)\"")
        }
    }

    @Test(
        "`offer-signer testkit ...` is a usage error naming offer-signer-testkit (status 2)",
        arguments: [["testkit"], ["testkit", "ca", "--out", "/nonexistent/ca"], ["testkit", "--help"]])
    func oldCommandPointsAtTheNewExecutable(arguments: [String]) throws {
        let (status, output, error) = try runBinary(arguments)
        #expect(status == 2)
        #expect(output.isEmpty)
        #expect(
            error.hasPrefix(
                "offer-signer: the test kit is its own executable: run `offer-signer-testkit ca|sign|apple-api`"),
            "\(error)")
        #expect(!FileManager.default.fileExists(atPath: "/nonexistent/ca"))
    }

    @Test("offer-signer-testkit answers --help, --version and mistakes as offer-signer does")
    func ownCommandLine() throws {
        let (helpStatus, help, _) = try runTestKit(["--help"])
        #expect(helpStatus == 0)
        #expect(help.contains("Usage: offer-signer-testkit <command> [options]"), "\(help)")
        for command in ["ca", "sign", "apple-api"] {
            #expect(help.contains("\n  \(command) "), "\(command) is listed: \(help)")
        }
        let (versionStatus, version, _) = try runTestKit(["--version"])
        let (_, shippedVersion, _) = try runBinary(["--version"])
        #expect(versionStatus == 0)
        #expect(version == "offer-signer-testkit " + shippedVersion.dropFirst("offer-signer ".count))

        let (status, output, error) = try runTestKit(["sing", "transaction"])
        #expect(status == 2)
        #expect(output.isEmpty)
        #expect(error.hasPrefix("offer-signer-testkit: unknown command \"sing\"; did you mean \"sign\"?"), "\(error)")
        #expect(error.contains("Commands:"))
        let (missing, _, missingError) = try runTestKit(["ca"])
        #expect(missing == 2)
        #expect(missingError.hasPrefix("offer-signer-testkit: --out is required\nRun with --help for usage."))
    }
}
