import OfferAPI
import OfferCore
import OfferServer

/// `offer-signer explain`: the full decision trace of one offer for given signed data, for ops.
enum ExplainCommand {
    static func run(_ arguments: ArraySlice<String>) throws -> Int32 {
        let options = try Arguments(
            arguments,
            valued: [
                "config", "offer", "bundle-id", "signed-transaction", "signed-renewal-info", "signed-app-transaction",
                "at",
            ])
        let (_, catalog) = try ServeCommand.loadConfiguration(try options.required("config"))
        let offerId = try options.required("offer")
        let candidates = catalog.apps.values.filter {
            $0.offer(offerId) != nil && (options["bundle-id"] == nil || $0.config.bundleId == options["bundle-id"])
        }
        guard let app = candidates.first, let offer = app.offer(offerId) else {
            throw CommandError(
                "no offer \(offerId) in the configuration\(options["bundle-id"].map { " for app \($0)" } ?? "")")
        }
        guard candidates.count == 1 else {
            throw UsageError("several apps have offer \(offerId); choose one with --bundle-id")
        }
        var now = SystemClock.nowMilliseconds()
        if let at = options["at"] {
            guard let parsed = ActiveWindow.parseISO8601(at) else {
                throw UsageError("--at must be an ISO 8601 date-time like 2026-12-01T00:00:00Z")
            }
            now = parsed
        }

        func verified(_ option: String, _ kind: SignedDataKind) throws -> JSONValue? {
            guard let path = options[option] else { return nil }
            guard let bytes = FileBytes.read(path) else { throw CommandError("\(path): cannot read file") }
            let token = String(decoding: bytes, as: UTF8.self).filter { !$0.isWhitespace }
            do {
                return try app.verify(token, kind: kind)
            } catch {
                throw CommandError(
                    "--\(option) \(path): untrusted signed data (\(error.reason.rawValue)): \(error.message)")
            }
        }
        if options["signed-renewal-info"] != nil && options["signed-transaction"] == nil {
            throw UsageError("--signed-renewal-info needs the --signed-transaction it belongs to, as the service does")
        }
        let transaction = try verified("signed-transaction", .transaction)
        let renewal = try verified("signed-renewal-info", .renewalInfo)
        let appTransaction = try verified("signed-app-transaction", .appTransaction)
        var customer: VerifiedCustomer?
        if transaction != nil || renewal != nil || appTransaction != nil {
            do {
                customer = try VerifiedCustomer(
                    transactionJSON: transaction, renewalInfoJSON: renewal, appTransactionJSON: appTransaction, now: now
                )
            } catch {
                switch error {
                case .malformed(let field, let message): throw CommandError("\(field): malformed payload: \(message)")
                case .inconsistent(let message): throw CommandError("signed data does not fit together: \(message)")
                }
            }
        }
        let trace = OfferEvaluation.evaluate(offer, customer: customer, now: now)
        var lines = [
            "offer \(offer.id) (\(offer.kind.rawValue)) of \(app.config.bundleId) at \(ActiveWindow.formatISO8601(now))"
        ]
        if let facts = customer?.facts {
            lines.append("customer: \(describe(facts))")
        } else {
            lines.append("customer: unverified (no signed data)")
        }
        lines.append(trace.render())
        switch trace.decision {
        case .eligible:
            lines.append("decision: ELIGIBLE")
        case .ineligible(let reasons):
            lines.append(
                "decision: NOT ELIGIBLE; the client sees: "
                    + reasons.map { "\($0.rule)/\($0.code)" }.joined(separator: ", "))
        }
        Console.out(lines.joined(separator: "\n"))
        return trace.passed ? 0 : 3
    }

    private static func describe(_ facts: CustomerFacts) -> String {
        var parts: [String] = []
        parts.append("key=\(facts.customerKey ?? "absent")")
        parts.append("status=\(facts.subscriptionStatus?.rawValue ?? "absent")")
        if let days = facts.daysSinceExpiry { parts.append("daysSinceExpiry=\(days)") }
        if let days = facts.daysSubscribed { parts.append("daysSubscribed=\(days)") }
        if let days = facts.signedDataAgeDays { parts.append("signedDataAgeDays=\(days)") }
        if let product = facts.productId { parts.append("product=\(product)") }
        if let group = facts.subscriptionGroupId { parts.append("group=\(group)") }
        if let autoRenew = facts.autoRenew { parts.append("autoRenew=\(autoRenew)") }
        if let storefront = facts.storefront { parts.append("storefront=\(storefront)") }
        if let environment = facts.environment { parts.append("environment=\(environment)") }
        if !facts.eligibleWinBackOfferIds.isEmpty {
            parts.append("winBack=\(facts.eligibleWinBackOfferIds.joined(separator: ","))")
        }
        return parts.joined(separator: " ")
    }
}
