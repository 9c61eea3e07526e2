import OfferAPI
import OfferCore

/// A step every request of a route group goes through, around its handler: `before` may answer instead of the
/// handler by throwing; `after` sees the final response (errors already mapped) and may add to it.
public protocol Middleware: Sendable {
    func before(_ request: HTTPRequest, _ context: RequestContext) throws
    func after(_ request: HTTPRequest, _ context: RequestContext, _ response: inout HTTPResponse)
}

extension Middleware {
    public func before(_ request: HTTPRequest, _ context: RequestContext) throws {}
    public func after(_ request: HTTPRequest, _ context: RequestContext, _ response: inout HTTPResponse) {}
}

/// A token bucket per client: 429 `rate_limited` with `Retry-After` past it. The client is the peer address,
/// or the last entry of a trusted proxy's header (the one the proxy itself appended).
public struct RateLimitMiddleware: Middleware {
    let limiter: RateLimiter
    let clientAddressHeader: String?

    public init(_ settings: Settings.RateLimit) {
        limiter = RateLimiter(policy: settings.policy)
        clientAddressHeader = settings.clientAddressHeader?.lowercased()
    }

    public func before(_ request: HTTPRequest, _ context: RequestContext) throws {
        var client = request.clientAddress ?? "unknown"
        if let header = clientAddressHeader, let value = request.headers[header],
            let last = value.split(separator: ",").last
        {
            client = String(last.filter { $0 != " " && $0 != "\t" })
        }
        if let wait = limiter.acquire(client: client, now: context.now) {
            throw HTTPError.rateLimited(retryAfter: wait)
        }
    }
}

/// Counts requests by route and status, and what handlers recorded: decisions, refusals by reason, limits
/// reached, refused signed data by its failed check (every refusal, wherever it was found), notifications from
/// Apple by type and result, and retention answers by answer and source of facts.
public struct MetricsMiddleware: Middleware {
    let metrics: Metrics

    public init(_ metrics: Metrics) { self.metrics = metrics }

    public func after(_ request: HTTPRequest, _ context: RequestContext, _ response: inout HTTPResponse) {
        metrics.increment(.requests, ["route": context.route, "status": String(response.status)])
        let elapsed = Int((context.clock.uptimeNanoseconds &- context.started) / 1000)
        metrics.observe(.requestDuration, ["route": context.route], microseconds: elapsed)
        let facts = context.recorded
        let app = facts.app ?? "none"
        if let reason = facts.rejectedSignedData {
            metrics.increment(.signedDataRejected, ["app": app, "reason": reason])
        }
        if let notification = facts.notification {
            metrics.increment(.notifications, ["app": app, "type": notification.type, "result": notification.result])
        }
        if let retention = facts.retention {
            metrics.increment(.retentionAnswers, ["app": app, "answer": retention.answer, "facts": retention.facts])
        }
        for exposure in facts.exposures {
            metrics.increment(.exposures, ["app": app, "offer": exposure.offer, "arm": exposure.arm])
        }
        for conversion in facts.conversions {
            metrics.increment(.conversions, ["app": app, "offer": conversion.offer, "arm": conversion.arm])
        }
        if let attest = facts.appAttest {
            metrics.increment(.appAttestRequests, ["app": app, "mode": attest.mode, "outcome": attest.outcome])
        }
        if let outcome = facts.appAttestKey { metrics.increment(.appAttestKeys, ["app": app, "outcome": outcome]) }
        guard let offer = facts.offer, let decision = facts.decision else { return }
        if let signature = facts.signature {
            metrics.increment(
                .signatures, ["app": app, "offer": offer, "format": signature.format, "key_id": signature.keyId])
        }
        metrics.increment(.decisions, ["app": app, "offer": offer, "decision": decision])
        for reason in facts.reasons {
            metrics.increment(.notEligible, ["app": app, "offer": offer, "reason": reason])
            if let limit = LimitReason(rawValue: reason) {
                metrics.increment(.limitsReached, ["app": app, "offer": offer, "limit": limit.label])
            }
        }
    }

    /// The reason codes of a reached limit.
    enum LimitReason: String {
        case perCustomer = "per_customer_limit_reached"
        case total = "total_limit_reached"

        var label: String { self == .perCustomer ? "perCustomer" : "total" }
    }
}

/// One line per request at info level: request ID, method, route, status, duration, and what the handler
/// recorded (app, offer, decision, reason code, a lookup at Apple before deciding). Never a JWS, a token, a key or signed data: only identifiers
/// and codes reach it.
public struct AccessLogMiddleware: Middleware {
    public init() {}

    public func after(_ request: HTTPRequest, _ context: RequestContext, _ response: inout HTTPResponse) {
        guard context.log.isEnabled(.info) else { return }
        let elapsed = Double(context.clock.uptimeNanoseconds &- context.started) / 1_000_000
        var fields: [(String, String)] = [
            ("method", request.method), ("route", context.route), ("status", String(response.status)),
            ("duration_ms", String(Double(Int(elapsed * 1000)) / 1000)),
        ]
        let facts = context.recorded
        if let app = facts.app { fields.append(("app", app)) }
        if let offer = facts.offer { fields.append(("offer", offer)) }
        if let decision = facts.decision { fields.append(("decision", decision)) }
        if let reason = facts.reason { fields.append(("reason", reason)) }
        if let refresh = facts.refresh { fields.append(("refresh", refresh)) }
        if let attest = facts.appAttest { fields.append(("app_attest", attest.outcome)) }
        if let outcome = facts.appAttestKey { fields.append(("app_attest_key", outcome)) }
        if let actor = facts.actor { fields.append(("actor", actor)) }
        context.log.info("request", fields)
    }
}
