import Dispatch
import OfferAppStore
import OfferCommandLine
import OfferCore
import OfferServer
import OfferStore
import Synchronization

/// `offer-signer apple backfill`: the notifications Apple sent (or failed to send) in a period, read back with Get
/// Notification History and taken in exactly as the notifications route takes them (`NotificationRecorder`: Apple's
/// checks, once by `notificationUUID`, with what they teach), into the configured ledger. Run it after an outage of
/// the service; a running service shares the ledger, and a notification taken twice is a duplicate that changes
/// nothing, so running it again is harmless.
enum AppleBackfillCommand {
    static func run(_ arguments: ArraySlice<String>) throws -> Int32 {
        let options = try Arguments(arguments, valued: ["config", "app", "since", "until", "environment"])
        try options.noPositionals()
        let now = SystemClock.nowMilliseconds()
        let since = try date(try options.required("since"), option: "since")
        let until = try options["until"].map { try date($0, option: "until") } ?? now
        guard since < until else { throw UsageError("--since must be before --until (\(ISO8601.format(until)))") }
        var environment: AppStoreEnvironment?
        if let name = options["environment"] {
            guard AppStoreServerAPISettings.lookupEnvironments.contains(AppStoreEnvironment(rawValue: name)) else {
                throw UsageError("--environment must be Production or Sandbox, not \(name)")
            }
            environment = AppStoreEnvironment(rawValue: name)
        }
        let (configuration, served) = try ServeCommand.loadConfiguration(try options.required("config"))
        let catalog = served.catalog
        let callers = catalog.order.filter { catalog.apps[$0]?.definition.appStoreServerAPI != nil }
        let apps: [String]
        if let named = options["app"] {
            guard catalog.apps[named] != nil else { throw CommandError("no app \(named) in the configuration") }
            guard callers.contains(named) else {
                throw CommandError("\(named) has no \"appStoreServerAPI\" in the configuration")
            }
            apps = [named]
        } else {
            guard !callers.isEmpty else { throw CommandError("no app has \"appStoreServerAPI\" in the configuration") }
            apps = callers
        }
        let storage = configuration.settings.storage
        switch storage {
        case .none, .memory:
            throw CommandError(
                "the configuration's storage is \(storage): backfill records into the service's ledger, so it needs "
                    + "\"sqlite:PATH\" or \"postgresql://...\"")
        case .sqlite, .postgresql: break
        }
        let ledger: any Ledger
        do {
            guard let opened = try storage.open() else { throw CommandError("no ledger to record into") }
            ledger = opened
        } catch let error as LedgerError {
            throw CommandError(error.description)
        }
        let receiver = try ServeCommand.snapshot(configuration, catalog: served, ledger: ledger).notifications
        let client: HTTPSClient
        do {
            client = try HTTPSClient()
        } catch {
            throw CommandError(error.message)
        }
        let apis = AppStoreServerAPIs(catalog: catalog, client: client, clock: SystemClock.nowMilliseconds)
        var failed = false
        for bundleId in apps {
            guard let api = apis[bundleId] else { throw CommandError("\(bundleId): no key for its appStoreServerAPI") }
            let environments = environment.map { [$0] } ?? api.settings.environments
            for environment in environments {
                guard api.settings.environments.contains(environment) else {
                    throw CommandError(
                        "\(bundleId) does not look up \(environment) (its appStoreServerAPI.environments)")
                }
                let walk = Walk(bundleId: bundleId, receiver: receiver, ledger: ledger)
                let error = walk.run(
                    api, NotificationHistoryRequest(startDate: since, endDate: until), environment: environment)
                Console.out(
                    "\(bundleId) \(environment.rawValue) \(ISO8601.format(since)) to \(ISO8601.format(until)): "
                        + walk.summary)
                if let error {
                    Console.err("offer-signer: \(bundleId) \(environment.rawValue): \(error)")
                    failed = true
                }
            }
        }
        return failed ? 1 : 0
    }

    private static func date(_ text: String, option: String) throws -> Int64 {
        guard let milliseconds = ActiveWindow.parseISO8601(text) else {
            throw UsageError("--\(option) must be an ISO 8601 date-time like 2026-01-01T00:00:00Z")
        }
        return milliseconds
    }

    /// One app's history in one environment, taken in page by page.
    final class Walk: Sendable {
        let bundleId: String
        let receiver: NotificationVerifier
        let ledger: any Ledger
        private let counts = Mutex(Counts())

        struct Counts {
            var pages = 0
            var notifications = 0
            var recorded = 0
            var duplicate = 0
            var ignored = 0
            /// Refusals by reason (the failed check, `unknown_app`, ...).
            var refused: [String: Int] = [:]
            var storageFailure: String?
        }

        init(bundleId: String, receiver: NotificationVerifier, ledger: any Ledger) {
            self.bundleId = bundleId
            self.receiver = receiver
            self.ledger = ledger
        }

        /// Walks the history and takes every notification in; returns why it stopped early, if it did.
        func run(
            _ api: AppStoreServerAPI, _ request: NotificationHistoryRequest, environment: AppStoreEnvironment
        ) -> String? {
            let done = DispatchSemaphore(value: 0)
            let walked = Mutex<Result<Int, AppStoreServerAPIError>?>(nil)
            // Each page is taken in on the client's thread before the next is asked for: this command makes no
            // other call meanwhile, and a store failure stops the walk there.
            api.walkNotificationHistory(
                request, environment: environment,
                page: { [self] page in
                    counts.withLock { $0.pages += 1 }
                    for item in page.notificationHistory {
                        guard take(item) else { return false }
                    }
                    return true
                },
                completion: { result in
                    walked.withLock { $0 = result }
                    done.signal()
                })
            done.wait()
            if let failure = counts.withLock({ $0.storageFailure }) {
                return "the ledger could not record (\(failure)); the notifications before were taken in, run the "
                    + "command again once the ledger is back"
            }
            if case .failure(let error)? = walked.withLock({ $0 }) {
                return "App Store Server API: \(error); the notifications before were taken in, run the command "
                    + "again to go on (those already taken are duplicates)"
            }
            return nil
        }

        /// Takes one notification in, waiting for the ledger; false when the ledger failed.
        private func take(_ item: NotificationHistoryResponseItem) -> Bool {
            counts.withLock { $0.notifications += 1 }
            guard let signedPayload = item.signedPayload else {
                counts.withLock { $0.refused["no_signed_payload", default: 0] += 1 }
                return true
            }
            let done = DispatchSemaphore(value: 0)
            let taken = Mutex<NotificationRecorder.Outcome?>(nil)
            NotificationRecorder.take(
                signedPayload, bundleId: bundleId, receiver: receiver, ledger: ledger,
                now: SystemClock.nowMilliseconds()
            ) { outcome in
                taken.withLock { $0 = outcome }
                done.signal()
            }
            done.wait()
            guard let outcome = taken.withLock({ $0 }) else { return false }
            return counts.withLock { counts in
                switch outcome.result {
                case "recorded": counts.recorded += 1
                case "duplicate": counts.duplicate += 1
                case "ignored", "not_stored": counts.ignored += 1
                case "storage_unavailable":
                    counts.storageFailure = (outcome.error as? OfferError)?.message ?? "storage unavailable"
                    return false
                default: counts.refused[outcome.result, default: 0] += 1
                }
                return true
            }
        }

        /// `12 notifications (1 page): 10 recorded, 1 duplicate, 0 ignored, 1 refused (bad_signature 1)`.
        var summary: String {
            let counts = counts.withLock { $0 }
            let refused = counts.refused.values.reduce(0, +)
            var text =
                "\(counts.notifications) notification\(counts.notifications == 1 ? "" : "s") (\(counts.pages) "
                + "page\(counts.pages == 1 ? "" : "s")): \(counts.recorded) recorded, \(counts.duplicate) duplicate, "
                + "\(counts.ignored) ignored, \(refused) refused"
            if refused > 0 {
                text +=
                    " ("
                    + counts.refused.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }
                    .joined(separator: ", ") + ")"
            }
            return text
        }
    }
}
