import OfferAPI

/// An app's catalog as one JSON document: `{"offers": [...], "retention": [...]}`, the members an app of the
/// configuration file writes for them, read by the same code (`AppDefinition.parse` calls `read`). What the
/// storage keeps as a published version or a draft, what the admin API edits, and what `catalog export|import`
/// move.
public struct CatalogDocument: Sendable {
    public var offers: [Offer]
    public var retention: [RetentionEntry]
    /// The document as JSON (members sorted, no spaces): what is stored.
    public var json: [UInt8]

    /// Parses and validates a document exactly as `config check` validates the same members of an app; errors
    /// carry JSON paths from `path` (`$` for a document on its own, so `$.offers[0].limits.total`). Unknown members
    /// are errors.
    public static func parse(
        _ bytes: [UInt8], path: String = "$", storedIds: Bool = false
    ) throws(ConfigErrors) -> CatalogDocument {
        let value: JSONValue
        do {
            value = try JSONParser.parse(bytes)
        } catch {
            throw ConfigErrors([ConfigError(path: path, "not valid JSON: \(error.description)")])
        }
        return try parse(value, path: path, storedIds: storedIds)
    }

    /// Parses and validates a parsed document (see `parse(_:path:)`). `storedIds`: a version already in the
    /// storage, whose offer IDs are held to the rule they were stored under (see `Offer.parse`).
    public static func parse(
        _ value: JSONValue, path: String = "$", storedIds: Bool = false
    ) throws(ConfigErrors) -> CatalogDocument {
        var errors: [ConfigError] = []
        var reader = ConfigReader(value, path: path, errors: &errors)
        let document = read(&reader, storedIds: storedIds, errors: &errors)
        reader.finish(into: &errors)
        guard errors.isEmpty else { throw ConfigErrors(errors) }
        return document
    }

    /// Reads `offers` (required, may be empty) and `retention` (optional) from an object being read, the way both
    /// an app of the configuration file and a document on its own are read. Mistakes go to `errors`; what cannot be
    /// built is left out.
    static func read(
        _ reader: inout ConfigReader, storedIds: Bool = false, errors: inout [ConfigError]
    ) -> CatalogDocument {
        var offers: [Offer] = []
        let offersValue = reader.value("offers")
        if offersValue != nil, let offerValues = reader.array("offers", allowEmpty: true) {
            for (index, offerValue) in offerValues.enumerated() {
                let offerPath = "\(reader.path).offers[\(index)]"
                guard let offer = Offer.parse(offerValue, path: offerPath, storedIds: storedIds, errors: &errors)
                else { continue }
                if offers.contains(where: { $0.id == offer.id }) {
                    errors.append(ConfigError(path: "\(offerPath).id", "duplicate offer id \(offer.id)"))
                }
                offers.append(offer)
            }
        } else if offersValue == nil {
            errors.append(ConfigError(path: reader.child("offers"), "is required"))
        }
        var retention: [RetentionEntry] = []
        let retentionValue = reader.value("retention")
        if let entries = reader.array("retention", required: false, allowEmpty: true) {
            retention = RetentionEntry.parseAll(
                entries, path: reader.child("retention"), offers: offers, errors: &errors)
        }
        var writer = JSONWriter()
        writer.value(.object(["offers": offersValue ?? .array([]), "retention": retentionValue ?? .array([])]))
        return CatalogDocument(offers: offers, retention: retention, json: writer.bytes)
    }

    /// The offer as its document writes it (members sorted), or `nil` when the document has no offer `id`.
    public static func offerJSON(_ document: [UInt8], id: String) -> JSONValue? {
        guard let value = try? JSONParser.parse(document), let offers = value["offers"]?.arrayValue else { return nil }
        return offers.first { $0["id"]?.stringValue == id }
    }
}

extension AppDefinition {
    /// This app with its offers and retention entries from `document` instead of the configuration file's.
    public func replacing(_ document: CatalogDocument) -> AppDefinition {
        var app = self
        app.offers = document.offers
        app.retention = document.retention
        app.catalogJSON = document.json
        return app
    }
}
