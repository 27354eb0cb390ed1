import Foundation
import Latchkey
import Observation

/// The sign-in button (ThunderID's `SignInButton`): its localized label, disabled while the state is busy, and what a
/// tap does — the app's `onTap` (present a `SignIn` sheet …), else a browser sign-in (`signInWithBrowser`: the
/// system's web-authentication sheet on Apple platforms) whose result shows in `LatchkeyState`.
@MainActor @Observable
public final class SignInButtonModel {
    /// What the app does on a tap instead of the browser sign-in.
    @ObservationIgnored public var onTap: (@MainActor () -> Void)?
    /// What the browser sheet is presented from (the key window by default in the SwiftUI view).
    @ObservationIgnored public weak var presentationContextProvider: (any PresentationContextProviding)?
    /// True while this button's browser sign-in runs.
    public private(set) var isSigningIn = false
    @ObservationIgnored private let state: LatchkeyState

    /// A button over `state`.
    public init(state: LatchkeyState, onTap: (@MainActor () -> Void)? = nil) {
        self.state = state
        self.onTap = onTap
    }

    /// The label (`signIn` in the active language).
    public var label: String { state.i18n.t(.signIn) }
    /// True when a tap would do nothing now.
    public var isDisabled: Bool { state.isLoading || isSigningIn }

    /// The button's action.
    public func tap() {
        guard !isDisabled else { return }
        if let onTap { return onTap() }
        Task { await signInWithBrowser() }
    }

    /// Signs in through the browser; a closed sheet is not an error, any other failure lands in `state.error`.
    public func signInWithBrowser() async {
        guard !isSigningIn else { return }
        isSigningIn = true
        defer { isSigningIn = false }
        // The SDK boxes the provider weakly and reads it only on the main actor, where it came from.
        nonisolated(unsafe) let provider = presentationContextProvider
        do {
            let user = try await state.tracked {
                try await AuthorizationCodeFlow(client: state.client, session: state.session)
                    .signIn(options: nil, presentationContextProvider: provider)
            }
            await state.didSignIn(user)
        } catch let error as LatchkeyError where error.code == .canceled {
            return
        } catch {
            state.report(error)
        }
    }
}

/// The sign-out button (ThunderID's `SignOutButton`): signs out through the state (one request however often it is
/// tapped), then calls `onSignOutComplete` with the state already signed out.
@MainActor @Observable
public final class SignOutButtonModel {
    /// Called after the sign-out, once `LatchkeyState` shows it.
    @ObservationIgnored public var onSignOutComplete: (@MainActor () -> Void)?
    /// What the provider's sign-out page is presented from, when the session is ended in the browser that signed in
    /// (the key window by default in the SwiftUI view).
    @ObservationIgnored public weak var presentationContextProvider: (any PresentationContextProviding)?
    @ObservationIgnored private let state: LatchkeyState

    /// A button over `state`.
    public init(state: LatchkeyState, onSignOutComplete: (@MainActor () -> Void)? = nil) {
        self.state = state
        self.onSignOutComplete = onSignOutComplete
    }

    /// The label (`signOut` in the active language).
    public var label: String { state.i18n.t(.signOut) }
    /// True while the state is busy (the button is disabled).
    public var isLoading: Bool { state.isLoading }

    /// The button's action.
    public func tap() {
        Task { await signOut() }
    }

    /// Signs out and waits; a second call during the first waits for it.
    public func signOut() async {
        // The SDK boxes the provider weakly and reads it only on the main actor, where it came from.
        nonisolated(unsafe) let provider = presentationContextProvider
        await state.signOut(options: SignOutOptions(presentationContextProvider: provider))
        if !state.isSignedIn { onSignOutComplete?() }
    }
}
