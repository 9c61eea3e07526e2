import OfferAPI
import OfferCore
import OfferStore

/// What ops read to decide when an app's App Attest can go from `report` to `enforce`: the share of its requests
/// that carried a valid assertion, and why the others did not, as this process counted them since it started
/// (`offer_signer_app_attest_requests_total`, summed over replicas in Prometheus, is the fleet's); and its keys in
/// the ledger, shared by every replica.
enum AppAttestOverview {
    /// `{"mode","teamId","environment","since","requests":{"total","valid","missing","refused":{reason: n}},
    /// "attestedShare","keys":{"inForce","revoked"}}`; `mode` `off` and nothing else for an app without App Attest.
    static func app(_ app: Catalog.App, service: OfferService) throws(LedgerError) -> JSONValue {
        guard let settings = app.definition.appAttest else { return .object(["mode": .string("off")]) }
        var valid = 0
        var missing = 0
        var refused: [String: Int] = [:]
        for (labels, value) in service.metrics.series(.appAttestRequests, where: ["app": app.bundleId])
        where labels["mode"] == settings.mode.rawValue {
            switch labels["outcome"] {
            case "valid": valid += value
            case "missing": missing += value
            case let reason?: refused[reason, default: 0] += value
            case nil: break
            }
        }
        let total = valid + missing + refused.values.reduce(0, +)
        let keys = try service.ledger?.appAttestKeyCounts(bundleId: app.bundleId) ?? (inForce: 0, revoked: 0)
        let requests: [String: JSONValue] = [
            "total": .int(Int64(total)), "valid": .int(Int64(valid)), "missing": .int(Int64(missing)),
            "refused": .object(refused.mapValues { JSONValue.int(Int64($0)) }),
        ]
        let share: JSONValue = total == 0 ? .null : .double(Double(valid) / Double(total))
        let keyCounts: [String: JSONValue] = [
            "inForce": .int(Int64(keys.inForce)), "revoked": .int(Int64(keys.revoked)),
        ]
        var view: [String: JSONValue] = [:]
        view["mode"] = .string(settings.mode.rawValue)
        view["teamId"] = .string(settings.teamId)
        view["environment"] = .string(settings.environment.rawValue)
        view["since"] = .string(ISO8601.format(service.startedAt))
        view["requests"] = .object(requests)
        view["attestedShare"] = share
        view["keys"] = .object(keyCounts)
        return .object(view)
    }
}
