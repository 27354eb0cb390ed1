import Foundation
import Hummingbird

/// `GET /admin/v1/applications`: every application, configured or registered, for administrators
/// (`ResourceCaller.isAdmin`), as RFC 7591 client information without credentials, each with `latchkey_origin`
/// (`configuration` or `registration`) and, for registered ones, the URI that manages it. Changes go through
/// `/oauth2/register` (registered applications) or the configuration file (configured ones).
struct ApplicationsController: Sendable {
    let store: any ClientStore
    let issuerInForce: @Sendable () -> String

    func addRoutes(to group: RouterGroup<ResourceRequestContext>) {
        group.get("applications") { _, context in try await self.list(caller: context.caller) }
    }

    private struct Page: Encodable {
        var applications: [ClientInformation]
    }

    private func list(caller: ResourceCaller) async throws -> Response {
        guard caller.isAdmin else { throw AdminErrors.forbidden }
        let issuer = issuerInForce()
        let applications = try await store.clients().map { record in
            let uri = record.origin == .registration ? issuer + "/oauth2/register/" + record.configuration.clientId : nil
            var information = ClientInformation(record, registrationClientURI: uri)
            information.origin = record.origin.rawValue
            return information
        }
        return try Responses.json(Page(applications: applications), noStore: true)
    }
}
