import OfferAPI

extension Offer {
    /// Parses one offer at `path` (like `$.apps[0].offers[1]`); mistakes go to `errors`, `nil` when it cannot be built.
    /// `storedIds`: the ID is held to the rule of the release that stored it (`isPlainIdentifier`), not today's
    /// `isPathIdentifier`, for a version published before that rule: it is still served, with a warning at start.
    public static func parse(
        _ value: JSONValue, path: String, storedIds: Bool = false, errors: inout [ConfigError]
    ) -> Offer? {
        var reader = ConfigReader(value, path: path, errors: &errors)
        let id = reader.string("id")
        if let id, storedIds ? !Identifiers.isPlainIdentifier(id) : !Identifiers.isPathIdentifier(id) {
            errors.append(
                ConfigError(
                    path: "\(path).id", storedIds ? Identifiers.plainIdentifierRule : Identifiers.pathIdentifierRule))
        }
        var type: Offer.Kind?
        if let typeName = reader.string("type") {
            type = Offer.Kind(rawValue: typeName)
            if type == nil {
                var message = "unknown offer type \"\(typeName)\" (allowed: promotional, winBack, introductoryOffer)"
                if let near = NameSuggestion.closest(to: typeName, among: Offer.Kind.allCases.map(\.rawValue)) {
                    message += "; did you mean \"\(near)\"?"
                }
                errors.append(ConfigError(path: "\(path).type", message))
            }
        }
        let productIds = reader.strings("productIds")
        for (index, product) in (productIds ?? []).enumerated() where !Identifiers.isPlainIdentifier(product) {
            errors.append(ConfigError(path: "\(path).productIds[\(index)]", Identifiers.plainIdentifierRule))
        }
        var rule: EligibilityRule?
        if let ruleValue = reader.value("eligibility") {
            do {
                rule = try EligibilityRule.parse(ruleValue, path: "\(path).eligibility")
            } catch {
                errors.append(error)
            }
        }
        var window = ActiveWindow.always
        let from = reader.value("activeFrom")
        let until = reader.value("activeUntil")
        do {
            window = try ActiveWindow.parse(from: from, until: until, path: path)
        } catch {
            errors.append(error)
        }
        let requiresVerified = reader.bool("requiresVerifiedCustomer") ?? true
        let group = reader.string("subscriptionGroupId", required: false)
        if let group, !Identifiers.isPlainIdentifier(group) {
            errors.append(ConfigError(path: "\(path).subscriptionGroupId", Identifiers.plainIdentifierRule))
        }
        var limits: OfferLimits?
        if let limitsValue = reader.value("limits") {
            limits = parseLimits(limitsValue, path: "\(path).limits", errors: &errors)
            if type != nil && type != .promotional {
                errors.append(
                    ConfigError(path: "\(path).limits", "only promotional offers are signed, so only they take limits"))
            }
            if limits?.perCustomer != nil && !requiresVerified {
                errors.append(
                    ConfigError(
                        path: "\(path).limits.perCustomer",
                        "needs a verified customer to count by; remove it or set requiresVerifiedCustomer to true"))
            }
        }
        var experiment: Experiment?
        if let experimentValue = reader.value("experiment") {
            experiment = Experiment.parse(experimentValue, path: "\(path).experiment", errors: &errors)
            if type == .introductoryOffer {
                errors.append(
                    ConfigError(
                        path: "\(path).experiment",
                        "only promotional and winBack offers take an experiment (an introductory offer's answer is "
                            + "signed either way)"))
            }
            if !requiresVerified {
                errors.append(
                    ConfigError(
                        path: "\(path).experiment",
                        "needs verified customers to split and follow; remove it or set requiresVerifiedCustomer to "
                            + "true"))
            }
        }
        reader.finish(into: &errors)
        guard let id, let type, let productIds else { return nil }
        return Offer(
            id: id, kind: type, productIds: productIds, eligibility: rule, activeWindow: window,
            requiresVerifiedCustomer: requiresVerified, subscriptionGroupId: group, limits: limits,
            experiment: experiment, path: path)
    }

    private static func parseLimits(_ value: JSONValue, path: String, errors: inout [ConfigError]) -> OfferLimits? {
        var reader = ConfigReader(value, path: path, errors: &errors)
        let perCustomer = reader.int("perCustomer", range: 1...1_000_000)
        let total = reader.int("total", range: 1...1_000_000_000)
        // Apple refuses a signature older than a day, so a place is never held longer.
        let ttl = reader.int("signatureTTLSeconds", range: 60...86_400)
        reader.finish(into: &errors)
        if perCustomer == nil && total == nil {
            // Said only when neither is written: a wrong value has its own error already.
            if value["perCustomer"] == nil && value["total"] == nil {
                errors.append(ConfigError(path: path, "set perCustomer, total or both"))
            }
            return nil
        }
        return OfferLimits(
            perCustomer: perCustomer, total: total,
            signatureTTL: ttl.map { Int64($0) * 1000 } ?? OfferLimits.defaultSignatureTTL)
    }
}
