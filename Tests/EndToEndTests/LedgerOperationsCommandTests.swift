import Foundation
import OfferAPI
import OfferCore
import OfferStore
import OfferTesting
import Testing

/// `offer-signer ledger grant|reset|actions|purge` through the real binary, beside a running service (issue 8, items
/// 1 and 11).
extension LedgerCommandTests {
    /// The deployment's app, in Sandbox: the test kit's customers are Sandbox customers.
    static let app = ["--app", Deployment.bundleId, "--sandbox"]

    /// Runs `offer-signer ledger ARGUMENTS --config CONFIG`.
    static func ledger(_ arguments: [String], _ deployment: TestDeployment) throws -> (Int32, String, String) {
        try runBinary(["ledger"] + arguments + ["--config", deployment.configurationPath])
    }

    @Test("grant and reset change what the running service allows, and each is listed with its reason")
    func grantAndReset() async throws {
        let deployment = try Deployment.make()
        defer { deployment.remove() }
        let server = try ServerProcess(configPath: deployment.configurationPath)
        let path = "v1/signatures/promotional-offer"
        func sign(_ customer: String) async throws -> Int {
            try await server.post(
                path, try Deployment.lapsedCustomer(deployment, offerId: "once_only", customer: customer)
            ).status
        }
        // `once_only`: one per customer, two in all.
        let customer = "3000000000000021"
        #expect(try await sign(customer) == 200)
        #expect(try await sign(customer) == 403)

        var (status, output, error) = try Self.ledger(
            ["grant", "--offer", "once_only", "--customer", customer, "--count", "1", "--reason", "ticket 12"]
                + Self.app, deployment)
        #expect(status == 0, "\(error)")
        #expect(
            output
                == "granted 1 place(s) of com.example.app once_only (Sandbox) to customer \(customer): 1 granted in all\n"
        )
        #expect(try await sign(customer) == 200)
        // The budget is spent: two places held.
        #expect(try await sign("3000000000000022") == 403)
        (_, output, _) = try Self.ledger(["stats"], deployment)
        #expect(
            output.hasSuffix(
                "Sandbox (counted apart from Production):\n"
                    + "  com.example.app once_only: issued 2, redeemed 0, reserved 2, remaining 0 of 2, conversion "
                    + "0.0%; 1 per customer\n"), "\(output)")

        // The customer's reset frees their own count, not the budget.
        (status, output, _) = try Self.ledger(
            ["reset", "--offer", "once_only", "--customer", customer, "--reason", "refunded"] + Self.app, deployment)
        #expect(status == 0)
        #expect(
            output
                == "reset customer \(customer) for com.example.app once_only (Sandbox): 2 place(s) freed; their signatures and "
                + "redemptions until now count no more, their grants stay\n")
        #expect(try await sign(customer) == 403)
        // The offer's reset frees the budget for everyone.
        (status, output, _) = try Self.ledger(
            ["reset", "--offer", "once_only", "--reason", "wave 2"] + Self.app, deployment)
        #expect(status == 0)
        #expect(
            output
                == "reset com.example.app once_only (Sandbox): 2 place(s) freed; the budget and every customer's count start "
                + "again now\n")
        #expect(try await sign("3000000000000022") == 200)
        #expect(try await sign(customer) == 200)
        #expect(try await sign("3000000000000023") == 403)

        // Production counts apart.
        (status, output, _) = try Self.ledger(
            [
                "grant", "--offer", "once_only", "--customer", customer, "--count", "3", "--reason", "App Review",
                "--app", Deployment.bundleId,
            ], deployment)
        #expect(status == 0)
        #expect(output == "granted 3 place(s) of com.example.app once_only to customer \(customer): 3 granted in all\n")

        (status, output, _) = try Self.ledger(["actions"], deployment)
        #expect(status == 0)
        let lines = output.split(separator: "\n").map(String.init)
        #expect(lines.count == 4, "\(output)")
        #expect(
            lines.first?.hasSuffix(
                " grant com.example.app once_only (Sandbox) customer \(customer): 1 place(s) granted; reason: ticket 12"
            )
                == true,
            "\(output)")
        #expect(lines.dropFirst().first?.hasSuffix(": 2 place(s) freed; reason: refunded") == true, "\(output)")
        #expect(
            lines.dropFirst(2).first?.hasSuffix(
                " reset com.example.app once_only (Sandbox) for every customer: 2 place(s) freed; reason: wave 2")
                == true,
            "\(output)")
        #expect(
            lines.last?.hasSuffix(
                " grant com.example.app once_only customer \(customer): 3 place(s) granted; reason: App Review") == true
        )

        // The customer's history shows their signatures, then the actions about them.
        (_, output, _) = try Self.ledger(["customer", customer], deployment)
        let history = output.split(separator: "\n")
        #expect(history.count == 6, "\(output)")
        #expect(history.filter { $0.contains(" nonce ") }.count == 3)
        #expect(!history.contains { $0.contains("for every customer") })
        #expect(server.stop() == 0)
    }

    @Test(
        "grant and reset mistakes: arguments are usage errors (2); an app or offer the configuration lacks is an error (1)"
    )
    func changeMistakes() throws {
        let deployment = try Deployment.make()
        defer { deployment.remove() }
        let grant = ["grant", "--offer", "once_only", "--customer", "c1", "--count", "1", "--reason", "why"]
        for (arguments, status, message) in [
            (
                ["grant", "--offer", "once_only", "--customer", "c1", "--count", "1"] + Self.app, Int32(2),
                "--reason is required: say why the counts change (it is recorded)"
            ),
            (
                ["reset", "--offer", "once_only", "--reason", " "] + Self.app, 2,
                "a reason is required (why the counts change)"
            ),
            (
                grant.dropLast() + [String(repeating: "r", count: 501)] + Self.app, 2,
                "the reason is 501 characters long; at most 500 are kept"
            ),
            (
                ["grant", "--offer", "once_only", "--customer", "c1", "--count", "two", "--reason", "why"] + Self.app,
                2,
                "--count must be a whole number of places to grant, not two"
            ),
            (
                ["grant", "--offer", "once_only", "--customer", "c1", "--count", "0", "--reason", "why"] + Self.app, 2,
                "a grant's count must be from 1 to 1000000, not 0"
            ),
            (
                ["grant", "--offer", "once_only", "--count", "1", "--reason", "why"] + Self.app, 2,
                "--customer is required"
            ),
            (
                ["reset", "--offer", "once_only", "--reason", "why", "--count", "1"] + Self.app, 2,
                "unknown option --count"
            ),
            (
                grant, 2,
                "--app is required: the configuration has 3 apps (com.example.app, com.example.local, com.goodheartapp)"
            ),
            (
                grant + ["--app", "com.example.ap"], 1,
                "no app com.example.ap in the configuration; did you mean com.example.app?"
            ),
            (
                ["reset", "--offer", "once_onyl", "--reason", "why"] + Self.app, 1,
                "no offer once_onyl in app com.example.app; did you mean once_only?"
            ),
        ] {
            let (code, _, error) = try Self.ledger(arguments, deployment)
            #expect(code == status, "\(arguments)")
            #expect(error.hasPrefix("offer-signer: \(message)\n"), "\(arguments): \(error)")
        }
        #expect(try Self.ledger(["actions"], deployment).1 == "no grants or resets recorded\n")
    }

    /// A signature record of `customer` issued `daysAgo` days ago, written straight into the deployment's ledger.
    @discardableResult
    static func recordOld(_ customer: String, daysAgo: Int64, in deployment: TestDeployment) throws -> Int64 {
        let ledger = try SQLLedger(sqlite: deployment.directory + "/ledger/offer-signer.sqlite")
        let signature = IssuedSignature(
            bundleId: Deployment.bundleId, offerId: "once_only", productId: Deployment.product, customerKey: customer,
            nonce: UUID().uuidString.lowercased(), keyId: deployment.keyId, format: "jws",
            issuedAt: Deployment.wallClock() - daysAgo * UsageKey.day)
        #expect(try ledger.record(signature, admit: nil).recorded)
        return signature.issuedAt
    }

    @Test("purge deletes the records older than the retention; the service purges at start")
    func purge() async throws {
        let deployment = try Deployment.make()
        defer { deployment.remove() }
        let old = try Self.recordOld("3000000000000031", daysAgo: 401, in: deployment)
        try Self.recordOld("3000000000000032", daysAgo: 399, in: deployment)
        var (status, output, _) = try Self.ledger(["purge"], deployment)
        #expect(status == 0)
        #expect(output.hasPrefix("purged 1 signature record(s) issued before "), "\(output)")
        #expect(
            output.hasSuffix(
                " (ledgerRetentionDays 400); their per-offer daily totals, the redemptions and the "
                    + "per-offer totals are kept\n"))
        #expect(
            try Self.ledger(["customer", "3000000000000031"], deployment).1
                == "no records of customer 3000000000000031\n")
        #expect(try Self.ledger(["customer", "3000000000000032"], deployment).1.contains(" once_only "))
        (_, output, _) = try Self.ledger(["stats", "--daily"], deployment)
        #expect(output.contains("once_only: issued 2, redeemed 0, reserved 0, remaining 2 of 2"), "\(output)")
        let day = ISO8601.format(old).prefix(10)
        #expect(
            output.hasSuffix(
                "\nPurged records, per day (UTC):\n  \(day) com.example.app once_only: issued 1, redeemed 0\n"),
            "\(output)")

        // The service's first pass runs as it starts.
        try Self.recordOld("3000000000000033", daysAgo: 500, in: deployment)
        let server = try ServerProcess(configPath: deployment.configurationPath)
        // A poll for the pass's outcome; its 30 s deadline only guards a hang (the pass runs once the server serves).
        var remaining = ""
        let deadline = ContinuousClock.now + .seconds(30)
        repeat {
            remaining = try Self.ledger(["customer", "3000000000000033"], deployment).1
            if remaining.hasPrefix("no records") { break }
            try await Task.sleep(for: .milliseconds(50))
        } while ContinuousClock.now < deadline
        #expect(remaining == "no records of customer 3000000000000033\n")
        #expect(server.stop() == 0)
        (status, output, _) = try Self.ledger(["purge"], deployment)
        #expect(status == 0 && output.hasPrefix("purged 0 signature record(s)"))
    }
}
