import OfferAPI
import OfferCore
import OfferStore

/// What ops read about the service (viewer): the apps, their key IDs, their offers with state and figures, an
/// offer's stats per day, its outcomes and its experiment's report (`OutcomeReports`), App Attest's share of attested
/// requests (`AppAttestOverview`), the recent decisions; and the simulation of a customer (editor), which signs and
/// records nothing. The views are `CatalogOverview`, `RecentDecisions` and `Simulation`.
struct ViewRoutes: AdminRouteSet {
    func routes(_ admin: AdminService) -> [Route] {
        let store = admin.store
        let service = admin.service
        return [
            .admin("GET", "/admin/v1/apps", role: .viewer) { _, context in
                let view = try StoreCall.read { () throws(LedgerError) in
                    try CatalogOverview.apps(context.snapshot, store: store)
                }
                return AdminJSON.response(view)
            },
            .admin("GET", "/admin/v1/apps/{bundleId}/keys", role: .viewer) { _, context in
                AdminJSON.response(CatalogOverview.keys(try Self.app(context)))
            },
            .admin("GET", "/admin/v1/apps/{bundleId}/offers", role: .viewer) { _, context in
                let app = try Self.app(context)
                let view = try StoreCall.read { () throws(LedgerError) in
                    try CatalogOverview.offers(
                        app, snapshot: context.snapshot, store: store, ledger: service.ledger, now: context.now)
                }
                return AdminJSON.response(view)
            },
            .admin("GET", "/admin/v1/apps/{bundleId}/offers/{offerId}/stats", role: .viewer) { request, context in
                let app = try Self.app(context)
                let offerId = context.parameters["offerId"] ?? ""
                let range = Int64(CatalogOverview.dayRange.lowerBound)...Int64(CatalogOverview.dayRange.upperBound)
                let days = Int(try AdminJSON.integer(request, "days", in: range) ?? Int64(CatalogOverview.defaultDays))
                let view = try StoreCall.read { () throws(LedgerError) in
                    try CatalogOverview.stats(
                        app, offerId: offerId, days: days, ledger: service.ledger, now: context.now)
                }
                guard let view else { throw OfferError.unknownOffer(offerId) }
                return AdminJSON.response(view)
            },
            .admin("GET", "/admin/v1/apps/{bundleId}/offers/{offerId}/outcomes", role: .viewer) { request, context in
                let format = try OutcomeReports.format(request.query["format"])
                let report = try OutcomeReports.outcomes(
                    try Self.app(context), offerId: context.parameters["offerId"] ?? "",
                    namespace: try OutcomeReports.namespace(request.query["environment"]), ledger: service.ledger)
                return Self.report(
                    format, json: report.json, csv: report.csv, name: "\(report.offerId)-outcomes")
            },
            .admin("GET", "/admin/v1/apps/{bundleId}/offers/{offerId}/experiments/{experimentId}", role: .viewer) {
                request, context in
                let format = try OutcomeReports.format(request.query["format"])
                let report = try OutcomeReports.experiment(
                    try Self.app(context), offerId: context.parameters["offerId"] ?? "",
                    experimentId: context.parameters["experimentId"] ?? "",
                    namespace: try OutcomeReports.namespace(request.query["environment"]), ledger: service.ledger,
                    now: context.now)
                return Self.report(
                    format, json: report.json, csv: report.csv,
                    name: "\(report.offerId)-\(report.experiment.id)")
            },
            .admin("GET", "/admin/v1/apps/{bundleId}/app-attest", role: .viewer) { _, context in
                let app = try Self.app(context)
                let view = try StoreCall.read { () throws(LedgerError) in
                    try AppAttestOverview.app(app, service: service)
                }
                return AdminJSON.response(view)
            },
            .admin("GET", "/admin/v1/decisions", role: .viewer) { request, context in
                AdminJSON.response(service.recentDecisions.json(app: request.query["app"]))
            },
            .admin("POST", "/admin/v1/simulate", role: .editor) { request, context in
                let simulation = try Simulation.parse(request.body, now: context.now)
                return AdminJSON.response(
                    try simulation.run(snapshot: context.snapshot, store: store, ledger: service.ledger))
            },
        ]
    }

    /// A report as JSON, or as a CSV file named `name`.csv.
    static func report(_ format: OutcomeReports.Format, json: JSONValue, csv: String, name: String) -> HTTPResponse {
        switch format {
        case .json: return AdminJSON.response(json)
        case .csv:
            return HTTPResponse(
                status: 200, body: Array(csv.utf8), contentType: "text/csv; charset=utf-8",
                headers: [HTTPHeader("Content-Disposition", "attachment; filename=\"\(name).csv\"")])
        }
    }

    /// The app served under the route's `{bundleId}`.
    static func app(_ context: RequestContext) throws(OfferError) -> Catalog.App {
        let bundleId = context.parameters["bundleId"] ?? ""
        guard let app = context.snapshot.catalog.apps[bundleId] else { throw .unknownApp(bundleId) }
        return app
    }
}
