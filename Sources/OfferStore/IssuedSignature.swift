import OfferCore

/// One issued signature the ledger keeps: who got which offer for which product, when, under which nonce and
/// key, in which request. Every signature the service issues is recorded, limited offer or not.
public struct IssuedSignature: Sendable, Equatable {
    public var bundleId: String
    /// Production or Sandbox counts (an app's `sandbox: separate`).
    public var namespace: LedgerNamespace
    public var offerId: String
    /// The product the signature is for.
    public var productId: String
    /// The verified customer key; `nil` for an unidentified request.
    public var customerKey: String?
    public var nonce: String
    public var keyId: String
    /// `jws` or `legacy` (promotional offers), `introductory` (an introductory offer decision).
    public var format: String
    /// Unix milliseconds.
    public var issuedAt: Int64
    /// The request's `X-Request-Id`, to find its access log line.
    public var requestId: String?
    /// The client's `Idempotency-Key` and what it stands for, when the request had one.
    public var idempotency: Idempotency?
    /// How long the signature holds a place against its offer's limits, in milliseconds: the offer's
    /// `signatureTTL`, used to count when it is recorded (not stored: counts always use the offer's current one).
    public var signatureTTL: Int64
    /// The offer's `limits.total`, when it has one: the ledger counts the offer's places against it (on SQLite under
    /// its one writer; on PostgreSQL through budget leases, `SQLLedger+Leases`). Without it the offer has no total and
    /// its places are not counted: `OfferUsage`'s offer counts are 0 for the admission. Not stored.
    public var budget: Int?
    /// The customer's exposure to the offer the signature is for, recorded with it (its signature issued, when it is
    /// admitted); `nil` when the decision exposed no one.
    public var exposure: Exposure?

    /// A request's `Idempotency-Key`: a repeat of the same request (same `requestHash`) under the same key, from
    /// `validFrom` on, gets `answer` again instead of a new signature.
    public struct Idempotency: Sendable, Equatable {
        /// How long a key names its request, in milliseconds: Apple's lifetime of a signature (24 hours). After it,
        /// the key is free again and the purge clears the stored answer.
        public static let window: Int64 = 86_400_000

        public var key: String
        /// SHA-256 (hex) of the route and the request body as the service reads it.
        public var requestHash: String
        /// The response body the signature was answered with.
        public var answer: [UInt8]
        /// Unix milliseconds: a record under the same key issued before this no longer counts (the window ended).
        public var validFrom: Int64

        public init(key: String, requestHash: String, answer: [UInt8], validFrom: Int64) {
            self.key = key
            self.requestHash = requestHash
            self.answer = answer
            self.validFrom = validFrom
        }
    }

    public init(
        bundleId: String, offerId: String, productId: String, customerKey: String?, nonce: String, keyId: String,
        format: String, issuedAt: Int64, requestId: String? = nil, idempotency: Idempotency? = nil,
        namespace: LedgerNamespace = .production, signatureTTL: Int64 = OfferLimits.defaultSignatureTTL,
        budget: Int? = nil, exposure: Exposure? = nil
    ) {
        self.budget = budget
        self.exposure = exposure
        self.idempotency = idempotency
        self.namespace = namespace
        self.signatureTTL = signatureTTL
        self.bundleId = bundleId
        self.offerId = offerId
        self.productId = productId
        self.requestId = requestId
        self.customerKey = customerKey
        self.nonce = nonce
        self.keyId = keyId
        self.format = format
        self.issuedAt = issuedAt
    }

    /// The counts this signature is admitted on: its offer and customer, at the moment it is issued.
    public var usageKey: UsageKey {
        UsageKey(
            bundleId: bundleId, offerId: offerId, customerKey: customerKey, namespace: namespace, now: issuedAt,
            signatureTTL: signatureTTL)
    }

    /// Its app's key in storage (`LedgerNamespace.storedApp`).
    public var storedApp: String { namespace.storedApp(bundleId) }

    /// Whether it is a promotional offer signature (JWS or legacy), which the abuse guard counts; not an
    /// introductory offer decision.
    public var isPromotional: Bool { format != Self.introductoryFormat }

    /// The `format` of an introductory offer eligibility signature.
    public static let introductoryFormat = "introductory"
}
