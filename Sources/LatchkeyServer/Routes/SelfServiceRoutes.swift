import Foundation
import Hummingbird

/// Self-service profile in the thunderID dialect: `/users/me`, `/users/me/meta`, `/users/me/update-credentials`.
extension IdentityServer {
    func addSelfServiceRoutes(_ router: Router<LatchkeyRequestContext>) {}
}
