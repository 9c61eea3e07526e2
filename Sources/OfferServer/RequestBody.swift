import OfferAPI
import OfferCore

/// A JSON request body read strictly: an object, known members only, each of the right type.
/// The first mistake becomes a 400 `invalid_request` naming the member.
struct RequestBody {
    private let members: [String: JSONValue]

    init(_ bytes: [UInt8], allowed: Set<String>) throws(APIError) {
        guard !bytes.isEmpty else { throw APIError.invalidRequest("request body is empty; send a JSON object") }
        let document: JSONValue
        do {
            document = try JSONParser.parse(bytes)
        } catch {
            throw APIError.invalidRequest("request body is not valid JSON: \(error.description)")
        }
        guard case .object(let members) = document else {
            throw APIError.invalidRequest("request body must be a JSON object, not \(document.typeDescription)")
        }
        if let unknown = members.keys.sorted().first(where: { !allowed.contains($0) }) {
            throw APIError.invalidRequest("unknown field \"\(unknown)\"")
        }
        self.members = members
    }

    func string(_ name: String) throws(APIError) -> String {
        guard let value = try optionalString(name) else {
            throw APIError.invalidRequest("field \"\(name)\" is required")
        }
        return value
    }

    func optionalString(_ name: String) throws(APIError) -> String? {
        guard let value = members[name], value != .null else { return nil }
        guard case .string(let text) = value else {
            throw APIError.invalidRequest("field \"\(name)\" must be a string, not \(value.typeDescription)")
        }
        guard !text.isEmpty else { throw APIError.invalidRequest("field \"\(name)\" must not be empty") }
        guard text.utf8.count <= 16 * 1024 else { throw APIError.invalidRequest("field \"\(name)\" is too long") }
        return text
    }

    func optionalStrings(_ name: String) throws(APIError) -> [String]? {
        guard let value = members[name], value != .null else { return nil }
        guard case .array(let elements) = value else {
            throw APIError.invalidRequest("field \"\(name)\" must be an array of strings")
        }
        var out: [String] = []
        for element in elements {
            guard case .string(let text) = element, !text.isEmpty else {
                throw APIError.invalidRequest("field \"\(name)\" must be an array of non-empty strings")
            }
            out.append(text)
        }
        return out
    }
}
