import Dispatch
import OfferAppStore
import OfferCommandLine
import OfferCore
import OfferServer
import Synchronization

/// `offer-signer apple status`: one customer's subscriptions as the App Store Server API reports them, verified
/// like any signed data, for ops checking an app's `appStoreServerAPI` settings. Prints facts only, never the
/// authentication JWT or the signed data.
enum AppleCommand {
    static func run(_ subcommand: String, _ arguments: ArraySlice<String>) throws -> Int32 {
        switch subcommand {
        case "status": return try status(arguments)
        case "backfill": return try AppleBackfillCommand.run(arguments)
        default: throw UsageError("unknown apple command '\(subcommand)': status or backfill")
        }
    }

    private static func status(_ arguments: ArraySlice<String>) throws -> Int32 {
        let options = try Arguments(arguments, valued: ["config", "app", "transaction"])
        try options.noPositionals()
        let transactionId = try options.required("transaction")
        let (configuration, served) = try ServeCommand.loadConfiguration(try options.required("config"))
        let catalog = served.catalog
        let callers = catalog.order.filter { catalog.apps[$0]?.definition.appStoreServerAPI != nil }
        let bundleId: String
        if let named = options["app"] {
            bundleId = named
        } else if callers.count == 1 {
            bundleId = callers[0]
        } else {
            throw UsageError(
                "name the app with --app (apps with appStoreServerAPI: \(callers.joined(separator: ", ")))")
        }
        guard let app = catalog.apps[bundleId] else { throw CommandError("no app \(bundleId) in the configuration") }
        let client: HTTPSClient
        do {
            client = try HTTPSClient()
        } catch {
            throw CommandError(error.message)
        }
        guard let api = AppStoreServerAPI(app: app, client: client, clock: SystemClock.nowMilliseconds) else {
            throw CommandError("\(bundleId) has no \"appStoreServerAPI\" in the configuration")
        }
        let verifier: SignedDataVerifier
        do {
            verifier = try configuration.loadVerifier()
        } catch {
            throw CommandError(ServeCommand.describe(error, path: configuration.path))
        }
        let outcome = Mutex<Result<StatusResponse, AppStoreServerAPIError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        api.subscriptionStatuses(transactionId: transactionId) { result in
            outcome.withLock { $0 = result }
            done.signal()
        }
        done.wait()
        let response: StatusResponse
        switch outcome.withLock({ $0 }) {
        case .success(let answer)?: response = answer
        case .failure(let error)?: throw CommandError("App Store Server API: \(error)")
        case nil: throw CommandError("App Store Server API: no answer")
        }
        let trust = AppTrust(
            bundleId: app.bundleId, environments: Set(configuration.settings.trust.environments),
            localTesting: app.definition.localTesting)
        let subscriptions: [VerifiedSubscriptionStatus]
        do {
            subscriptions = try response.verified(
                with: verifier, trust: trust, appAppleId: app.definition.appAppleId,
                now: SystemClock.nowMilliseconds())
        } catch {
            throw CommandError("the App Store Server API's answer did not verify: \(error)")
        }
        Console.out(describe(response, subscriptions))
        return 0
    }

    /// The verified facts, one subscription a block.
    static func describe(_ response: StatusResponse, _ subscriptions: [VerifiedSubscriptionStatus]) -> String {
        var lines = [
            "\(response.bundleId ?? "?") in \(response.environment?.rawValue ?? "?")"
                + (response.appAppleId.map { " (appAppleId \($0))" } ?? "") + ": \(subscriptions.count) subscription"
                + (subscriptions.count == 1 ? "" : "s")
        ]
        for subscription in subscriptions {
            let transaction = subscription.transaction
            lines.append("")
            lines.append(
                "originalTransactionId \(subscription.originalTransactionId): "
                    + (subscription.status?.name ?? "status unknown"))
            lines.append("  subscription group   \(subscription.subscriptionGroupIdentifier ?? "-")")
            lines.append("  product              \(transaction.productId ?? "-")")
            lines.append("  latest transaction   \(transaction.transactionId ?? "-")")
            lines.append("  purchased            \(date(transaction.purchaseDate))")
            lines.append("  expires              \(date(transaction.expiresDate))")
            if let offerType = transaction.offerType {
                lines.append("  offer                type \(offerType.rawValue) \(transaction.offerIdentifier ?? "")")
            }
            if let revoked = transaction.revocationDate { lines.append("  revoked              \(date(revoked))") }
            lines.append("  signed               \(date(transaction.signedDate))")
            guard let renewal = subscription.renewalInfo else { continue }
            let autoRenew = renewal.autoRenewStatus.map { $0 == .on ? "on" : "off" } ?? "-"
            lines.append("  auto-renew           \(autoRenew), next product \(renewal.autoRenewProductId ?? "-")")
            if let renewalDate = renewal.renewalDate { lines.append("  renews               \(date(renewalDate))") }
            if renewal.isInBillingRetryPeriod == true { lines.append("  billing retry        yes") }
            if let intent = renewal.expirationIntent { lines.append("  expiration intent    \(intent.rawValue)") }
            if let offerType = renewal.offerType {
                lines.append("  next renewal offer   type \(offerType.rawValue) \(renewal.offerIdentifier ?? "")")
            }
            if let winBack = renewal.eligibleWinBackOfferIds, !winBack.isEmpty {
                lines.append("  win-back offers      \(winBack.joined(separator: ", "))")
            }
        }
        return lines.joined(separator: "\n")
    }

    private static func date(_ milliseconds: Int64?) -> String { milliseconds.map(ISO8601.format) ?? "-" }
}
