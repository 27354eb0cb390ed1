import Foundation
import Hummingbird

/// The Flow Execution API: `POST /flow/execute`, `GET /flow/meta`.
extension IdentityServer {
    func addFlowRoutes(_ router: Router<LatchkeyRequestContext>) {}
}
