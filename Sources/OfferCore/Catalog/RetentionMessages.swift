/// The App Store Connect message identifiers of one retention answer, by the customer's locale: the message Apple
/// shows is chosen by the request's `userLocale`.
///
/// The choice, in order: the locale written exactly (`en-US`; case and `-`/`_` do not matter); else the language
/// alone (`fr` for `fr-CA`: a key of the language with no region answers every region of it); else `*`, the
/// fallback; else none, and the entry does not apply. A key `en-US` never answers `en-GB`: a message approved for one
/// region is not guessed to suit another.
public struct RetentionMessages: Sendable, Equatable {
    /// Message identifiers (lowercase UUIDs) by normalized locale (lowercase, `-`), `*` left out.
    public let byLocale: [String: String]
    /// The identifier of `*`, for any other locale.
    public let fallback: String?

    /// How a message was chosen.
    public enum Match: String, Sendable, Equatable {
        /// The locale as written.
        case exact
        /// Its language alone.
        case language
        /// `*`.
        case fallback
    }

    /// The message chosen for a locale.
    public struct Choice: Sendable, Equatable {
        /// The message identifier, a lowercase UUID.
        public let messageIdentifier: String
        public let match: Match
        /// The configuration's key that matched (normalized), or `*`.
        public let locale: String

        public init(messageIdentifier: String, match: Match, locale: String) {
            self.messageIdentifier = messageIdentifier
            self.match = match
            self.locale = locale
        }
    }

    /// `messages`: identifiers by locale as the configuration writes them (`*` for the fallback).
    public init(_ messages: [String: String]) {
        var byLocale: [String: String] = [:]
        var fallback: String?
        for (locale, identifier) in messages {
            if locale == "*" {
                fallback = identifier.lowercased()
            } else {
                byLocale[Self.normalized(locale)] = identifier.lowercased()
            }
        }
        self.byLocale = byLocale
        self.fallback = fallback
    }

    /// The message for `userLocale`, or `nil` when none fits.
    public func choose(for userLocale: String) -> Choice? {
        let locale = Self.normalized(userLocale)
        if let exact = byLocale[locale] { return Choice(messageIdentifier: exact, match: .exact, locale: locale) }
        if let dash = locale.firstIndex(of: "-") {
            let language = String(locale[..<dash])
            if let found = byLocale[language] {
                return Choice(messageIdentifier: found, match: .language, locale: language)
            }
        }
        return fallback.map { Choice(messageIdentifier: $0, match: .fallback, locale: "*") }
    }

    /// A locale compared case-insensitively, `_` read as `-` (`en_US` is `en-us`).
    public static func normalized(_ locale: String) -> String {
        String(locale.lowercased().map { $0 == "_" ? "-" : $0 })
    }

    /// Whether `text` is a locale key the configuration accepts: `*`, or a language of 2 or 3 letters followed by
    /// subtags of 1 to 8 letters or digits, separated by `-` or `_` (`en`, `en-US`, `zh-Hant-TW`).
    public static func isLocaleKey(_ text: String) -> Bool {
        if text == "*" { return true }
        let parts = text.split(separator: "-", omittingEmptySubsequences: false).flatMap {
            $0.split(separator: "_", omittingEmptySubsequences: false)
        }
        guard let language = parts.first, (2...3).contains(language.count),
            language.utf8.allSatisfy({ Identifiers.isAlphanumeric($0) && $0 > 0x39 })
        else { return false }
        return parts.dropFirst().allSatisfy { subtag in
            (1...8).contains(subtag.count) && subtag.utf8.allSatisfy(Identifiers.isAlphanumeric)
        }
    }
}
