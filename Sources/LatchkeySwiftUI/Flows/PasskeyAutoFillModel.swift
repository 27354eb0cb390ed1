import Foundation
import Latchkey
import Observation

/// Passkey sign-in from the keyboard's suggestions while a sign-in screen shows its username field
/// (`LatchkeyClient.beginAutoFillAssistedPasskeyLogin(withRequest:)`): the platform offers the relying party's
/// passkeys above the keyboard of a field whose content type is `.username`; a tap on one signs the person in.
///
/// Run it for as long as the username field is on screen — `run()` from SwiftUI's `.task`, which cancels it when the
/// view goes away — and stop it when the person picks another way (`stop()`; a passkey sheet the app opens ends it
/// anyway, the platform running one request at a time). It ends quietly when stopped, superseded, cancelled or when
/// nothing was offered; a failure that is not the person's doing (the app not associated with the RP ID, another
/// request of the system showing) is kept in `error`, in the person's language, and does not restart by itself.
///
/// `SignIn` runs one on its sign-in step (through `AuthFlowModel.runPasskeyAutoFill(anchor:)`); a screen of the app's
/// own with a username field can run one directly.
@MainActor @Observable
public final class PasskeyAutoFillModel {
    /// True while the request waits in the keyboard's suggestions (or the chosen passkey is being exchanged).
    public private(set) var isRunning = false
    /// Why the last run ended without signing in, when it was not the person's choice or the screen going away; nil
    /// otherwise.
    public private(set) var error: String?
    /// The code behind `error`.
    public private(set) var errorCode: LatchkeyError.Code?
    /// The person signed in by the last run, once it did.
    public private(set) var user: User?

    /// Called once signed in, after `LatchkeyState` has the user (when the model has a state).
    @ObservationIgnored public var onSignIn: (@MainActor () -> Void)?
    /// The window the system attaches to (the key window in the SwiftUI views); read when a run starts.
    @ObservationIgnored public var anchor: (@MainActor () -> PresentationAnchor?)?

    @ObservationIgnored private let client: LatchkeyClient
    @ObservationIgnored private let state: LatchkeyState?
    @ObservationIgnored private let i18n: LatchkeyI18n
    @ObservationIgnored private var running: Task<Void, Never>?
    /// Which run `running` is: a run that ends after a newer one started must not touch the newer one's state.
    @ObservationIgnored private var generation = 0

    /// AutoFill through `state.client`; a sign-in shows in the state before `onSignIn` runs.
    public convenience init(state: LatchkeyState) {
        self.init(client: state.client, state: state, i18n: state.i18n)
    }

    init(client: LatchkeyClient, state: LatchkeyState?, i18n: LatchkeyI18n) {
        self.client = client
        self.state = state
        self.i18n = i18n
    }

    /// Starts a run without waiting; does nothing while one runs.
    public func start() {
        guard running == nil else { return }
        generation += 1
        let run = generation
        error = nil
        errorCode = nil
        isRunning = true
        let request = NativeLoginRequest(anchor: anchor?())
        running = Task { await self.perform(request, run: run) }
    }

    /// Starts a run (unless one runs) and waits until it ends; cancelling the calling task stops it (SwiftUI's
    /// `.task` does so when the view disappears).
    public func run() async {
        start()
        let task = running
        await withTaskCancellationHandler {
            await task?.value
        } onCancel: {
            Task { @MainActor in self.stop() }
        }
    }

    /// Ends the run in progress (the person picked another way, or the field went away): the system request is
    /// cancelled, nothing is reported.
    public func stop() {
        running?.cancel()
        running = nil
        isRunning = false
    }

    /// Waits for the run in progress, if any.
    public func waitUntilDone() async { await running?.value }

    private func perform(_ request: NativeLoginRequest, run: Int) async {
        defer {
            if run == generation {
                running = nil
                isRunning = false
            }
        }
        do {
            _ = try await NativeSignIn(client: client).signInWithAutoFill(request)
            if let state {
                await state.didSignIn(nil)
                user = state.user
            } else {
                user = try? await client.session().user()
            }
            onSignIn?()
        } catch {
            // Stopped or gone (the task was cancelled), superseded by a sheet the app opened, or nothing to offer:
            // none of it is news to the person.
            guard run == generation, !Task.isCancelled else { return }
            let failure = error as? LatchkeyError ?? LatchkeyError(.unknownError, String(describing: error))
            if failure.code == .canceled || failure.code == .passkeyCanceled { return }
            state?.diagnose(failure)
            self.error = i18n.message(for: failure)
            errorCode = failure.code
        }
    }
}
