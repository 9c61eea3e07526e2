import OfferAPI

/// An app's `appAttest`: whether signature requests must come from a genuine copy of the app on an Apple device,
/// proven with App Attest, and how. `Catalog.App` carries it; the public routes enforce it.
///
/// ```json
/// "appAttest": {"mode": "report", "teamId": "1234567890", "environment": "production"}
/// ```
public struct AppAttestSettings: Sendable, Equatable {
    public enum Mode: String, Sendable, CaseIterable {
        /// Nothing is checked (the default).
        case off
        /// Checked and counted, but answered as without App Attest: to see the share of attested requests before
        /// enforcing.
        case report
        /// A request without a valid assertion is refused.
        case enforce
    }

    public var mode: Mode
    /// The Apple Developer team ID (10 characters): with the bundle ID, the App ID whose hash the keys carry.
    public var teamId: String
    public var environment: AppAttestEnvironment
    /// How long a challenge may be used, in seconds.
    public var challengeSeconds: Int

    public static let defaultChallengeSeconds = 120

    public init(
        mode: Mode, teamId: String, environment: AppAttestEnvironment = .production,
        challengeSeconds: Int = AppAttestSettings.defaultChallengeSeconds
    ) {
        self.mode = mode
        self.teamId = teamId
        self.environment = environment
        self.challengeSeconds = challengeSeconds
    }

    /// The App ID of app `bundleId`: `teamId.bundleId`.
    public func appId(bundleId: String) -> String { AppAttestation.appId(teamId: teamId, bundleId: bundleId) }

    /// Parses `appAttest` at `path`; mistakes go to `errors`.
    public static func parse(_ value: JSONValue, path: String, errors: inout [ConfigError]) -> AppAttestSettings? {
        var reader = ConfigReader(value, path: path, errors: &errors)
        let mode = choice(reader.string("mode"), Mode.self, path: "\(path).mode", errors: &errors)
        let teamId = reader.string("teamId", required: mode != nil && mode != .off)
        if let teamId, teamId.utf8.count != 10 || !teamId.utf8.allSatisfy(Self.isTeamIdCharacter) {
            errors.append(
                ConfigError(
                    path: "\(path).teamId", "expected Apple's 10-character team ID (upper-case letters, digits)"))
        }
        let environment =
            choice(
                reader.string("environment", required: false), AppAttestEnvironment.self,
                path: "\(path).environment", errors: &errors) ?? .production
        let seconds = reader.int("challengeSeconds", range: 10...600) ?? defaultChallengeSeconds
        reader.finish(into: &errors)
        guard let mode else { return nil }
        return AppAttestSettings(mode: mode, teamId: teamId ?? "", environment: environment, challengeSeconds: seconds)
    }

    private static func isTeamIdCharacter(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
    }

    private static func choice<Value: RawRepresentable & CaseIterable>(
        _ text: String?, _ type: Value.Type, path: String, errors: inout [ConfigError]
    ) -> Value? where Value.RawValue == String {
        guard let text else { return nil }
        guard let value = Value(rawValue: text) else {
            let allowed = Value.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: ", ")
            var message = "expected one of \(allowed), found \"\(text)\""
            if let near = NameSuggestion.closest(to: text, among: Value.allCases.map(\.rawValue)) {
                message += "; did you mean \"\(near)\"?"
            }
            errors.append(ConfigError(path: path, message))
            return nil
        }
        return value
    }
}
