import Synchronization

/// Counters exported at `GET /metrics` in Prometheus text format.
public final class Metrics: Sendable {
    private struct State {
        var requests: [String: Int] = [:]
        var signatures: [String: Int] = [:]
        var decisions: [String: Int] = [:]
        var verificationFailures: [String: Int] = [:]
    }

    private let state = Mutex(State())

    public init() {}

    func recordRequest(route: String, status: Int) {
        state.withLock { $0.requests["route=\"\(route)\",status=\"\(status)\"", default: 0] += 1 }
    }

    func recordSignature(kind: String) {
        state.withLock { $0.signatures["kind=\"\(kind)\"", default: 0] += 1 }
    }

    func recordDecision(kind: String, eligible: Bool) {
        state.withLock { $0.decisions["kind=\"\(kind)\",eligible=\"\(eligible)\"", default: 0] += 1 }
    }

    func recordVerificationFailure(reason: String) {
        state.withLock { $0.verificationFailures["reason=\"\(reason)\"", default: 0] += 1 }
    }

    /// Prometheus text exposition format 0.0.4.
    public func render() -> String {
        let snapshot = state.withLock { $0 }
        var out = ""
        func family(_ name: String, _ help: String, _ values: [String: Int]) {
            out += "# HELP \(name) \(help)\n# TYPE \(name) counter\n"
            for (labels, value) in values.sorted(by: { $0.key < $1.key }) { out += "\(name){\(labels)} \(value)\n" }
        }
        family("offer_signer_http_requests_total", "HTTP requests by route and status.", snapshot.requests)
        family("offer_signer_signatures_total", "Signatures issued by kind.", snapshot.signatures)
        family("offer_signer_decisions_total", "Eligibility decisions by offer kind and outcome.", snapshot.decisions)
        family(
            "offer_signer_signed_data_rejected_total", "App Store signed data refused, by failed check.",
            snapshot.verificationFailures)
        return out
    }
}
