import OfferAppStore

extension Metrics {
    /// Counts what an `AppStoreServerAPI` reports: pass it as the client's `events`.
    public func record(_ event: AppStoreServerAPIEvent) {
        switch event {
        case .call(let bundleId, let environment, let endpoint, let result, let milliseconds):
            increment(
                .appleAPICalls,
                [
                    "app": bundleId, "environment": environment.rawValue, "endpoint": endpoint.rawValue,
                    "result": result,
                ])
            add(
                .appleAPICallMilliseconds,
                ["app": bundleId, "environment": environment.rawValue, "endpoint": endpoint.rawValue], milliseconds)
        case .lookup(let bundleId, let endpoint, let result, let milliseconds):
            increment(.appleAPILookups, ["app": bundleId, "endpoint": endpoint.rawValue, "result": result])
            add(.appleAPILookupMilliseconds, ["app": bundleId, "endpoint": endpoint.rawValue], milliseconds)
        case .cache(let bundleId, let hit):
            increment(.appleAPICache, ["app": bundleId, "result": hit ? "hit" : "miss"])
        case .breaker(let bundleId, let environment, let state):
            set(
                .appleAPIBreaker, ["app": bundleId, "environment": environment.rawValue], to: Self.breakerValue(state),
                replacing: false)
        }
    }

    /// The gauge's value of a breaker state: 0 closed, 1 half-open, 2 open.
    static func breakerValue(_ state: CircuitBreaker.State) -> Int {
        switch state {
        case .closed: return 0
        case .halfOpen: return 1
        case .open: return 2
        }
    }
}
