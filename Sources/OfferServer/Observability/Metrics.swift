import Synchronization

/// Counters and gauges exported at `GET /metrics` in Prometheus text format 0.0.4.
///
/// Labels carry only configured names (app bundle IDs, offer IDs, key IDs) and fixed codes, never values from a
/// request, so the number of series stays bounded whatever clients send.
public final class Metrics: Sendable {
    /// A metric family: its name, help text and type, and its place in the rendering order (also its slot in
    /// the counters, so a count costs no hashing of the family).
    public struct Family: Sendable, Hashable {
        public let name: String
        public let help: String
        public let type: String
        let index: Int

        public static let requests = Family(
            name: "offer_signer_http_requests_total", help: "HTTP requests by route and status.", type: "counter",
            index: 3)
        public static let signatures = Family(
            name: "offer_signer_signatures_total", help: "Signatures issued by app, offer, format and key ID.",
            type: "counter", index: 7)
        public static let decisions = Family(
            name: "offer_signer_decisions_total", help: "Eligibility decisions by app, offer and outcome.",
            type: "counter", index: 4)
        public static let notEligible = Family(
            name: "offer_signer_not_eligible_total", help: "Refusals by app, offer and reason code.", type: "counter",
            index: 5)
        public static let limitsReached = Family(
            name: "offer_signer_limits_reached_total", help: "Offer limits reached, by app, offer and limit.",
            type: "counter", index: 6)
        public static let signedDataRejected = Family(
            name: "offer_signer_signed_data_rejected_total",
            help: "App Store signed data refused, by app and failed check.", type: "counter", index: 8)
        public static let reloads = Family(
            name: "offer_signer_reloads_total", help: "Configuration reloads by result.", type: "counter", index: 2)
        public static let configuration = Family(
            name: "offer_signer_configuration_info", help: "The configuration in force (hash of the file), 1.",
            type: "gauge", index: 1)
        public static let build = Family(
            name: "offer_signer_build_info", help: "Version of this build, 1.", type: "gauge", index: 0)
        public static let ledgerCommits = Family(
            name: "offer_signer_ledger_commits_total",
            help: "Ledger transactions that committed signatures (one disk flush each), by backend.",
            type: "counter", index: 9)
        public static let ledgerRecords = Family(
            name: "offer_signer_ledger_records_total",
            help:
                "Signatures the ledger committed (or refused at its limits), by backend; over commits: the group size.",
            type: "counter", index: 10)
        public static let ledgerCommitMicroseconds = Family(
            name: "offer_signer_ledger_commit_microseconds_total",
            help: "Time the ledger's commits took, flush included, by backend; over commits: the commit latency.",
            type: "counter", index: 11)
        public static let ledgerCommitSeconds = Family(
            name: "offer_signer_ledger_commit_seconds",
            help: "Ledger commits by the time each took, flush included, by backend (a histogram: its p99 and more).",
            type: "histogram", index: 28)
        public static let ledgerLargestGroup = Family(
            name: "offer_signer_ledger_largest_group", help: "The most signatures one ledger commit carried.",
            type: "gauge", index: 12)
        public static let offerBudgetRemaining = Family(
            name: "offer_signer_offer_budget_remaining",
            help: "What remains of an offer's total budget (Production): the total less reservations and redemptions.",
            type: "gauge", index: 13)
        public static let offerReservations = Family(
            name: "offer_signer_offer_reservations",
            help: "A limited offer's signatures neither redeemed nor expired (Production): the places they hold.",
            type: "gauge", index: 14)
        public static let offerRedemptions = Family(
            name: "offer_signer_offer_redemptions_total",
            help: "A limited offer's redemptions since its last ledger reset (Production).", type: "counter",
            index: 15)

        public static let notifications = Family(
            name: "offer_signer_notifications_total",
            help:
                "Notifications from Apple by app, type (unknown for a type not known here, none when it did not "
                + "verify) and result (recorded, duplicate, ignored, not_stored, or why it was refused).",
            type: "counter", index: 16)
        public static let appleAPILookups = Family(
            name: "offer_signer_apple_api_lookups_total",
            help: "App Store Server API lookups by app, endpoint and result (cache and Sandbox retry included).",
            type: "counter", index: 17)
        public static let appleAPILookupMilliseconds = Family(
            name: "offer_signer_apple_api_lookup_milliseconds_total",
            help: "Time the App Store Server API lookups took, by app and endpoint; over lookups: the mean latency.",
            type: "counter", index: 18)
        public static let appleAPICalls = Family(
            name: "offer_signer_apple_api_calls_total",
            help: "HTTP calls to the App Store Server API by app, environment, endpoint and result.", type: "counter",
            index: 19)
        public static let appleAPICallMilliseconds = Family(
            name: "offer_signer_apple_api_call_milliseconds_total",
            help: "Time the HTTP calls to the App Store Server API took, by app, environment and endpoint.",
            type: "counter", index: 20)
        public static let appleAPICache = Family(
            name: "offer_signer_apple_api_cache_total",
            help: "Subscription status lookups answered from the cache (hit) or not (miss), by app.", type: "counter",
            index: 21)
        public static let appleAPIBreaker = Family(
            name: "offer_signer_apple_api_circuit_state",
            help: "The App Store Server API circuit breaker by app and environment: 0 closed, 1 half-open, 2 open.",
            type: "gauge", index: 22)
        public static let subscriptionLookups = Family(
            name: "offer_signer_subscription_lookups_total",
            help:
                "Subscriptions looked up at Apple for a decision (refresh, retention) by app and result: found, "
                + "not_found, or why nothing was learnt (timeout, untrusted, storage_unavailable, ...).",
            type: "counter", index: 23)
        public static let retentionAnswers = Family(
            name: "offer_signer_retention_answers_total",
            help:
                "Retention Messaging requests from Apple by app, answer (message, alternate_product, promotional_offer, "
                + "repeated, none, deadline, refused, ...) and where the customer's facts came from (state, lookup, "
                + "none).", type: "counter", index: 24)
        public static let catalogVersion = Family(
            name: "offer_signer_catalog_version",
            help: "The published catalog version served for each app (catalog \"storage\").", type: "gauge",
            index: 25)

        public static let auditEntries = Family(
            name: "offer_signer_audit_entries",
            help: "Entries of the admin audit log, as far as this process has appended or seen (the head's count).",
            type: "gauge", index: 26)
        public static let auditHead = Family(
            name: "offer_signer_audit_head_info",
            help: "The hash of the newest admin audit entry this process has appended or seen, 1.", type: "gauge",
            index: 27)

        public static let adminAuthFailures = Family(
            name: "offer_signer_admin_auth_failures_total",
            help:
                "Failed admin credentials by kind (bearer, sign_in) and answer (refused: 401; throttled: 429 while "
                + "the client address waits).",
            type: "counter", index: 29)
        public static let requestDuration = Family(
            name: "offer_signer_http_request_duration_seconds",
            help: "HTTP requests by route and the time from routing (the request read) to the answer (a histogram).",
            type: "histogram",
            index: 30)

        public static let exposures = Family(
            name: "offer_signer_exposures_total",
            help:
                "Verified customers exposed to an offer, by arm (treatment: shown it; holdout: kept from it by a "
                + "rollout alone), one per customer, offer and experiment period, as this process recorded them.",
            type: "counter", index: 31)
        public static let conversions = Family(
            name: "offer_signer_conversions_total",
            help:
                "Exposed customers who bought or renewed after the exposure, by offer and arm, as this process "
                + "recorded them from Apple's notifications.",
            type: "counter", index: 32)
        public static let appAttestRequests = Family(
            name: "offer_signer_app_attest_requests_total",
            help:
                "Requests of apps with App Attest, by app, mode (report, enforce) and outcome (valid, missing, or the "
                + "refusal's reason): the share of valid ones says when enforce is safe.",
            type: "counter", index: 33)
        public static let appAttestKeys = Family(
            name: "offer_signer_app_attest_keys_total",
            help: "App Attest keys offered for attestation, by app and outcome (attested, or the refusal's reason).",
            type: "counter", index: 34)

        /// The order families are rendered in.
        static let all: [Family] = [
            .build, .configuration, .reloads, .requests, .decisions, .notEligible, .limitsReached, .signatures,
            .signedDataRejected, .ledgerCommits, .ledgerRecords, .ledgerCommitMicroseconds, .ledgerCommitSeconds,
            .ledgerLargestGroup,
            .offerBudgetRemaining, .offerReservations, .offerRedemptions, .notifications, .appleAPILookups,
            .appleAPILookupMilliseconds,
            .appleAPICalls, .appleAPICallMilliseconds, .appleAPICache, .appleAPIBreaker, .subscriptionLookups,
            .retentionAnswers, .exposures, .conversions, .appAttestRequests, .appAttestKeys, .catalogVersion,
            .auditEntries, .auditHead,
            .adminAuthFailures, .requestDuration,
        ]
    }

    /// A series' labels, names and values in the order given: the key counts are kept under. Hashing a few short
    /// strings is cheap on the request path; the labels are rendered as text only when `/metrics` is scraped.
    struct Labels: Hashable {
        /// Name, value, name, value...
        let parts: [String]

        init(_ labels: KeyValuePairs<String, String>) {
            var parts: [String] = []
            parts.reserveCapacity(labels.count * 2)
            for (name, value) in labels {
                parts.append(name)
                parts.append(value)
            }
            self.parts = parts
        }

        /// `name="value",...` with Prometheus's escaping.
        var rendered: String {
            var out = ""
            out.reserveCapacity(96)
            var index = 0
            while index + 1 < parts.count {
                if index > 0 { out += "," }
                out += parts[index]
                out += "=\""
                out += Metrics.escape(parts[index + 1])
                out += "\""
                index += 2
            }
            return out
        }
    }

    /// Per family (by `Family.index`), the value of each series by its labels.
    private let series = Mutex<[[Labels: Int]]>(Array(repeating: [:], count: Family.all.count))

    /// A histogram's series: the upper bounds (as Prometheus writes them), the count at or under each (cumulative),
    /// the count of all observations and their sum.
    public struct Histogram: Sendable, Equatable {
        public var bounds: [String]
        public var cumulativeCounts: [Int]
        public var count: Int
        public var sum: Double

        public init(bounds: [String], cumulativeCounts: [Int], count: Int, sum: Double) {
            self.bounds = bounds
            self.cumulativeCounts = cumulativeCounts
            self.count = count
            self.sum = sum
        }

        /// One observation that falls in bucket `first` (and so in every one after it).
        mutating func record(from first: Int, seconds: Double) {
            var index = first
            while index < cumulativeCounts.count {
                cumulativeCounts[index] += 1
                index += 1
            }
            count += 1
            sum += seconds
        }
    }

    /// Per histogram family (by `Family.index`), each series by its labels.
    private let histograms = Mutex<[Int: [Labels: Histogram]]>([:])

    public init(version: String = "0.1.0") {
        set(.build, ["version": version], to: 1)
    }

    /// Adds 1 to the series of `family` with `labels` (label names in the order given).
    public func increment(_ family: Family, _ labels: KeyValuePairs<String, String>) {
        add(family, labels, 1)
    }

    /// Adds `amount` to the series of `family` with `labels` (label names in the order given).
    public func add(_ family: Family, _ labels: KeyValuePairs<String, String>, _ amount: Int) {
        let key = Labels(labels)
        series.withLock { $0[family.index][key, default: 0] += amount }
    }

    /// Sets a gauge; `replacing: true` drops the family's other series (an info metric has one value at a time).
    public func set(_ family: Family, _ labels: KeyValuePairs<String, String>, to value: Int, replacing: Bool = true) {
        let key = Labels(labels)
        series.withLock {
            if replacing { $0[family.index] = [:] }
            $0[family.index][key] = value
        }
    }

    /// Sets every series of `family` at once (label names in the order given), dropping the others: for values read
    /// afresh from their source at each scrape, so a series whose subject went (an offer no longer limited) goes too.
    public func replace(_ family: Family, with values: [(labels: KeyValuePairs<String, String>, value: Int)]) {
        var keyed: [Labels: Int] = [:]
        for (labels, value) in values { keyed[Labels(labels)] = value }
        series.withLock { $0[family.index] = keyed }
    }

    /// Sets a histogram's series (a family of type "histogram"), read afresh from its source at each scrape.
    public func set(_ family: Family, _ labels: KeyValuePairs<String, String>, to histogram: Histogram) {
        let key = Labels(labels)
        histograms.withLock { $0[family.index, default: [:]][key] = histogram }
    }

    /// The upper bounds of `requestDuration`'s buckets, in microseconds: from 100 µs (a signature takes about 70 µs of
    /// CPU, a bare request about 15) through the milliseconds a ledger commit or a lookup at Apple adds, to 2.5 s.
    public static let requestDurationBounds = [
        100, 250, 500, 1_000, 2_500, 5_000, 10_000, 25_000, 50_000, 100_000, 250_000, 500_000, 1_000_000, 2_500_000,
    ]

    /// Adds one observation of `microseconds` to a histogram family's series with `labels` (bounds in
    /// microseconds).
    public func observe(
        _ family: Family, _ labels: KeyValuePairs<String, String>, microseconds: Int,
        bounds: [Int] = Metrics.requestDurationBounds
    ) {
        let key = Labels(labels)
        // The first bucket that holds it: every bucket from there on counts it (the counts are cumulative).
        var first = bounds.count
        while first > 0 && bounds[first - 1] >= microseconds { first -= 1 }
        histograms.withLock { histograms in
            // Changed in place (no copy of the counts): the dictionaries' `default:` subscripts modify their value.
            histograms[family.index, default: [:]][
                key,
                default: Histogram(
                    bounds: bounds.map { Metrics.seconds(microseconds: $0) },
                    cumulativeCounts: Array(repeating: 0, count: bounds.count), count: 0, sum: 0)
            ].record(from: first, seconds: Double(microseconds) / 1e6)
        }
    }

    /// The current value of one series (for tests and `/readyz`).
    public func value(_ family: Family, _ labels: KeyValuePairs<String, String>) -> Int {
        let key = Labels(labels)
        return series.withLock { $0[family.index][key] ?? 0 }
    }

    /// Every series of `family` whose labels include `filter`'s, with its labels by name.
    public func series(
        _ family: Family, where filter: [String: String] = [:]
    ) -> [(labels: [String: String], value: Int)] {
        series.withLock { $0[family.index] }.compactMap { key, value in
            var labels: [String: String] = [:]
            var index = 0
            while index + 1 < key.parts.count {
                labels[key.parts[index]] = key.parts[index + 1]
                index += 2
            }
            return filter.allSatisfy { labels[$0.key] == $0.value } ? (labels, value) : nil
        }
    }

    /// Prometheus text exposition format 0.0.4.
    public func render() -> String {
        let snapshot = series.withLock { $0 }
        let histogramSnapshot = histograms.withLock { $0 }
        var out = ""
        for family in Family.all {
            out += "# HELP \(family.name) \(family.help)\n# TYPE \(family.name) \(family.type)\n"
            if family.type == "histogram" {
                let rendered = (histogramSnapshot[family.index] ?? [:]).map { ($0.key.rendered, $0.value) }
                for (labels, histogram) in rendered.sorted(by: { $0.0 < $1.0 }) {
                    Metrics.render(histogram, of: family.name, labels: labels, into: &out)
                }
                continue
            }
            let rendered = snapshot[family.index].map { ($0.key.rendered, $0.value) }.sorted { $0.0 < $1.0 }
            for (labels, value) in rendered {
                // A series without labels is written bare, as Prometheus's own exporters write it.
                out += labels.isEmpty ? "\(family.name) \(value)\n" : "\(family.name){\(labels)} \(value)\n"
            }
        }
        return out
    }

    /// A histogram's `_bucket` series in the order of their bounds, `+Inf` last, then `_sum` and `_count`.
    private static func render(_ histogram: Histogram, of name: String, labels: String, into out: inout String) {
        let prefix = labels.isEmpty ? "" : labels + ","
        for (bound, count) in zip(histogram.bounds, histogram.cumulativeCounts) {
            out += "\(name)_bucket{\(prefix)le=\"\(bound)\"} \(count)\n"
        }
        out += "\(name)_bucket{\(prefix)le=\"+Inf\"} \(histogram.count)\n"
        let braces = labels.isEmpty ? "" : "{\(labels)}"
        // In plain decimal to the microsecond (Swift's own `description` turns small values into `1e-05`).
        let sum = seconds(microseconds: Int((max(histogram.sum, 0) * 1e6).rounded()))
        out += "\(name)_sum\(braces) \(sum)\n\(name)_count\(braces) \(histogram.count)\n"
    }

    /// Prometheus label escaping: backslash, quote and newline.
    static func escape(_ value: String) -> String {
        let plain = value.utf8.allSatisfy {
            $0 != UInt8(ascii: "\\") && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\n")
        }
        if plain { return value }
        var out = ""
        for character in value {
            switch character {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case "\n": out += "\\n"
            default: out.append(character)
            }
        }
        return out
    }
}

extension Metrics {
    /// Whole microseconds as seconds in decimal, without trailing zeros: 250 is "0.00025", 1,000,000 is "1".
    static func seconds(microseconds: Int) -> String {
        let whole = microseconds / 1_000_000
        var fraction = String(microseconds % 1_000_000)
        guard fraction != "0" else { return String(whole) }
        fraction = String(repeating: "0", count: 6 - fraction.count) + fraction
        while fraction.hasSuffix("0") { fraction.removeLast() }
        return "\(whole).\(fraction)"
    }
}
