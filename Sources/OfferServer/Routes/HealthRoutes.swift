import OfferAPI
import OfferCore
import OfferStore

/// `GET /livez`, `GET /readyz` (with the configuration in force) and `GET /metrics`: never rate limited.
struct HealthRoutes {
    let ledger: (any Ledger)?
    let metrics: Metrics

    var routes: [Route] {
        [
            .sync("GET", "/livez", group: .operations) { _, _ in .ok(HealthResponse().jsonBytes) },
            .sync("GET", "/readyz", group: .operations, readiness),
            .sync("GET", "/metrics", group: .operations) { [metrics, ledger] _, context in
                if let statistics = ledger?.commitStatistics {
                    let backend: KeyValuePairs<String, String> = ["backend": "sqlite"]
                    metrics.set(.ledgerCommits, backend, to: statistics.commits)
                    metrics.set(.ledgerRecords, backend, to: statistics.records)
                    let (seconds, attoseconds) = statistics.duration.components
                    metrics.set(
                        .ledgerCommitMicroseconds, backend,
                        to: Int(seconds) * 1_000_000 + Int(attoseconds / 1_000_000_000_000))
                    metrics.set(.ledgerLargestGroup, backend, to: statistics.largestGroup)
                }
                if let ledger { metrics.recordOffers(ledger, catalog: context.snapshot.catalog, now: context.now) }
                return HTTPResponse(
                    status: 200, body: Array(metrics.render().utf8),
                    contentType: "text/plain; version=0.0.4; charset=utf-8")
            },
        ]
    }

    func readiness(_ request: HTTPRequest, _ context: RequestContext) throws -> HTTPResponse {
        let catalog = context.snapshot.catalog
        guard !catalog.apps.isEmpty else { throw HTTPError.notReady("no app is configured") }
        if let ledger, !ledger.isHealthy() { throw HTTPError.notReady("the ledger does not answer") }
        let reply = ReadinessResponse(
            apps: catalog.apps.count, keys: catalog.keyCount, configuration: context.snapshot.configuration)
        return .ok(reply.jsonBytes)
    }
}
