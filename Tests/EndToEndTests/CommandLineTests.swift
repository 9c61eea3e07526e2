import Foundation
import Testing

@Suite("End to end: the command line")
struct CommandLineTests {
    /// Every command README's "Command line" section lists.
    static func readmeCommands() throws -> [[String]] {
        let readme = try String(
            contentsOf: ServerProcess.packageRoot.appendingPathComponent("README.md"), encoding: .utf8)
        let section = try #require(readme.components(separatedBy: "## Command line").last)
        let block = try #require(section.components(separatedBy: "```").dropFirst().first)
        return block.split(separator: "\n").compactMap { line in
            let words = line.split(separator: " ").map(String.init)
            guard words.first == "offer-signer" else { return nil }
            return Array(words.dropFirst().prefix { !$0.hasPrefix("-") && !$0.hasPrefix("[") && $0 == $0.lowercased() })
        }
    }

    @Test("every command in README answers --help with its usage")
    func helpForEveryCommand() throws {
        let commands = try Self.readmeCommands()
        #expect(commands.count >= 10)
        for command in commands {
            // `transaction|renewal-info|app-transaction`: the first alternative stands for all.
            let words = command.map { String($0.split(separator: "|").first ?? Substring($0)) }
            let (status, output, _) = try runBinary(words + ["--help"])
            #expect(status == 0, "\(words)")
            #expect(output.contains("Usage"), "\(words): \(output)")
        }
    }

    @Test("groups without a subcommand, unknown commands and unknown options are usage errors (status 2)")
    func usageErrors() throws {
        for arguments in [
            ["testkit"], ["keys"], ["frobnicate"], ["serve", "--config", "x", "--colour", "red"],
            ["sign", "promotional-offer", "--key"],
        ] {
            let (status, _, error) = try runBinary(arguments)
            #expect(status == 2, "\(arguments)")
            #expect(!error.isEmpty)
        }
        let (status, output, _) = try runBinary(["--version"])
        #expect(status == 0 && output.hasPrefix("offer-signer "))
    }

    @Test("config check flags an app that accepts Xcode data, and serve warns at start")
    func localTestingIsFlagged() throws {
        let deployment = try Deployment()
        defer { deployment.remove() }
        let (status, output, _) = try runBinary(["config", "check", "--config", deployment.configPath])
        #expect(status == 0)
        #expect(output.contains("WARNING $.apps[1].localTesting"))
        #expect(output.contains("\(Deployment.localBundleId) (issuer \(Deployment.issuerId)) [LOCAL TESTING]"))
        #expect(!output.contains("PRIVATE KEY"))
        let server = try ServerProcess(configPath: deployment.configPath)
        #expect(server.stop() == 0)
        #expect(server.errorOutput().contains("localTesting"))
    }
}
