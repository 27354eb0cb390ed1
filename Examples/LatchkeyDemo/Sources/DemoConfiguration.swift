import Foundation
import LatchkeySwiftUI

/// Everything that ties the app to an identity server, in one place: change these (and the matching URL scheme in
/// Info.plist, and the domain in LatchkeyDemo.entitlements) to point the app at your own server.
enum DemoConfiguration {
    /// The issuer. `scripts/demo.sh` serves it on the Mac; the simulator shares the Mac's `localhost`, a device does
    /// not (see README: a device needs an https issuer). Plain http is allowed only for loopback hosts, by the SDK
    /// and, through Info.plist's ATS exception, by iOS.
    static let serverURL = "http://localhost:8090"

    /// The application registered on the server. The demo server creates `latchkey-demo` with an open sign-up and the
    /// token-exchange grant that the app-native `SignIn`/`SignUp` forms need.
    static let clientId = "latchkey-demo"

    /// Where the browser sign-in comes back to. It must be registered on the server for `clientId`: the demo server
    /// registers exactly these two, so the scheme is `io.latchkey.demo` (also declared in Info.plist).
    static let afterSignInURL = "io.latchkey.demo:/callback"
    static let afterSignOutURL = "io.latchkey.demo:/logout"

    /// The WebAuthn origin iOS writes into passkey responses: `https://` + the relying-party ID, the domain of the
    /// `webcredentials:` entitlement. nil uses the issuer's origin, which is right when the server's own host is the
    /// RP ID. Passkeys cannot work against `localhost` on iOS (README, "Passkeys").
    static let passkeyOrigin: String? = nil

    /// `offline_access` asks for a refresh token, so a session outlives its access token and survives relaunches
    /// (the SwiftUI provider keeps it in the Keychain).
    static let scopes = ["openid", "profile", "email", "offline_access"]

    /// The keychain access group the app and its widget share: `$(AppIdentifierPrefix)io.latchkey.demo.shared` in both
    /// targets' entitlements. The team prefix is only known at build time, so Info.plist carries the full name
    /// (`LatchkeyKeychainAccessGroup`, expanded from the build setting); nil (no such key) uses the app's own group.
    static var keychainAccessGroup: String? {
        Bundle.main.object(forInfoDictionaryKey: "LatchkeyKeychainAccessGroup") as? String
    }

    static var latchkey: LatchkeyConfig {
        var config = LatchkeyConfig(
            baseUrl: serverURL, clientId: clientId, scopes: scopes,
            afterSignInUrl: afterSignInURL, afterSignOutUrl: afterSignOutURL)
        config.originWebAuthn = passkeyOrigin
        return config
    }
}
