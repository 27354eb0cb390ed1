#if canImport(SwiftUI)
import SwiftUI
import Latchkey
#if canImport(AuthenticationServices)
import AuthenticationServices
#endif
#if canImport(UIKit)
import UIKit
#elseif canImport(AppKit)
import AppKit
#endif

/// Shows `content` while the user is signed in, `fallback` (nothing by default) otherwise (ThunderID's `SignedIn`).
@MainActor
public struct SignedIn<Content: View, Fallback: View>: View {
    private let gate: SessionGate<Content, Fallback>

    /// - Parameters:
    ///   - content: shown while `LatchkeyState.showsSignedInContent`.
    ///   - fallback: shown otherwise.
    public init(@ViewBuilder content: @escaping () -> Content, @ViewBuilder fallback: @escaping () -> Fallback) {
        gate = SessionGate(shows: { $0.showsSignedInContent }, content: content, fallback: fallback)
    }

    public var body: some View { gate }
}

extension SignedIn where Fallback == EmptyView {
    /// Shows `content` while signed in, nothing otherwise.
    public init(@ViewBuilder content: @escaping () -> Content) {
        self.init(content: content, fallback: { EmptyView() })
    }
}

/// Shows `content` while the user is signed out, `fallback` (nothing by default) otherwise (ThunderID's `SignedOut`).
@MainActor
public struct SignedOut<Content: View, Fallback: View>: View {
    private let gate: SessionGate<Content, Fallback>

    /// - Parameters:
    ///   - content: shown while `LatchkeyState.showsSignedOutContent` (signed out, once the state is initialized, so
    ///     a restored session never flashes the sign-in screen).
    ///   - fallback: shown otherwise.
    public init(@ViewBuilder content: @escaping () -> Content, @ViewBuilder fallback: @escaping () -> Fallback) {
        gate = SessionGate(shows: { $0.showsSignedOutContent }, content: content, fallback: fallback)
    }

    public var body: some View { gate }
}

/// `content` or `fallback`, as the state's rule says.
@MainActor
struct SessionGate<Content: View, Fallback: View>: View {
    @Environment(LatchkeyState.self) private var state
    let shows: @MainActor (LatchkeyState) -> Bool
    let content: () -> Content
    let fallback: () -> Fallback

    var body: some View {
        if shows(state) { content() } else { fallback() }
    }
}

extension SignedOut where Fallback == EmptyView {
    /// Shows `content` while signed out, nothing otherwise.
    public init(@ViewBuilder content: @escaping () -> Content) {
        self.init(content: content, fallback: { EmptyView() })
    }
}

/// An unstyled button with a label, disabled while `isLoading` (ThunderID's `BaseSignInButton`).
@MainActor
public struct BaseSignInButton: View {
    private let label: String
    private let isLoading: Bool
    private let action: @MainActor () -> Void

    /// - Parameters:
    ///   - label: the title (and accessibility label).
    ///   - isLoading: disables the button.
    ///   - action: what a tap does.
    public init(label: String, isLoading: Bool = false, action: @escaping @MainActor () -> Void) {
        self.label = label
        self.isLoading = isLoading
        self.action = action
    }

    public var body: some View {
        Button(label) { action() }
            .disabled(isLoading)
            .accessibilityLabel(label)
    }
}

/// An unstyled sign-out button (ThunderID's `BaseSignOutButton`); the same as `BaseSignInButton`.
public typealias BaseSignOutButton = BaseSignInButton

/// The sign-in button (ThunderID's `SignInButton`): `onTap`, or a browser sign-in in the system's sheet.
@MainActor
public struct SignInButton: View {
    @Environment(LatchkeyState.self) private var state
    @Environment(\.latchkeyTheme) private var theme
    @State private var model: SignInButtonModel?
    private let onTap: (@MainActor () -> Void)?

    /// - Parameter onTap: what a tap does instead of the browser sign-in (present a `SignIn` sheet …).
    public init(onTap: (@MainActor () -> Void)? = nil) {
        self.onTap = onTap
    }

    public var body: some View {
        BaseSignInButton(label: state.i18n.t(.signIn), isLoading: model?.isDisabled ?? state.isLoading) {
            model?.tap()
        }
        .font(theme.bodyFont)
        .latchkeyPrimaryButton(theme)
        .accessibilityIdentifier(LatchkeyAccessibilityID.signInButton)
        .onAppear {
            guard model == nil else { return }
            let button = SignInButtonModel(state: state, onTap: onTap)
            button.presentationContextProvider = KeyWindowPresentationContext.shared
            model = button
        }
    }
}

/// The sign-out button (ThunderID's `SignOutButton`): signs out through the state, then calls `onSignOutComplete`.
@MainActor
public struct SignOutButton: View {
    @Environment(LatchkeyState.self) private var state
    @Environment(\.latchkeyTheme) private var theme
    @State private var model: SignOutButtonModel?
    private let onSignOutComplete: (@MainActor () -> Void)?

    /// - Parameter onSignOutComplete: called after the sign-out, once the state shows it.
    public init(onSignOutComplete: (@MainActor () -> Void)? = nil) {
        self.onSignOutComplete = onSignOutComplete
    }

    public var body: some View {
        BaseSignOutButton(label: state.i18n.t(.signOut), isLoading: state.isLoading) {
            model?.tap()
        }
        .font(theme.bodyFont)
        .buttonStyle(.bordered)
        .buttonBorderShape(.roundedRectangle(radius: theme.cornerRadius))
        .latchkeyAccent(theme)
        .accessibilityIdentifier(LatchkeyAccessibilityID.signOutButton)
        .onAppear {
            guard model == nil else { return }
            let button = SignOutButtonModel(state: state, onSignOutComplete: onSignOutComplete)
            button.presentationContextProvider = KeyWindowPresentationContext.shared
            model = button
        }
    }
}

/// Presents the browser sheet from the app's key window.
///
/// The conformance is isolated to the main actor (`@MainActor PresentationContextProviding`, Swift 6.2): the protocol
/// is nonisolated in SDKs before Xcode 26.4 and `@MainActor` from then on, and the system asks for the anchor on the
/// main thread either way.
@MainActor
final class KeyWindowPresentationContext: NSObject, @MainActor PresentationContextProviding {
    static let shared = KeyWindowPresentationContext()

    /// The app's key window (its first window when none is key), for the system's credential requests.
    static func keyWindow() -> PresentationAnchor? {
        #if canImport(UIKit)
        let windows = UIApplication.shared.connectedScenes.compactMap { $0 as? UIWindowScene }.flatMap(\.windows)
        return windows.first(where: \.isKeyWindow) ?? windows.first
        #elseif canImport(AppKit)
        return NSApplication.shared.keyWindow ?? NSApplication.shared.windows.first
        #else
        return nil
        #endif
    }

    #if canImport(AuthenticationServices) && !os(tvOS) && !os(watchOS)
    func presentationAnchor(for session: ASWebAuthenticationSession) -> ASPresentationAnchor {
        #if canImport(UIKit)
        let windows = UIApplication.shared.connectedScenes.compactMap { $0 as? UIWindowScene }.flatMap(\.windows)
        return windows.first(where: \.isKeyWindow) ?? windows.first ?? ASPresentationAnchor()
        #else
        return NSApplication.shared.keyWindow ?? NSApplication.shared.windows.first ?? ASPresentationAnchor()
        #endif
    }
    #endif
}
#endif
