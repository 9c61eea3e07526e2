import OfferAPI
import OfferCore
import OfferStore

/// `POST /admin/v1/simulate`: a customer's signed data decided against every offer of an app, in the draft, the
/// live catalog or an earlier published version, at a chosen time, through the decision entry point every route
/// uses (`OfferDecision.decide`), with the ledger's counts read and nothing signed, reserved or recorded.
public struct Simulation: Sendable {
    /// Which catalog of the app the offers come from.
    public enum Against: Sendable, Equatable, CustomStringConvertible {
        /// The catalog served now.
        case live
        /// The app's draft (the live catalog when it has none).
        case draft
        /// A published version.
        case version(Int64)

        public var description: String {
            switch self {
            case .live: return "live"
            case .draft: return "draft"
            case .version(let number): return String(number)
            }
        }

        var json: JSONValue {
            if case .version(let number) = self { return .int(number) }
            return .string(description)
        }
    }

    public var bundleId: String
    public var signedData: SignedData
    public var against: Against
    /// Unix milliseconds.
    public var at: Int64

    public init(bundleId: String, signedData: SignedData, against: Against, at: Int64) {
        self.bundleId = bundleId
        self.signedData = signedData
        self.against = against
        self.at = at
    }

    /// Reads the request body: `{"bundleId", "against": "draft"|"live"|N (default "live"), "at": ms or ISO 8601
    /// (default now), and the customer's signed data as the app's request JSON ("request": {...}), as the
    /// request's members ("signedTransaction", "signedRenewalInfo", "signedAppTransaction"), or as one JWS
    /// ("signedData"), whose payload says what it is}`. Mistakes are 400 `invalid_request` naming the field.
    public static func parse(_ body: [UInt8], now: Int64) throws(OfferError) -> Simulation {
        let members =
            ["bundleId", "against", "at", "request", "signedData"] + SignedDataMember.allCases.map(\.rawValue)
        let value: JSONValue
        do {
            value = try JSONParser.parse(body)
        } catch {
            throw .invalidRequest("the body is not valid JSON: \(error.description)")
        }
        guard let object = value.objectValue else { throw .invalidRequest("the body must be a JSON object") }
        if let unknown = object.keys.sorted().first(where: { !members.contains($0) }) {
            throw .invalidRequest("unknown field \"\(unknown)\"", field: unknown)
        }
        guard let bundleId = object["bundleId"]?.stringValue, !bundleId.isEmpty else {
            throw .invalidRequest("\"bundleId\" is required: the app whose offers to simulate", field: "bundleId")
        }
        var against = Against.live
        switch object["against"] {
        case nil, .null: break
        case .string("live")?: against = .live
        case .string("draft")?: against = .draft
        case .int(let number)? where number > 0: against = .version(number)
        default:
            throw .invalidRequest("\"against\" must be \"live\", \"draft\" or a version number", field: "against")
        }
        var at = now
        switch object["at"] {
        case nil, .null: break
        case .int(let milliseconds)?: at = milliseconds
        case .string(let text)?:
            guard let parsed = ISO8601.parse(text) else {
                throw .invalidRequest("\"at\" must be Unix milliseconds or an ISO 8601 date-time", field: "at")
            }
            at = parsed
        default: throw .invalidRequest("\"at\" must be Unix milliseconds or an ISO 8601 date-time", field: "at")
        }
        var source = object
        if let request = object["request"], request != .null {
            guard let inner = request.objectValue else {
                throw .invalidRequest("\"request\" must be the app's request JSON object", field: "request")
            }
            source = inner
        }
        var data = SignedData()
        for member in SignedDataMember.allCases {
            guard let field = source[member.rawValue], field != .null else { continue }
            guard let token = field.stringValue, !token.isEmpty else {
                throw .invalidRequest("\"\(member.rawValue)\" must be a JWS", field: member.rawValue)
            }
            member.set(token, in: &data)
        }
        if let field = object["signedData"], field != .null {
            guard let token = field.stringValue, let member = SignedDataMember.classify(token) else {
                throw .invalidRequest(
                    "\"signedData\" must be a JWS of a transaction, renewal info or app transaction",
                    field: "signedData")
            }
            member.set(token, in: &data)
        }
        return Simulation(bundleId: bundleId, signedData: data, against: against, at: at)
    }

    /// The decision on every offer of the app, as JSON: `{"bundleId","against","version","at","customer","offers":
    /// [{"offerId","type","verdict","reasons","trace"}]}`.
    public func run(
        snapshot: Snapshot, store: (any AdminStore)?, ledger: (any Ledger)?
    ) throws(OfferError) -> JSONValue {
        guard let live = snapshot.catalog.apps[bundleId] else { throw .unknownApp(bundleId) }
        let (app, version) = try catalog(live, snapshot: snapshot, store: store)
        let service = EligibilityService(
            catalog: Catalog(apps: [app]), verifier: snapshot.eligibility.verifier,
            environments: snapshot.eligibility.environments, usage: ledger, states: ledger)
        let customer = try service.customer(service.verify(signedData, of: app, now: at), now: at)
        var offers: [JSONValue] = []
        for offer in app.offers {
            let decision: OfferDecision
            do {
                decision = try OfferDecision.decide(
                    offer, bundleId: bundleId, customer: customer, now: at, usage: ledger,
                    abuseGuard: offer.kind == .promotional ? app.definition.abuseGuard : nil)
            } catch {
                throw .storageUnavailable
            }
            var reasons: [JSONValue] = []
            if case .ineligible(let refused) = decision.outcome { reasons = refused.map { .string($0.code) } }
            offers.append(
                .object([
                    "offerId": .string(offer.id), "type": .string(offer.kind.rawValue),
                    "verdict": .string(decision.isEligible ? "eligible" : "not_eligible"), "reasons": .array(reasons),
                    "limitsChecked": .bool(decision.limitsChecked), "trace": Self.json(decision.trace),
                ]))
        }
        return .object([
            "bundleId": .string(bundleId), "against": against.json, "version": version.map(JSONValue.int) ?? .null,
            "at": .int(at), "customer": customer.map(Self.json) ?? .null, "offers": .array(offers),
        ])
    }

    /// The app with the offers `against` names, and the published version they are (`nil`: the draft, or the
    /// file's offers).
    private func catalog(
        _ live: Catalog.App, snapshot: Snapshot, store: (any AdminStore)?
    ) throws(OfferError) -> (Catalog.App, Int64?) {
        let document: [UInt8]
        let version: Int64?
        do {
            switch against {
            case .live: return (live, snapshot.catalogVersions[bundleId])
            case .draft:
                guard let draft = try store?.draft(bundleId: bundleId) else {
                    return (live, snapshot.catalogVersions[bundleId])
                }
                document = draft.document
                version = nil
            case .version(let number):
                guard let stored = try store?.catalogVersion(bundleId: bundleId, version: number) else {
                    throw OfferError.invalidRequest("\(bundleId) has no published version \(number)", field: "against")
                }
                document = stored.document
                version = number
            }
        } catch let error as OfferError {
            throw error
        } catch {
            throw .storageUnavailable
        }
        do {
            let parsed = try CatalogDocument.parse(document)
            return (
                Catalog.App(
                    definition: live.definition.replacing(parsed), keys: live.keys, signingKey: live.signingKey),
                version
            )
        } catch {
            throw .invalidRequest(
                "the \(against) catalog does not validate: \(error.errors.first?.description ?? "")", field: "against")
        }
    }

    /// A rule's trace as a tree: `{"rule","code","result":"pass"|"fail"|"unknown","observed","expected","path",
    /// "text","children"}`.
    static func json(_ trace: RuleTrace) -> JSONValue {
        let result = trace.passed ? "pass" : trace.isUnknown ? "unknown" : "fail"
        var text = trace.rule
        if !trace.observed.isEmpty || !trace.expected.isEmpty {
            text += ": \(trace.observed.isEmpty ? "-" : trace.observed), expected \(trace.expected)"
        }
        return .object([
            "rule": .string(trace.rule), "code": .string(trace.code), "result": .string(result),
            "observed": .string(trace.observed), "expected": .string(trace.expected), "path": .string(trace.path),
            "text": .string(text), "children": .array(trace.children.map(json)),
        ])
    }

    /// The customer's facts as the decision saw them, and where its transaction and renewal info came from.
    static func json(_ customer: VerifiedCustomer) -> JSONValue {
        let facts = customer.facts
        func optional(_ value: Int?) -> JSONValue { value.map { .int(Int64($0)) } ?? .null }
        func optional(_ value: String?) -> JSONValue { value.map(JSONValue.string) ?? .null }
        return .object([
            "customerKey": optional(facts.customerKey),
            "subscriptionStatus": optional(facts.subscriptionStatus?.rawValue),
            "daysSinceExpiry": optional(facts.daysSinceExpiry), "daysSubscribed": optional(facts.daysSubscribed),
            "signedDataAgeDays": optional(facts.signedDataAgeDays), "productId": optional(facts.productId),
            "subscriptionGroupId": optional(facts.subscriptionGroupId),
            "autoRenew": facts.autoRenew.map(JSONValue.bool) ?? .null, "storefront": optional(facts.storefront),
            "environment": optional(facts.environment),
            "eligibleWinBackOfferIds": .array(facts.eligibleWinBackOfferIds.map(JSONValue.string)),
            "transactionSource": optional(customer.transactionSource?.rawValue),
            "renewalInfoSource": optional(customer.renewalInfoSource?.rawValue),
        ])
    }
}

/// The request members that carry signed data.
enum SignedDataMember: String, CaseIterable {
    case signedTransaction, signedRenewalInfo, signedAppTransaction

    func set(_ token: String, in data: inout SignedData) {
        switch self {
        case .signedTransaction: data.transaction = token
        case .signedRenewalInfo: data.renewalInfo = token
        case .signedAppTransaction: data.appTransaction = token
        }
    }

    /// What a JWS is, told by its payload's members (not verified here: the decision verifies it): a transaction
    /// has `transactionId`, renewal info `autoRenewStatus`, an app transaction `originalApplicationVersion`.
    static func classify(_ token: String) -> SignedDataMember? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let bytes = Base64.decodeURL(parts[1]),
            let payload = try? JSONParser.parse(bytes), payload.objectValue != nil
        else { return nil }
        if payload["transactionId"] != nil { return .signedTransaction }
        if payload["autoRenewStatus"] != nil { return .signedRenewalInfo }
        if payload["originalApplicationVersion"] != nil || payload["appTransactionId"] != nil {
            return .signedAppTransaction
        }
        return nil
    }
}
