import OfferStore

extension Metrics.Histogram {
    /// The ledger's commit times, in seconds.
    init(_ statistics: CommitStatistics) {
        var running = 0
        var cumulative: [Int] = []
        for count in statistics.durationBuckets.dropLast() {
            running += count
            cumulative.append(running)
        }
        let (seconds, attoseconds) = statistics.duration.components
        self.init(
            bounds: CommitStatistics.durationBounds.map { Metrics.seconds(microseconds: $0) },
            cumulativeCounts: cumulative, count: statistics.commits,
            sum: Double(seconds) + Double(attoseconds) / 1e18)
    }
}
