import OfferAPI
import OfferCrypto

extension AppDefinition {
    /// An In-App Purchase key: its ID and where its private key is, a `.p8` file or a PKCS#11 token.
    public struct Key: Sendable, Equatable {
        /// Where a key's private half is.
        public enum Location: Sendable, Equatable, CustomStringConvertible {
            /// A `.p8` file (the resolved path).
            case file(String)
            /// An object in a PKCS#11 token; the private key never enters the process.
            case pkcs11(PKCS11KeyReference)

            /// The path, or the URI and module: never a PIN.
            public var description: String {
                switch self {
                case .file(let path): path
                case .pkcs11(let reference): reference.description
                }
            }
        }

        public var keyId: String
        public var location: Location

        public init(keyId: String, location: Location) {
            self.keyId = keyId
            self.location = location
        }

        public init(keyId: String, privateKeyFile: String) {
            self.init(keyId: keyId, location: .file(privateKeyFile))
        }

        /// The `.p8` file's path; `nil` for a key in a token.
        public var privateKeyFile: String? {
            if case .file(let path) = location { path } else { nil }
        }

        /// The member of the key entry that says where the key is (`privateKeyFile` or `pkcs11`), for messages.
        public var locationMember: String {
            if case .file = location { "privateKeyFile" } else { "pkcs11" }
        }

        /// Parses one entry of an app's `keys`: `{"keyId", "privateKeyFile"}`, or `{"keyId", "pkcs11",
        /// "pkcs11Module", "pinFile" | "pinEnvironment"}` for a key in a token. Relative paths resolve against
        /// `baseDirectory`.
        static func parse(
            _ value: JSONValue, path: String, baseDirectory: String, errors: inout [ConfigError]
        ) -> Key? {
            var reader = ConfigReader(value, path: path, errors: &errors)
            let keyId = reader.string("keyId")
            if let keyId, !Identifiers.isKeyId(keyId) {
                errors.append(ConfigError(path: "\(path).keyId", "expected 1 to 64 letters or digits"))
            }
            let file = reader.string("privateKeyFile", required: false)
            let uriText = reader.string("pkcs11", required: false)
            let module = reader.string("pkcs11Module", required: false)
            let pinFile = reader.string("pinFile", required: false)
            let pinEnvironment = reader.string("pinEnvironment", required: false)
            var location: Location?
            switch (file, uriText) {
            case (.some, .some):
                errors.append(ConfigError(path: path, "give either \"privateKeyFile\" or \"pkcs11\", not both"))
            case (let file?, nil):
                for (member, given) in [
                    ("pkcs11Module", module), ("pinFile", pinFile), ("pinEnvironment", pinEnvironment),
                ]
                where given != nil {
                    errors.append(
                        ConfigError(path: "\(path).\(member)", "applies only to a key in a token (\"pkcs11\")"))
                }
                location = .file(Identifiers.resolve(file, against: baseDirectory))
            case (nil, let uriText?):
                location = parseToken(
                    uriText, module: module, pinFile: pinFile, pinEnvironment: pinEnvironment, path: path,
                    baseDirectory: baseDirectory, errors: &errors)
            case (nil, nil):
                errors.append(
                    ConfigError(
                        path: "\(path).privateKeyFile", "is required (or \"pkcs11\" for a key kept in a PKCS#11 token)")
                )
            }
            reader.finish(into: &errors)
            guard let keyId, let location else { return nil }
            return Key(keyId: keyId, location: location)
        }

        private static func parseToken(
            _ uriText: String, module: String?, pinFile: String?, pinEnvironment: String?, path: String,
            baseDirectory: String, errors: inout [ConfigError]
        ) -> Location? {
            var uri: PKCS11URI?
            do {
                uri = try PKCS11URI(parsing: uriText)
            } catch {
                errors.append(ConfigError(path: "\(path).pkcs11", error.message))
            }
            if module == nil {
                errors.append(
                    ConfigError(
                        path: "\(path).pkcs11Module",
                        "is required with \"pkcs11\": the token's PKCS#11 library, like /usr/lib/softhsm/libsofthsm2.so"
                    ))
            }
            var pin: PKCS11KeyReference.PINSource?
            switch (pinFile, pinEnvironment) {
            case (let file?, nil): pin = .file(Identifiers.resolve(file, against: baseDirectory))
            case (nil, let name?): pin = .environment(name)
            case (.some, .some):
                errors.append(ConfigError(path: path, "give either \"pinFile\" or \"pinEnvironment\", not both"))
            case (nil, nil):
                errors.append(
                    ConfigError(
                        path: "\(path).pinFile",
                        "is required with \"pkcs11\" (or \"pinEnvironment\"): where the token's user PIN is read; "
                            + "the PIN itself never goes in the configuration"))
            }
            guard let uri, let module, let pin else { return nil }
            return .pkcs11(
                PKCS11KeyReference(uri: uri, modulePath: Identifiers.resolve(module, against: baseDirectory), pin: pin))
        }
    }
}
