import Foundation

extension ResourceCaller {
    /// The user whose token called (`/users/me` and the account routes): a client acting for itself has no "me"
    /// (`SelfServiceErrors.notAUser`), and a token may outlive its user (`SelfServiceErrors.userNotFound`).
    func me() throws -> UserRecord {
        switch subject {
        case .user(let user): return user
        case .client: throw SelfServiceErrors.notAUser
        case .missingUser: throw SelfServiceErrors.userNotFound
        }
    }
}
