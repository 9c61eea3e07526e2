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
                if let ledger, let statistics = ledger.commitStatistics {
                    let backend: KeyValuePairs<String, String> = ["backend": ledger.backendName]
                    metrics.set(.ledgerCommits, backend, to: statistics.commits)
                    metrics.set(.ledgerRecords, backend, to: statistics.records)
                    let (seconds, attoseconds) = statistics.duration.components
                    metrics.set(
                        .ledgerCommitMicroseconds, backend,
                        to: Int(seconds) * 1_000_000 + Int(attoseconds / 1_000_000_000_000))
                    metrics.set(.ledgerCommitSeconds, backend, to: Metrics.Histogram(statistics))
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
        if let ledger {
            do {
                try ledger.checkReadiness()
            } catch {
                // The reason goes to the log only: it may name the file or the database's address.
                context.log.error(
                    "not ready: the ledger cannot record",
                    [("kind", error.kind.rawValue), ("error", error.description)])
                throw HTTPError(code: .storageUnavailable, message: OfferError.storageUnavailable.message)
            }
        }
        let snapshot = context.snapshot
        let reply = ReadinessResponse(
            apps: catalog.apps.count, keys: catalog.keyCount, configuration: snapshot.configuration,
            catalog: ReadinessResponse.CatalogState(
                source: snapshot.catalogSource.rawValue, versions: snapshot.catalogVersions))
        return .ok(reply.jsonBytes)
    }
}
