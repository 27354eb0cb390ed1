#if !canImport(AuthenticationServices)
import Foundation

/// Stand-in for `ASPresentationAnchor`, which is `UIWindow` on iOS, tvOS and visionOS and `NSWindow` on macOS: a
/// main-actor UI object the system attaches its sheets to.
@MainActor
open class ASPresentationAnchor: NSObject {
    /// A window (`UIWindow()` / `NSWindow()`).
    public override init() { super.init() }
}
#endif
