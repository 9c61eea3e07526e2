import OfferAPI
import OfferCore
import OfferStore

/// An offer's outcomes and an experiment's report, the one way the admin API (`GET .../outcomes`,
/// `GET .../experiments/{id}`) and `offer-signer report` make them: the ledger's counts (`ExposureLog.outcomes`) for
/// the offer, in one namespace, and for an experiment the statistics of the offer's current `experiment`. Counts
/// only: nothing names a customer.
public enum OutcomeReports {
    /// How a report is written: JSON (the default) or CSV.
    public enum Format: String, Sendable, CaseIterable {
        case json, csv
    }

    /// The offer's outcomes per period and arm; without a ledger (`storage: "none"`), none.
    public static func outcomes(
        _ app: Catalog.App, offerId: String, namespace: LedgerNamespace, ledger: (any ExposureLog)?
    ) throws(OfferError) -> OutcomeReport {
        let offer = try offer(app, offerId)
        return OutcomeReport(
            bundleId: app.bundleId, offerId: offer.id, namespace: namespace,
            arms: try read(app, offer, namespace, ledger))
    }

    /// The report of the offer's experiment `experimentId` at `now`: 404 `unknown_experiment` when the offer's
    /// experiment has another ID or it has none.
    public static func experiment(
        _ app: Catalog.App, offerId: String, experimentId: String, namespace: LedgerNamespace,
        ledger: (any ExposureLog)?, now: Int64
    ) throws(OfferError) -> ExperimentReport {
        let offer = try offer(app, offerId)
        guard let experiment = offer.experiment, experiment.id == experimentId else {
            let current = offer.experiment.map { "its experiment is \($0.id)" } ?? "it has no experiment"
            throw OfferError(
                .unknownExperiment, "offer \(offer.id) has no experiment \(experimentId): \(current)",
                field: "experimentId")
        }
        return ExperimentReport(
            bundleId: app.bundleId, offerId: offer.id, namespace: namespace, experiment: experiment,
            outcomes: try read(app, offer, namespace, ledger), now: now)
    }

    /// A query's `format`: `json` when absent; otherwise 400 naming it.
    public static func format(_ text: String?) throws(OfferError) -> Format {
        guard let text else { return .json }
        guard let format = Format(rawValue: text) else {
            throw OfferError.invalidRequest("query argument \"format\" must be \"json\" or \"csv\"", field: "format")
        }
        return format
    }

    /// A query's `environment`: Production when absent; otherwise `Production` or `Sandbox`, else 400 naming it.
    public static func namespace(_ text: String?) throws(OfferError) -> LedgerNamespace {
        switch text {
        case nil, "Production": return .production
        case "Sandbox": return .sandbox
        default:
            throw OfferError.invalidRequest(
                "query argument \"environment\" must be \"Production\" or \"Sandbox\"", field: "environment")
        }
    }

    private static func offer(_ app: Catalog.App, _ offerId: String) throws(OfferError) -> Offer {
        guard let offer = app.offer(offerId) else { throw OfferError.unknownOffer(offerId) }
        return offer
    }

    private static func read(
        _ app: Catalog.App, _ offer: Offer, _ namespace: LedgerNamespace, _ ledger: (any ExposureLog)?
    ) throws(OfferError) -> [ArmOutcome] {
        guard let ledger else { return [] }
        do {
            return try ledger.outcomes(bundleId: app.bundleId, namespace: namespace, offerId: offer.id)
        } catch {
            throw OfferError.storageUnavailable(error)
        }
    }
}
