import OfferCore

extension Configuration {
    /// What does not stop the service but ops must see, at `now` (Unix ms): printed at start, on reload and by
    /// `config check`. `served`: the catalog served (`catalog: "storage"`: published versions in place of some
    /// apps' file offers), whose offers the warnings are about.
    public func warnings(at now: Int64, served: ServedCatalog? = nil) -> [String] {
        var out: [String] = []
        var apps = self.apps
        if let served {
            apps = apps.map { served.catalog.apps[$0.bundleId]?.definition ?? $0 }
            for app in self.apps {
                guard let version = served.versions[app.bundleId] else { continue }
                for offer in served.catalog.apps[app.bundleId]?.definition.offers ?? []
                where !Identifiers.isPathIdentifier(offer.id) {
                    out.append(
                        "\(app.bundleId) catalog version \(version): offer \(offer.id)'s ID has characters the admin "
                            + "routes cannot reach (\(Identifiers.pathIdentifierRule)); it is served, but a draft keeping "
                            + "it cannot be saved: publish it under a new ID")
                }
                out.append(
                    "\(app.path).offers: ignored: catalog is \"storage\" and \(app.bundleId) serves published version "
                        + "\(version); change its offers in the admin console or API, or with `offer-signer catalog "
                        + "import`")
            }
        }
        if settings.storage == .none {
            out.append(
                "$.storage: \"none\", so there is no ledger: signatures are not recorded, Idempotency-Key has no "
                    + "effect and signaturesPerCustomerPerDay is not enforced")
        }
        let trusted = Set(settings.trust.environments)
        for app in apps {
            if app.localTesting {
                out.append(
                    "\(app.path).localTesting: \(app.bundleId) accepts Xcode/LocalTesting signed data that anyone "
                        + "can make; never turn this on in production")
            }
            let accepted = app.localTesting ? trusted.union(AppStoreEnvironment.local) : trusted
            for offer in app.offers {
                if let until = offer.activeWindow.until, now >= until {
                    out.append(
                        "\(offer.path).activeUntil: offer \(offer.id) ended at \(ISO8601.format(until)); "
                            + "it is refused with offer_ended")
                } else if let from = offer.activeWindow.from, now < from {
                    out.append(
                        "\(offer.path).activeFrom: offer \(offer.id) begins at \(ISO8601.format(from)); "
                            + "until then it is refused with offer_not_yet_active")
                }
                for (path, environments) in offer.eligibility?.requiredEnvironments(path: "\(offer.path).eligibility")
                    ?? []
                where accepted.isDisjoint(with: environments.map(AppStoreEnvironment.init(rawValue:))) {
                    out.append(
                        "\(path): requires \(environments.joined(separator: " or ")) data, which this deployment "
                            + "does not accept (trust.environments: "
                            + settings.trust.environments.map(\.rawValue).joined(separator: ", ")
                            + (app.localTesting ? ", plus Xcode and LocalTesting" : "")
                            + "); offer \(offer.id) can never be given")
                }
                if offer.requiresVerifiedCustomer && settings.trust.rootCertificateFiles.isEmpty && !app.localTesting {
                    out.append(
                        "\(offer.path): offer \(offer.id) requires a verified customer but no root certificate is "
                            + "trusted; it can never be given")
                }
            }
        }
        // Anyone with a sandbox account can make Sandbox data: say what it gets, app by app.
        if !settings.trust.rootCertificateFiles.isEmpty && trusted.contains(.sandbox) {
            for app in apps where app.sandbox == .separate {
                out.append(
                    "\(app.path).sandbox: Sandbox data is accepted for \(app.bundleId) (any sandbox or TestFlight "
                        + "tester can make it): its customers are counted apart from Production and get JWS "
                        + "signatures only; set \"sandbox\": \"refuse\" if this deployment must not serve them")
            }
        }
        // Apple's verifier checks a Production notification's (and retention request's) appAppleId; without it they
        // are all refused.
        if !settings.trust.rootCertificateFiles.isEmpty && trusted.contains(.production) {
            for app in apps where app.appAppleId == nil {
                out.append(
                    "\(app.path).appAppleId: not set, so Production notifications and retention requests from Apple "
                        + "for \(app.bundleId) are refused (400 app_apple_id_not_configured); set it to the app's Apple "
                        + "ID (App Store Connect, App Information) before entering the notification or retention URL")
            }
        }
        // A refresh keeps what Apple says in the ledger, where the decision reads it.
        if settings.storage == .none {
            for app in apps where app.appStoreServerAPI?.refreshAfterSeconds != nil {
                out.append(
                    "\(app.path).appStoreServerAPI.refreshAfterSeconds: no ledger keeps what a lookup learns, so "
                        + "\(app.bundleId)'s decisions cannot use it; set \"storage\"")
            }
        }
        // Anyone may ask for a challenge, and each is a ledger write until it expires: a rate limit bounds them.
        if settings.rateLimit == nil {
            for app in apps where app.appAttest != nil {
                out.append(
                    "\(app.path).appAttest: without \"rateLimit\", any client may ask for challenges as fast as it can, "
                        + "each a ledger write kept until it expires; set \"rateLimit\" (or limit the rate in the proxy "
                        + "in front)")
            }
        }
        if !settings.trust.appAttestRootCertificateFiles.isEmpty {
            out.append(
                "$.trust.appAttestRootCertificates: replaces Apple's App Attestation root, so keys made by a test CA "
                    + "pass as genuine apps: for tests only, never in production")
        }
        if settings.trust.rootCertificateFiles.isEmpty {
            out.append("$.trust: no root certificates; only offers with requiresVerifiedCustomer false can be signed")
        }
        return out
    }
}
