import Foundation
import Hummingbird
import LatchkeyJOSE

/// SCIM discovery (RFC 7644 §4): `/scim2/ServiceProviderConfig`, `/scim2/ResourceTypes`, `/scim2/Schemas`. They
/// describe the service, not any account, so they are public.
extension SCIMController {
    func addDiscoveryRoutes(to group: RouterGroup<LatchkeyRequestContext>) {
        group.get("ServiceProviderConfig") { _, _ in try SCIMResponse.json(self.scimServiceProviderConfig()) }
        group.get("ResourceTypes") { _, _ in try SCIMResponse.json(Self.scimList([self.scimUserResourceType()])) }
        group.get("ResourceTypes/:id") { _, context in
            guard context.parameters.get("id") == "User" else { throw SCIMError(status: .notFound, detail: "no such resource type") }
            return try SCIMResponse.json(self.scimUserResourceType())
        }
        group.get("Schemas") { _, _ in try SCIMResponse.json(Self.scimList([self.scimUserSchema()])) }
        group.get("Schemas/:id") { _, context in
            guard context.parameters.get("id") == SCIMUser.schemaURN else { throw SCIMError(status: .notFound, detail: "no such schema") }
            return try SCIMResponse.json(self.scimUserSchema())
        }
    }

    private static func scimList(_ resources: [JSONValue]) -> JSONValue {
        .object([
            "schemas": .array([.string(scimListResponseURN)]), "totalResults": .number(Double(resources.count)),
            "startIndex": .number(1), "itemsPerPage": .number(Double(resources.count)), "Resources": .array(resources)
        ])
    }

    private func scimMeta(_ resourceType: String, _ path: String) -> JSONValue {
        .object(["resourceType": .string(resourceType), "location": .string(issuer + "/scim2/" + path)])
    }

    func scimServiceProviderConfig() -> JSONValue {
        func supported(_ value: Bool) -> JSONValue { .object(["supported": .bool(value)]) }
        return .object([
            "schemas": .array([.string("urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig")]),
            "patch": supported(true),
            "bulk": .object(["supported": .bool(false), "maxOperations": .number(0), "maxPayloadSize": .number(0)]),
            // userName, emails.value, id and active with eq, meta.lastModified with gt/ge/lt/le, joined by `and`.
            "filter": .object(["supported": .bool(true), "maxResults": .number(Double(Self.scimMaxResults))]),
            "changePassword": supported(false),
            "sort": supported(false),
            "etag": supported(true),
            "authenticationSchemes": .array([
                .object([
                    "type": .string("oauthbearertoken"), "name": .string("OAuth Bearer Token"), "primary": .bool(true),
                    "description": .string(
                        "An access token of this server (RFC 6750); /Users needs the \(ResourceCaller.adminScope) scope, held by a client "
                            + "for itself or by a user with the admin role.")
                ])
            ]),
            "meta": scimMeta("ServiceProviderConfig", "ServiceProviderConfig")
        ])
    }

    func scimUserResourceType() -> JSONValue {
        .object([
            "schemas": .array([.string("urn:ietf:params:scim:schemas:core:2.0:ResourceType")]),
            "id": .string("User"), "name": .string("User"), "endpoint": .string("/Users"),
            "description": .string("User Account"), "schema": .string(SCIMUser.schemaURN),
            "meta": scimMeta("ResourceType", "ResourceTypes/User")
        ])
    }

    /// The core User schema (RFC 7643 §7) reduced to the attributes this server stores.
    func scimUserSchema() -> JSONValue {
        func attribute(
            _ name: String, type: String = "string", multiValued: Bool = false, required: Bool = false,
            mutability: String = "readWrite", returned: String = "default", uniqueness: String = "none", canonical: [String]? = nil,
            sub: [JSONValue]? = nil, description: String? = nil
        ) -> JSONValue {
            var a: [String: JSONValue] = [
                "name": .string(name), "type": .string(type), "multiValued": .bool(multiValued), "required": .bool(required),
                "caseExact": .bool(false), "mutability": .string(mutability), "returned": .string(returned),
                "uniqueness": .string(uniqueness)
            ]
            if let canonical { a["canonicalValues"] = .array(canonical.map(JSONValue.string)) }
            if let sub { a["subAttributes"] = .array(sub) }
            if let description { a["description"] = .string(description) }
            return .object(a)
        }
        func values(_ type: String, primary: Bool) -> [JSONValue] {
            [attribute("value"), attribute("type", canonical: [type])] + (primary ? [attribute("primary", type: "boolean")] : [])
        }
        return .object([
            "schemas": .array([.string("urn:ietf:params:scim:schemas:core:2.0:Schema")]),
            "id": .string(SCIMUser.schemaURN), "name": .string("User"), "description": .string("User Account"),
            "attributes": .array([
                attribute("userName", required: true, uniqueness: "server"),
                attribute("name", type: "complex", sub: [attribute("formatted"), attribute("familyName"), attribute("givenName")]),
                attribute("displayName"),
                attribute("emails", type: "complex", multiValued: true, sub: values("work", primary: true)),
                attribute("phoneNumbers", type: "complex", multiValued: true, sub: values("mobile", primary: false)),
                attribute("photos", type: "complex", multiValued: true, sub: values("photo", primary: false)),
                attribute("locale"),
                attribute(
                    "active", type: "boolean",
                    description: "false disables the account: its sessions end and its tokens stop working; true enables it again"),
                attribute(
                    "password", mutability: "writeOnly", returned: "never",
                    description: "Only when the account is created (POST /Users), checked against the password policy"),
                attribute(
                    "roles", type: "complex", multiValued: true, sub: [attribute("value")],
                    description: "The operator-granted roles (admin …): shown to and written by administrators through /Users only")
            ]),
            "meta": scimMeta("Schema", "Schemas/" + SCIMUser.schemaURN)
        ])
    }
}
