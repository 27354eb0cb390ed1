import Foundation
import Hummingbird

/// SCIM 2.0 (RFC 7643/7644): `/scim2/Me` and, with the admin scope, `/scim2/Users/{id}`.
extension IdentityServer {
    func addSCIMRoutes(_ router: Router<LatchkeyRequestContext>) {}
}
