import OfferAPI

extension RetentionEntry {
    /// The answers an entry may give, as the configuration names them.
    static let answerNames = ["message", "alternateProduct", "promotionalOffer"]

    /// Parses an app's `retention` list at `path` (like `$.apps[0].retention`); `offers` are the app's, which a
    /// `promotionalOffer` entry must name. Mistakes go to `errors`; entries that cannot be built are left out.
    public static func parseAll(
        _ elements: [JSONValue], path: String, offers: [Offer], errors: inout [ConfigError]
    ) -> [RetentionEntry] {
        elements.enumerated().compactMap { index, element in
            parse(element, path: "\(path)[\(index)]", offers: offers, errors: &errors)
        }
    }

    /// Parses one entry at `path`; `nil` (with errors) when it cannot be built.
    public static func parse(
        _ value: JSONValue, path: String, offers: [Offer], errors: inout [ConfigError]
    ) -> RetentionEntry? {
        var reader = ConfigReader(value, path: path, errors: &errors)
        let productIds = reader.strings("productIds")
        for (index, product) in (productIds ?? []).enumerated() where !Identifiers.isPlainIdentifier(product) {
            errors.append(ConfigError(path: "\(path).productIds[\(index)]", Identifiers.plainIdentifierRule))
        }
        var rule: EligibilityRule?
        if let ruleValue = reader.value("when") {
            do {
                rule = try EligibilityRule.parse(ruleValue, path: "\(path).when")
            } catch {
                errors.append(error)
            }
        }
        let given = answerNames.compactMap { name in reader.value(name).map { (name, $0) } }
        reader.finish(into: &errors)
        guard given.count == 1 else {
            let names = answerNames.map { "\"\($0)\"" }.joined(separator: ", ")
            errors.append(
                ConfigError(
                    path: path,
                    given.isEmpty
                        ? "needs one answer: \(names)"
                        : "gives \(given.map { "\"\($0.0)\"" }.joined(separator: " and ")); an entry gives exactly one "
                            + "answer of \(names)"))
            return nil
        }
        let (name, answerValue) = given[0]
        guard let answer = parseAnswer(name, answerValue, path: "\(path).\(name)", offers: offers, errors: &errors)
        else { return nil }
        if case .alternateProduct(let productId, _) = answer, productIds?.contains(productId) == true {
            errors.append(
                ConfigError(
                    path: "\(path).alternateProduct.productId",
                    "\(productId) is one of the entry's productIds: a customer cannot be offered a switch to the "
                        + "product they have"))
        }
        guard let productIds else { return nil }
        return RetentionEntry(productIds: productIds, when: rule, answer: answer, path: path)
    }

    private static func parseAnswer(
        _ name: String, _ value: JSONValue, path: String, offers: [Offer], errors: inout [ConfigError]
    ) -> Answer? {
        var reader = ConfigReader(value, path: path, errors: &errors)
        let answer: Answer?
        switch name {
        case "message":
            let messages = parseMessages(reader.value("messages"), path: "\(path).messages", errors: &errors)
            answer = messages.map(Answer.message)
        case "alternateProduct":
            let productId = reader.string("productId")
            if let productId, !Identifiers.isPlainIdentifier(productId) {
                errors.append(ConfigError(path: "\(path).productId", Identifiers.plainIdentifierRule))
            }
            let messages = parseMessages(reader.value("messages"), path: "\(path).messages", errors: &errors)
            answer = productId.flatMap { id in messages.map { .alternateProduct(productId: id, messages: $0) } }
        default:
            let offerId = reader.string("offerId")
            let productId = reader.string("productId")
            if let offerId, let productId {
                checkOffer(offerId, productId: productId, path: path, offers: offers, errors: &errors)
            }
            let messages = parseMessages(reader.value("messages"), path: "\(path).messages", errors: &errors)
            answer = offerId.flatMap { offer in
                productId.flatMap { product in
                    messages.map { .promotionalOffer(offerId: offer, productId: product, messages: $0) }
                }
            }
        }
        reader.finish(into: &errors)
        return answer
    }

    /// The offer must be one of the app's promotional offers, covering `productId`: the offer a retention answer
    /// signs is decided by that offer's rules and limits.
    private static func checkOffer(
        _ offerId: String, productId: String, path: String, offers: [Offer], errors: inout [ConfigError]
    ) {
        guard let offer = offers.first(where: { $0.id == offerId }) else {
            var message = "no offer \(offerId) in this app's offers"
            if let near = NameSuggestion.closest(to: offerId, among: offers.map(\.id)) {
                message += "; did you mean \"\(near)\"?"
            }
            errors.append(ConfigError(path: "\(path).offerId", message))
            return
        }
        guard offer.kind == .promotional else {
            errors.append(
                ConfigError(
                    path: "\(path).offerId",
                    "offer \(offerId) is of type \(offer.kind.rawValue); a retention answer signs promotional offers "
                        + "only"))
            return
        }
        if !offer.productIds.contains(productId) {
            errors.append(
                ConfigError(
                    path: "\(path).productId",
                    "offer \(offerId) does not cover product \(productId) (its productIds: "
                        + offer.productIds.joined(separator: ", ") + ")"))
        }
    }

    /// `{"<locale>": "<message UUID>", "*": "<message UUID>"}`: at least one entry.
    private static func parseMessages(
        _ value: JSONValue?, path: String, errors: inout [ConfigError]
    ) -> RetentionMessages? {
        guard let value else {
            errors.append(ConfigError(path: path, "is required"))
            return nil
        }
        guard case .object(let members) = value else {
            errors.append(
                ConfigError(path: path, "expected an object of locale to message UUID, found \(value.typeDescription)"))
            return nil
        }
        guard !members.isEmpty else {
            errors.append(
                ConfigError(path: path, "must not be empty: map at least one locale (or \"*\" for any) to a message"))
            return nil
        }
        var messages: [String: String] = [:]
        var seen: [String: String] = [:]
        var valid = true
        for (locale, identifier) in members.sorted(by: { $0.key < $1.key }) {
            let memberPath = "\(path).\(locale)"
            guard RetentionMessages.isLocaleKey(locale) else {
                errors.append(
                    ConfigError(
                        path: memberPath,
                        "expected a locale such as \"en-US\" or \"fr\", or \"*\" for any other locale"))
                valid = false
                continue
            }
            guard case .string(let text) = identifier, UUIDText.isValid(text) else {
                errors.append(
                    ConfigError(
                        path: memberPath, "expected the message's UUID (its messageIdentifier in App Store Connect)"))
                valid = false
                continue
            }
            let normalized = locale == "*" ? "*" : RetentionMessages.normalized(locale)
            if let earlier = seen[normalized] {
                errors.append(ConfigError(path: memberPath, "the same locale as \"\(earlier)\""))
                valid = false
                continue
            }
            seen[normalized] = locale
            messages[locale] = text
        }
        return valid ? RetentionMessages(messages) : nil
    }
}
