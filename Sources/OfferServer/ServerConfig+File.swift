import OfferCore

extension ServerConfig {
    /// Reads and validates the configuration file at `path`; relative paths inside resolve against its folder.
    public static func load(path: String) throws(ConfigErrors) -> ServerConfig {
        guard let bytes = FileBytes.read(path, limit: 4 << 20) else {
            throw ConfigErrors([ConfigError(path: "$", "\(path): cannot read configuration file")])
        }
        let directory: String
        if let slash = path.lastIndex(of: "/") {
            directory = slash == path.startIndex ? "/" : String(path[..<slash])
        } else {
            directory = "."
        }
        return try parse(bytes, baseDirectory: directory)
    }

    /// Warnings that do not stop the service but that ops must see (printed at start and by `config check`).
    public var warnings: [String] {
        var out: [String] = []
        for (index, app) in apps.enumerated() where app.localTesting {
            out.append(
                "$.apps[\(index)].localTesting: \(app.bundleId) accepts Xcode/LocalTesting signed data that anyone "
                    + "can make; never turn this on in production")
        }
        if !trust.rootCertificateFiles.isEmpty && trust.environments.contains("Sandbox") {
            out.append(
                "$.trust.environments: Sandbox data is accepted; any sandbox or TestFlight tester can make it, so "
                    + "keep Sandbox to staging deployments")
        }
        if trust.rootCertificateFiles.isEmpty {
            out.append("$.trust: no root certificates; only offers with requiresVerifiedCustomer false can be signed")
        }
        return out
    }
}
