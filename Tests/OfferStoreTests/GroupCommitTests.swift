import Dispatch
import OfferCore
import Synchronization
import Testing

@testable import OfferStore

/// The writer both file-backed ledgers share remembers the last fault of the store, which readiness starts from.
@Suite("Group commit remembers the store's last fault until a group commits")
struct GroupCommitTests {
    /// A writer whose groups are answered with what `answer` holds when they commit (the writer keeps the commit
    /// function of the record that started it, so the answer cannot travel with each record).
    final class Writer: Sendable {
        let writer = GroupCommit(label: "test")
        let answer = Mutex<Result<LedgerOutcome, LedgerError>>(committed)

        var lastFault: LedgerError? { writer.lastFault }

        /// Sends one record, its group answered with `result`, and waits for its completion.
        func group(answered result: Result<LedgerOutcome, LedgerError>) {
            answer.withLock { $0 = result }
            let done = DispatchSemaphore(value: 0)
            let pending = GroupCommit.Pending(signature: LedgerTests.signature("a"), admit: nil) { _ in done.signal() }
            writer.record(pending) {
                [self] group in
                Array(repeating: answer.withLock { $0 }, count: group.count)
            }
            done.wait()
        }
    }

    static let committed = Result<LedgerOutcome, LedgerError>.success(LedgerOutcome(recorded: true, usage: .none))
    static let refused = Result<LedgerOutcome, LedgerError>.success(LedgerOutcome(recorded: false, usage: .none))

    static func failed(_ kind: LedgerError.Kind) -> Result<LedgerOutcome, LedgerError> {
        .failure(LedgerError("failed as \(kind)", kind: kind))
    }

    @Test(
        "a group failed by a fault of the store is remembered until a group commits, refused records included",
        arguments: [LedgerError.Kind.unavailable, .timeout, .full, .corrupt], [committed, refused])
    func remembered(kind: LedgerError.Kind, recovery: Result<LedgerOutcome, LedgerError>) {
        let writer = Writer()
        #expect(writer.lastFault == nil)
        writer.group(answered: Self.failed(kind))
        #expect(writer.lastFault?.kind == kind)
        #expect(writer.lastFault?.description == "failed as \(kind)")
        writer.group(answered: recovery)
        #expect(writer.lastFault == nil)
    }

    @Test(
        "a record's own failure is no fault of the store and leaves what was remembered",
        arguments: [LedgerError.Kind.uniqueViolation, .serializationFailure, .other])
    func ownFailure(kind: LedgerError.Kind) {
        let writer = Writer()
        writer.group(answered: Self.failed(kind))
        #expect(writer.lastFault == nil)
        writer.group(answered: Self.failed(.full))
        writer.group(answered: Self.failed(kind))
        #expect(writer.lastFault?.kind == .full)
    }

    @Test("only the store's faults are store faults")
    func storeFaults() {
        let faults = [LedgerError.Kind.unavailable, .timeout, .full, .corrupt]
        for kind in faults { #expect(LedgerError("x", kind: kind).isStoreFault) }
        for kind in [LedgerError.Kind.uniqueViolation, .serializationFailure, .other] {
            #expect(!LedgerError("x", kind: kind).isStoreFault)
        }
    }
}
