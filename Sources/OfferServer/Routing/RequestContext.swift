import OfferCore
import Synchronization

/// What a handler knows about the request besides its bytes: who asked, when, under which configuration,
/// and a logger that carries the request's ID. Handlers add what ops should see in the access log and metrics
/// (`record`) as they learn it: the app, the offer, the decision.
public final class RequestContext: Sendable {
    /// From the client's `X-Request-Id` when it is a plain token of at most 128 characters, else generated;
    /// echoed in the response.
    public let requestId: String
    /// The matched route's pattern (`/v1/eligibility`), or `other`.
    public let route: String
    /// The route's `{name}` parameters.
    public let parameters: [String: String]
    public let clientAddress: String?
    /// The request's time, Unix milliseconds: one value for the whole request.
    public let now: Int64
    /// The configuration in force when the request arrived; a reload meanwhile does not change it.
    public let snapshot: Snapshot
    public let log: Logger
    /// The service's clock, for what the request measures and waits for.
    let clock: any Clock
    /// The clock's `uptimeNanoseconds` at arrival: the request's duration and the deadlines counted from it.
    let started: UInt64
    private let facts = Mutex(Facts())
    private let identity = Mutex<AdminCaller?>(nil)

    /// What the request turned out to be about, for the access log and metrics. Identifiers and codes only.
    public struct Facts: Sendable {
        public var app: String?
        public var offer: String?
        /// `eligible`, `not_eligible`, `allowed` or `denied` (intro).
        public var decision: String?
        /// The first reason code, or the error code.
        public var reason: String?
        /// Every reason code of a refusal.
        public var reasons: [String] = []
        /// The failed check of refused signed data.
        public var rejectedSignedData: String?
        /// For an issued signature: its format (`jws`, `legacy`, `introductory`) and key ID.
        public var signature: (format: String, keyId: String)?
        /// For a notification from Apple: its type (`unknown`, `none`) and what became of it.
        public var notification: (type: String, result: String)?
        /// When the request's subscription was looked up at Apple before deciding (`RequestFacts`): `found`,
        /// `not_found`, or why nothing was learnt (`timeout`, `circuit_open`, ...).
        public var refresh: String?
        /// For a retention request from Apple: the answer (`message`, `alternate_product`, `promotional_offer`,
        /// `repeated`, `none`, `deadline`, `refused`, ...) and where the customer's facts came from (`state`,
        /// `lookup`, `none`).
        public var retention: (answer: String, facts: String)?
        /// On the admin listener: the name of the token asking (never the token itself).
        public var actor: String?
        /// The exposures recorded for the first time, by offer and arm.
        public var exposures: [(offer: String, arm: String)] = []
        /// The exposed customers' conversions recorded, by offer and arm.
        public var conversions: [(offer: String, arm: String)] = []
        /// For an app with App Attest: its mode (`report`, `enforce`) and what the request's assertion was (`valid`,
        /// `missing`, or the refusal's reason).
        public var appAttest: (mode: String, outcome: String)?
        /// For `POST /v1/app-attest/keys`: `attested`, or the refusal's reason.
        public var appAttestKey: String?
    }

    init(
        requestId: String, route: String, parameters: [String: String], clientAddress: String?, now: Int64,
        snapshot: Snapshot, log: Logger, clock: any Clock, started: UInt64
    ) {
        self.requestId = requestId
        self.route = route
        self.parameters = parameters
        self.clientAddress = clientAddress
        self.now = now
        self.snapshot = snapshot
        self.log = log
        self.clock = clock
        self.started = started
    }

    /// Who is asking, on the admin listener: set by its authentication before the handler runs; `nil` on the
    /// public listener and on admin routes that need no authentication.
    public var caller: AdminCaller? { identity.withLock { $0 } }

    /// Records who is asking (the admin listener's authentication), and names them in the access log.
    func authenticate(_ caller: AdminCaller) {
        identity.withLock { $0 = caller }
        record { $0.actor = caller.name }
    }

    /// Adds to what the access log and metrics will say about this request.
    public func record(_ change: (inout Facts) -> Void) { facts.withLock { change(&$0) } }

    public var recorded: Facts { facts.withLock { $0 } }

    /// Records the app and offer a request names, once the configuration knows them: metrics label only
    /// configured names, never whatever a client sent.
    public func recordSubject(bundleId: String, offerId: String?) {
        guard let app = snapshot.catalog.apps[bundleId] else { return }
        let offer = offerId.flatMap { app.offer($0) }?.id
        record {
            $0.app = app.bundleId
            $0.offer = offer
        }
    }

    /// Records a decision: `decision` (`eligible`, `not_eligible`, `allowed`, `denied`) and the reason codes.
    public func recordDecision(_ decision: String, offer: String, reasons: [IneligibilityReason]) {
        record {
            $0.offer = offer
            $0.decision = decision
            $0.reasons = reasons.map(\.code)
            $0.reason = reasons.first?.code
        }
    }
}
