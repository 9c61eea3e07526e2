import Dispatch
import OfferAPI
import OfferAppStore
import OfferCommandLine
import OfferCore
import OfferCrypto
import OfferTesting
import Synchronization

/// `offer-signer-testkit simulate-campaign`: a campaign with a true effect known in advance, played against a running
/// service through its real routes, so its report can be checked against the truth.
///
/// A seeded population of lapsed subscribers (their transactions and renewal info signed by the test CA) asks for the
/// offer: the promotional offer's signature route, or with `--win-back` the eligibility listing. Each answer puts the
/// customer in an arm as the app sees it (a signature or a listing: treatment; refused with `rollout_excluded`, or
/// not listed: holdout). Then each customer converts with the arm's true probability (`--baseline`, plus `--lift`
/// points for the treatment): a purchase with the offer for the treatment, without for the holdout, sent as
/// Apple's notification to the service's notification route; a converted customer then renews at full price with
/// probability `--retention` (a `DID_RENEW`), or lapses (`EXPIRED`). The command prints what it did, per arm, as
/// JSON: the truth the service's report must find.
enum SimulateCampaignCommand {
    struct Plan: Sendable {
        var url: String
        var bundleId: String
        var offerId: String
        var productId: String
        var customers: Int
        var seed: UInt64
        var baseline: Double
        var lift: Double
        var retention: Double
        var winBack: Bool
        var environment: String
        var appAppleId: Int64?
        var price: Int64
        var offerPrice: Int64
        var currency: String
        var concurrency: Int
    }

    /// What happened to one arm, as the simulation drew it.
    struct Tally: Sendable {
        var exposures = 0
        var converted = 0
        var retained = 0
        var lapsed = 0
        var revenue: Int64 = 0
        var transactions = 0

        var json: JSONValue {
            .object([
                "exposures": .int(Int64(exposures)), "converted": .int(Int64(converted)),
                "retained": .int(Int64(retained)), "lapsed": .int(Int64(lapsed)),
                "revenueMilliunits": .int(revenue), "transactions": .int(Int64(transactions)),
            ])
        }
    }

    static func run(_ arguments: ArraySlice<String>) throws -> Int32 {
        let options = try Arguments(
            arguments,
            valued: [
                "url", "ca", "bundle-id", "offer", "product", "customers", "seed", "baseline", "lift", "retention",
                "environment", "app-apple-id", "price", "offer-price", "currency", "concurrency",
            ],
            switches: ["win-back"])
        try options.noPositionals()
        let environment = options["environment"] ?? "Production"
        guard environment == "Production" || environment == "Sandbox" else {
            throw UsageError("--environment must be Production or Sandbox")
        }
        let plan = Plan(
            url: try options.required("url"), bundleId: try options.required("bundle-id"),
            offerId: try options.required("offer"), productId: options["product"] ?? "com.example.pro.monthly",
            customers: try integer(options, "customers", 1...1_000_000, default: 1000),
            seed: UInt64(try integer(options, "seed", 0...Int(Int32.max), default: 1)),
            baseline: try rate(options, "baseline", default: 0.2),
            lift: try number(options, "lift", -100...100, default: 0) / 100,
            retention: try rate(options, "retention", default: 0.5), winBack: options.flags.contains("win-back"),
            environment: environment,
            appAppleId: environment == "Production"
                ? Int64(try integer(options, "app-apple-id", 1...Int(Int64.max), default: 1_234_567_890)) : nil,
            price: Int64(try integer(options, "price", 0...100_000_000, default: 9990)),
            offerPrice: Int64(try integer(options, "offer-price", 0...100_000_000, default: 1990)),
            currency: options["currency"] ?? "EUR",
            concurrency: try integer(options, "concurrency", 1...256, default: 16))
        guard (0...1).contains(plan.baseline + plan.lift) else {
            throw UsageError("--baseline plus --lift must stay a rate from 0 to 1")
        }
        let signer: TestAuthorityFolder
        do {
            signer = try TestAuthorityFolder(directory: try options.required("ca"))
        } catch let error as TestAuthorityFolder.Error {
            throw CommandError(error.message)
        }
        let result = try Campaign(plan: plan, signer: signer).play()
        Console.out(String(decoding: JSONWriter.pretty(result), as: UTF8.self))
        return 0
    }

    private static func integer(
        _ options: Arguments, _ name: String, _ range: ClosedRange<Int>, default value: Int
    ) throws(UsageError) -> Int {
        guard let text = options[name] else { return value }
        guard let number = Int(text), range.contains(number) else {
            throw UsageError("--\(name) must be an integer from \(range.lowerBound) to \(range.upperBound)")
        }
        return number
    }

    private static func number(
        _ options: Arguments, _ name: String, _ range: ClosedRange<Double>, default value: Double
    ) throws(UsageError) -> Double {
        guard let text = options[name] else { return value }
        guard let number = Double(text), range.contains(number) else {
            throw UsageError("--\(name) must be a number from \(range.lowerBound) to \(range.upperBound)")
        }
        return number
    }

    private static func rate(_ options: Arguments, _ name: String, default value: Double) throws(UsageError) -> Double {
        try number(options, name, 0...1, default: value)
    }
}

/// SplitMix64: a small generator whose sequence a seed fixes, the same on every machine.
struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) { state = seed &* 0x9E37_79B9_7F4A_7C15 &+ 0x2545_F491_4F6C_DD1D }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// True with probability `probability`.
    mutating func chance(_ probability: Double) -> Bool {
        Double(next() >> 11) / Double(1 << 53) < probability
    }
}

/// One campaign being played.
private final class Campaign: Sendable {
    let plan: SimulateCampaignCommand.Plan
    let signer: TestAuthorityFolder
    let client: HTTPSClient
    /// The first answer that was not one the campaign expected, told once on standard error.
    let surprise = Mutex(false)

    init(plan: SimulateCampaignCommand.Plan, signer: TestAuthorityFolder) throws {
        self.plan = plan
        self.signer = signer
        do {
            client = try HTTPSClient()
        } catch {
            throw CommandError("cannot start the HTTP client: \(error)")
        }
    }

    /// A customer of the population: their subscription, and what the draws decided.
    struct Customer: Sendable {
        let originalTransactionId: String
        let converts: (treatment: Bool, holdout: Bool)
        let renews: Bool
    }

    func play() throws -> JSONValue {
        var random = SeededGenerator(seed: plan.seed)
        // The subscription's key: the seed and the index, so campaigns of different seeds never share a customer.
        let prefix = "5" + padded(Int(plan.seed % 1_000_000), 6)
        let population = (0..<plan.customers).map { index in
            Customer(
                originalTransactionId: prefix + padded(index, 8),
                converts: (random.chance(plan.baseline + plan.lift), random.chance(plan.baseline)),
                renews: random.chance(plan.retention))
        }
        let started = SystemClock.nowMilliseconds()
        // 1. Each customer asks; the answer says their arm.
        let arms = try each(population) { [self] customer in try expose(customer, now: started) }
        var errors = arms.filter { $0 == nil }.count
        // 2. Conversions, after every exposure: a purchase with the offer (treatment) or without (holdout).
        let converted = SystemClock.nowMilliseconds() + 1
        var converting: [(Customer, ExperimentArm)] = []
        for (customer, arm) in zip(population, arms) {
            guard let arm else { continue }
            if arm == .treatment ? customer.converts.treatment : customer.converts.holdout {
                converting.append((customer, arm))
            }
        }
        let conversions = try each(converting) { [self] customer, arm in
            try notify(
                customer, type: "SUBSCRIBED", subtype: "RESUBSCRIBE", transactionSuffix: "1", purchase: converted,
                withOffer: arm == .treatment)
        }
        errors += conversions.filter { !$0 }.count
        // 3. Each converted customer renews at full price, or lapses.
        let renewed = converted + 1000
        let endings = try each(converting) { [self] customer, arm in
            customer.renews
                ? try notify(
                    customer, type: "DID_RENEW", subtype: nil, transactionSuffix: "2", purchase: renewed,
                    withOffer: false)
                : try notify(
                    customer, type: "EXPIRED", subtype: "VOLUNTARY", transactionSuffix: "1", purchase: converted,
                    withOffer: arm == .treatment)
        }
        errors += endings.filter { !$0 }.count
        var tallies: [ExperimentArm: SimulateCampaignCommand.Tally] = [.treatment: .init(), .holdout: .init()]
        for arm in arms.compactMap({ $0 }) { tallies[arm]?.exposures += 1 }
        for (customer, arm) in converting {
            let first = arm == .treatment ? plan.offerPrice : plan.price
            tallies[arm]?.converted += 1
            tallies[arm]?.revenue += first
            tallies[arm]?.transactions += 1
            if customer.renews {
                tallies[arm]?.retained += 1
                tallies[arm]?.revenue += plan.price
                tallies[arm]?.transactions += 1
            } else {
                tallies[arm]?.lapsed += 1
            }
        }
        return .object([
            "seed": .int(Int64(plan.seed)), "offerId": .string(plan.offerId), "customers": .int(Int64(plan.customers)),
            "environment": .string(plan.environment), "currency": .string(plan.currency),
            "trueLift": .double(plan.lift), "treatment": tallies[.treatment]!.json,
            "holdout": tallies[.holdout]!.json, "errors": .int(Int64(errors)),
        ])
    }

    /// Runs `body` for every item, `plan.concurrency` at a time, and returns its results in order.
    private func each<Item: Sendable, Result: Sendable>(
        _ items: [Item], _ body: @escaping @Sendable (Item) throws -> Result
    ) throws -> [Result] {
        let results = Mutex<[Int: Swift.Result<Result, any Error>]>([:])
        DispatchQueue.concurrentPerform(iterations: min(plan.concurrency, max(items.count, 1))) { worker in
            var index = worker
            while index < items.count {
                let result = Swift.Result { try body(items[index]) }
                results.withLock { $0[index] = result }
                index += plan.concurrency
            }
        }
        return try results.withLock { all in try items.indices.map { try all[$0]!.get() } }
    }

    /// Asks for the offer as the customer's app would; returns the arm the answer shows, `nil` for anything else.
    private func expose(_ customer: Customer, now: Int64) throws -> ExperimentArm? {
        let key = customer.originalTransactionId
        let transaction = SignedDataFactory.subscriptionTransaction(
            bundleId: plan.bundleId, productId: plan.productId, originalTransactionId: key,
            transactionId: key + "0", purchaseDate: now - 60 * SignedDataFactory.millisecondsPerDay,
            expiresDate: now - 30 * SignedDataFactory.millisecondsPerDay, signedDate: now,
            environment: plan.environment,
            overrides: ["price": .int(plan.price), "currency": .string(plan.currency)])
        var renewalFields: [String: JSONValue] = ["expirationIntent": .int(1)]
        if plan.winBack { renewalFields["eligibleWinBackOfferIds"] = .array([.string(plan.offerId)]) }
        let renewal = SignedDataFactory.renewalInfo(
            originalTransactionId: key, productId: plan.productId, autoRenewStatus: 0, signedDate: now,
            environment: plan.environment, overrides: renewalFields)
        // The signed data's members sit beside the request's own.
        var request: [String: JSONValue] = [
            "bundleId": .string(plan.bundleId), "signedTransaction": .string(try signer.sign(transaction)),
            "signedRenewalInfo": .string(try signer.sign(renewal)),
        ]
        if plan.winBack {
            // Only the campaign's product: the listing decides (and exposes the customer to) every offer on the
            // products it is asked about.
            request["productIds"] = .array([.string(plan.productId)])
            let (status, body) = try post("/v1/eligibility", .object(request))
            guard status == 200, case .array(let offers)? = body?["winBackOffers"] else { return nil }
            let listed = offers.contains { $0["offerId"] == .string(plan.offerId) }
            return listed ? .treatment : .holdout
        }
        request["productId"] = .string(plan.productId)
        request["offerId"] = .string(plan.offerId)
        let (status, body) = try post("/v1/signatures/promotional-offer", .object(request))
        if status == 200 { return .treatment }
        guard status == 403, case .object(let error)? = body?["error"], case .array(let reasons)? = error["reasons"],
            reasons.count == 1, reasons[0]["code"] == .string("rollout_excluded")
        else { return nil }
        return .holdout
    }

    /// Sends the notification Apple would for `customer`: `type` with their transaction (`transactionSuffix`,
    /// bought at `purchase`, with the offer or at full price). Returns whether the service took it.
    private func notify(
        _ customer: Customer, type: String, subtype: String?, transactionSuffix: String, purchase: Int64,
        withOffer: Bool
    ) throws -> Bool {
        let key = customer.originalTransactionId
        let now = SystemClock.nowMilliseconds()
        var overrides: [String: JSONValue] = [
            "price": .int(withOffer ? plan.offerPrice : plan.price), "currency": .string(plan.currency),
        ]
        if withOffer {
            overrides["offerType"] = .int(plan.winBack ? 4 : 2)
            overrides["offerIdentifier"] = .string(plan.offerId)
        }
        let transaction = SignedDataFactory.subscriptionTransaction(
            bundleId: plan.bundleId, productId: plan.productId, originalTransactionId: key,
            transactionId: key + transactionSuffix, purchaseDate: purchase,
            expiresDate: purchase + 30 * SignedDataFactory.millisecondsPerDay, signedDate: now,
            environment: plan.environment, overrides: overrides)
        let template = NotificationTemplate(
            type: type, subtype: subtype, uuid: uuid(key, type), bundleId: plan.bundleId,
            environment: plan.environment, appAppleId: plan.appAppleId, status: type == "EXPIRED" ? 2 : 1,
            transaction: transaction, signedDate: now)
        let signed = try signer.sign(try template.payload(signing: signer.sign))
        let (status, _) = try post(
            "/v1/apple/notifications/\(plan.bundleId)", .object(["signedPayload": .string(signed)]))
        return status == 200
    }

    /// A notification UUID fixed by the customer and the type (a rerun is Apple's retry: a duplicate).
    private func uuid(_ key: String, _ type: String) -> String {
        let digest = Hex.encode(SHA256.hash(Array("\(plan.seed):\(key):\(type)".utf8)))
        let hex = Array(digest.prefix(32))
        return String(hex[0..<8]) + "-" + String(hex[8..<12]) + "-4" + String(hex[13..<16]) + "-8"
            + String(hex[17..<20]) + "-" + String(hex[20..<32])
    }

    /// Tells the first unexpected answer on standard error (the rest are only counted).
    private func unexpected(_ path: String, _ status: Int, _ body: JSONValue?) {
        let first = surprise.withLock { told in
            defer { told = true }
            return !told
        }
        guard first else { return }
        let text = body.map { String(decoding: JSONWriter.compact($0), as: UTF8.self) } ?? "no JSON"
        Console.err("simulate-campaign: \(path) answered \(status) \(text)")
    }

    /// POSTs `body` to the service's `path`; the status and the JSON answer, if any.
    private func post(_ path: String, _ body: JSONValue) throws -> (Int, JSONValue?) {
        let request = HTTPSRequest(
            method: "POST", url: plan.url + path, headers: [("Content-Type", "application/json")],
            body: JSONWriter.compact(body), timeoutMilliseconds: 30_000)
        let done = DispatchSemaphore(value: 0)
        let answer = Mutex<Result<HTTPSResponse, HTTPSClientError>?>(nil)
        client.send(request) { result in
            answer.withLock { $0 = result }
            done.signal()
        }
        done.wait()
        switch answer.withLock({ $0! }) {
        case .success(let response):
            let json = try? JSONParser.parse(response.body)
            let expected = response.status == 200 || (response.status == 403 && path.hasPrefix("/v1/signatures/"))
            if !expected { unexpected(path, response.status, json) }
            return (response.status, json)
        case .failure(let error): throw CommandError("\(path): \(error)")
        }
    }

    private func padded(_ number: Int, _ width: Int) -> String {
        let text = String(number)
        return String(repeating: "0", count: max(0, width - text.count)) + text
    }
}
