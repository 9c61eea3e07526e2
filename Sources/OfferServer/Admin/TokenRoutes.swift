import OfferAPI
import OfferStore

/// Admin tokens over the API (role `admin`): list them (never the tokens themselves), make one (its token is in
/// this answer and nowhere else, ever), revoke one (its console sessions end with it).
struct TokenRoutes: AdminRouteSet {
    func routes(_ admin: AdminService) -> [Route] {
        let tokens = admin.tokens
        return [
            .admin("GET", "/admin/v1/tokens", role: .admin) { _, _ in
                AdminJSON.response(.object(["tokens": .array(try tokens.list().map(AdminTokens.listing))]))
            },
            .admin("POST", "/admin/v1/tokens", role: .admin) { request, context in
                let (_, reader) = try AdminJSON.body(request, allowed: ["name", "role"])
                let name = try reader.string("name")
                let role = try reader.oneOf("role", AdminRole.self)
                let created = try tokens.create(
                    name: name, role: role, by: AdminActor(try AdminJSON.caller(context), context))
                return AdminJSON.response(
                    .object([
                        "id": .string(created.token.id), "name": .string(created.token.name),
                        "role": .string(created.token.role.rawValue), "token": .string(created.secret),
                    ]), status: 201)
            },
            .admin("DELETE", "/admin/v1/tokens/{id}", role: .admin) { _, context in
                try tokens.revoke(
                    id: context.parameters["id"] ?? "", by: AdminActor(try AdminJSON.caller(context), context))
                return AdminJSON.noContent
            },
        ]
    }
}
