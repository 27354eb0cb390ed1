import UIKit

extension UIApplication {
    /// The window the system credential sheets (passkeys) attach to. SwiftUI does not give a view its `UIWindow`;
    /// the key window of the foreground scene is the one the user is looking at. (With nil the SDK falls back to a
    /// detached anchor and the system picks where the sheet goes.)
    @MainActor
    var foregroundKeyWindow: UIWindow? {
        connectedScenes
            .compactMap { $0 as? UIWindowScene }
            .first { $0.activationState == .foregroundActive }?
            .keyWindow
    }
}
