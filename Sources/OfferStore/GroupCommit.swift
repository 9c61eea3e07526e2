import Dispatch
import OfferCore
import Synchronization

/// The writer both file-backed ledgers share: records wait in a queue; one writer (a serial dispatch queue)
/// takes every record waiting, up to `largestGroup`, hands them to `commit` as one group (one transaction, one
/// flush), and calls each completion with its result only after `commit` returned. While a group commits, new
/// records gather for the next one, so the busier the service, the more signatures one flush serves.
final class GroupCommit: Sendable {
    /// One record waiting for the writer: a signature (with the exposure it may carry), or exposures alone.
    struct Pending: Sendable {
        let signature: IssuedSignature?
        let exposures: [Exposure]
        let admit: (@Sendable (OfferUsage) -> Bool)?
        let completion: @Sendable (Result<LedgerOutcome, LedgerError>) -> Void

        init(
            signature: IssuedSignature?, exposures: [Exposure] = [], admit: (@Sendable (OfferUsage) -> Bool)?,
            completion: @escaping @Sendable (Result<LedgerOutcome, LedgerError>) -> Void
        ) {
            self.signature = signature
            self.exposures = signature?.exposure.map { [$0] } ?? exposures
            self.admit = admit
            self.completion = completion
        }
    }

    /// What committing a group in one transaction came to. Backends commit without a savepoint per record (they
    /// cost more than the records); should a record fail, the group's transaction is rolled back and each record is
    /// committed in a transaction of its own, so one failed record does not take the others with it.
    enum Attempt {
        /// Committed: one result per record, in order.
        case committed([Result<LedgerOutcome, LedgerError>])
        /// A record failed, and the transaction with it (rolled back: nothing of the group is recorded).
        case recordFailed(LedgerError)
    }

    private struct Waiting {
        var records: [Pending] = []
        var writing = false
    }

    private let waiting = Mutex(Waiting())
    private let writer: DispatchQueue
    private let statistics = Mutex(CommitStatistics())
    private let fault = Mutex<LedgerError?>(nil)
    private let largestGroup: Int

    init(label: String, largestGroup: Int = .max) {
        writer = DispatchQueue(label: label)
        self.largestGroup = largestGroup
    }

    /// How many transactions committed records, how many records they carried, and how long they took.
    var commitStatistics: CommitStatistics { statistics.withLock { $0 } }

    /// The fault of the store that failed the last group without a record committed, kept until a group commits
    /// again; `nil` when the last group committed or none has failed that way. Readiness starts from it: a ledger
    /// that cannot record is not ready, and no request would come to show that it can once it is taken out of
    /// service, so the ledger then probes.
    var lastFault: LedgerError? { fault.withLock { $0 } }

    /// Queues a record; the writer starts if it is not running. `commit` commits one group in one transaction
    /// and returns one result per record, in order (a failed transaction fails every record); the ledger passes
    /// the same function with every record.
    func record(
        _ pending: Pending, commit: @escaping @Sendable ([Pending]) -> [Result<LedgerOutcome, LedgerError>]
    ) {
        let startWriter = waiting.withLock { waiting -> Bool in
            waiting.records.append(pending)
            guard !waiting.writing else { return false }
            waiting.writing = true
            return true
        }
        if startWriter { writer.async { self.write(commit) } }
    }

    /// The writer: commits what is waiting, group by group, until nothing is.
    private func write(_ commit: @Sendable ([Pending]) -> [Result<LedgerOutcome, LedgerError>]) {
        while true {
            let group = waiting.withLock { waiting -> [Pending] in
                let group = Array(waiting.records.prefix(largestGroup))
                waiting.records.removeFirst(group.count)
                if group.isEmpty { waiting.writing = false }
                return group
            }
            if group.isEmpty { return }
            let started = ContinuousClock.now
            let results = commit(group)
            let elapsed = started.duration(to: .now)
            statistics.withLock { $0.add(group: group.count, took: elapsed) }
            remember(results)
            for (pending, result) in zip(group, results) { pending.completion(result) }
        }
    }

    /// Forgets the last fault when the group committed anything (a refusal by the limits is a commit too);
    /// otherwise keeps the group's fault of the store, if it had one.
    private func remember(_ results: [Result<LedgerOutcome, LedgerError>]) {
        var failure: LedgerError?
        for result in results {
            switch result {
            case .success:
                fault.withLock { $0 = nil }
                return
            case .failure(let error):
                if failure == nil, error.isStoreFault { failure = error }
            }
        }
        if let failure { fault.withLock { $0 = failure } }
    }
}
