import Foundation
import Latchkey
import Observation

/// The data type of a loaded profile. Inside this module `UserProfile` names the SwiftUI component on Apple
/// platforms, so the model code spells the data type through this alias.
public typealias LatchkeyUserProfile = Latchkey.UserProfile

/// The profile form (ThunderID's `UserProfile` / `BaseUserProfile`): loads the signed-in user's profile, edits a set of
/// fields, and saves only what changed — conditionally on the version it loaded (SCIM `If-Match`), so an edit made
/// elsewhere in between is reported, not overwritten.
///
/// A conflict is recoverable in one tap: the latest profile is loaded, the user's edits are kept on top of it, and
/// the next `save()` is based on the new version. Validation errors (an invalid value, an address taken by another
/// account) leave the edits in place with the server's explanation.
///
/// A new email address takes effect only after its owner enters the code the server sends to it (Latchkey's server
/// asks for that on every self-service email change); until then the saved profile keeps the old address.
@MainActor @Observable
public final class UserProfileModel {
    /// An editable field: the payload key it saves under and how to read it from a loaded profile.
    public struct Field: Sendable, Hashable, Identifiable {
        /// The key in `fields`, and the attribute `updateUserProfile` receives (an OpenID Connect claim or SCIM path).
        public var key: String
        /// The text of its label.
        public var label: UIText
        /// The field's identity.
        public var id: String { key }

        /// A field saved under `key`.
        public init(key: String, label: UIText) { self.key = key; self.label = label }

        /// The SCIM display name (`displayName`).
        public static let displayName = Field(key: "displayName", label: .displayName)
        /// The mobile number (`phoneNumbers`), as ThunderID's form has it.
        public static let phoneNumbers = Field(key: "phoneNumbers", label: .phoneNumber)
        /// `name.givenName`.
        public static let givenName = Field(key: "given_name", label: .givenName)
        /// `name.familyName`.
        public static let familyName = Field(key: "family_name", label: .familyName)
        /// The email address (unique: another account's is refused).
        public static let email = Field(key: "email", label: .email)
        /// The preferred language.
        public static let locale = Field(key: "locale", label: .locale)
    }

    /// The fields the form edits (ThunderID's: display name and phone number).
    public let editable: [Field]
    /// The profile as last loaded or saved; nil before the first load.
    public private(set) var profile: LatchkeyUserProfile?
    /// The values being edited, by field key.
    public private(set) var fields: [String: String] = [:]
    /// True while loading or saving.
    public private(set) var isLoading = false
    /// True while saving.
    public private(set) var isSaving = false
    /// What went wrong last, in the user's language; nil after the next success.
    public private(set) var error: String?
    /// The code behind `error` (`.profileConflict`, `.invalidInput`, `.userAlreadyExists`, `.sessionExpired` …).
    public private(set) var errorCode: LatchkeyError.Code?
    /// The field the server's error names, when it names one of `editable`.
    public private(set) var errorField: String?
    /// True after a save succeeded, until the next edit.
    public private(set) var didSave = false

    /// Called after a successful save.
    @ObservationIgnored public var onSaved: (@MainActor () -> Void)?
    /// Called when a load or save fails.
    @ObservationIgnored public var onError: (@MainActor () -> Void)?

    @ObservationIgnored private let state: LatchkeyState
    /// The values as loaded, to send only what the user changed.
    @ObservationIgnored private var loaded: [String: String] = [:]

    /// A form over `state`'s session.
    public init(state: LatchkeyState, fields: [Field] = [.displayName, .phoneNumbers]) {
        self.state = state
        self.editable = fields
    }

    /// The fields the user changed.
    public var changedKeys: [String] { editable.map(\.key).filter { fields[$0, default: ""] != loaded[$0, default: ""] } }
    /// True when there is something to save.
    public var hasChanges: Bool { !changedKeys.isEmpty }

    /// The value being edited for `key`.
    public func value(for key: String) -> String { fields[key] ?? "" }
    /// Records an edit.
    public func setValue(_ value: String, for key: String) {
        fields[key] = value
        didSave = false
        if errorField == key { errorField = nil }
    }

    /// Loads the profile (the view calls it when it appears); edits in progress are replaced.
    public func load() async {
        guard !isLoading else { return }
        isLoading = true
        defer { isLoading = false }
        do {
            let profile = try await state.tracked { try await self.fetch() }
            show(profile, keepingEdits: false)
            clearError()
        } catch {
            fail(error)
        }
    }

    /// Saves the changed fields, based on the loaded version. On a conflict, the latest profile is loaded with the
    /// edits kept, ready for the next `save()`.
    public func save() async {
        guard !isLoading, profile != nil else { return }
        let changes = changedKeys
        guard !changes.isEmpty else { didSave = true; return }
        if state.isPreview { didSave = true; return }  // a preview has no server to save to
        isLoading = true
        isSaving = true
        defer { isLoading = false; isSaving = false }
        var payload: [String: JSONValue] = [:]
        for key in changes {
            let value = fields[key, default: ""].trimmingCharacters(in: .whitespacesAndNewlines)
            payload[key] = value.isEmpty ? .null : Self.payloadValue(key: key, value: value)
        }
        do {
            _ = try await state.tracked {
                try await self.state.session.updateProfile(payload, userId: nil, version: self.profile?.version)
            }
            let fresh = try await state.tracked { try await self.fetch() }
            show(fresh, keepingEdits: false)
            clearError()
            didSave = true
            onSaved?()
        } catch let error as LatchkeyError where error.code == .profileConflict {
            // Someone else saved first: show their version with this user's edits on top, then let them save again.
            if let latest = try? await state.tracked({ try await self.fetch() }) { show(latest, keepingEdits: true) }
            fail(error)
        } catch {
            fail(error)
        }
    }

    // MARK: Internals

    private func fetch() async throws -> LatchkeyUserProfile {
        if state.isPreview, let user = state.user {
            // A preview shows the user's claims as the profile; nothing is asked of a server.
            let given = user.claims["given_name"] ?? .null
            let family = user.claims["family_name"] ?? .null
            return LatchkeyUserProfile(scim: [
                "id": .string(user.sub), "userName": user.username.map(JSONValue.string) ?? .null,
                "displayName": user.displayName.map(JSONValue.string) ?? .null,
                "emails": .array([.object(["value": user.email.map(JSONValue.string) ?? .null, "primary": .bool(true)])]),
                "name": .object(["givenName": given, "familyName": family])
            ])
        }
        return try await state.session.profile()
    }

    private func show(_ profile: LatchkeyUserProfile, keepingEdits: Bool) {
        let edits = keepingEdits ? Dictionary(uniqueKeysWithValues: changedKeys.map { ($0, fields[$0, default: ""]) }) : [:]
        self.profile = profile
        loaded = Dictionary(uniqueKeysWithValues: editable.map { ($0.key, Self.read($0.key, from: profile)) })
        fields = loaded.merging(edits) { _, edit in edit }
    }

    private func clearError() {
        error = nil
        errorCode = nil
        errorField = nil
    }

    private func fail(_ failure: any Error) {
        let error = failure as? LatchkeyError ?? LatchkeyError(.unknownError, String(describing: failure))
        state.diagnose(error)
        errorCode = error.code
        // SCIM and OAuth answers carry technical text only; the user sees the table's words then, except for a
        // validation message that names a field (the server's detail is the only explanation there is).
        errorField = editable.first { field in error.message.localizedCaseInsensitiveContains(field.key) }?.key
        switch error.code {
        case .invalidInput, .userAlreadyExists:
            self.error = error.userMessage ?? error.message
        default:
            self.error = state.i18n.message(for: error)
        }
        didSave = false
        onError?()
    }

    /// The text of `key` in a loaded profile.
    static func read(_ key: String, from profile: LatchkeyUserProfile) -> String {
        switch key {
        case "displayName", "name": return profile.displayName ?? ""
        case "phoneNumbers", "phone_number": return profile.phoneNumber ?? ""
        case "given_name", "name.givenName": return profile.givenName ?? ""
        case "family_name", "name.familyName": return profile.familyName ?? ""
        case "email": return profile.email ?? ""
        case "locale": return profile.locale ?? ""
        case "username", "userName": return profile.userName ?? ""
        default: return profile.claims[key]?.stringValue ?? ""
        }
    }

    /// SCIM multi-valued attributes take a list of entries; everything else a string.
    static func payloadValue(key: String, value: String) -> JSONValue {
        key == "phoneNumbers"
            ? .array([.object(["value": .string(value), "type": .string("mobile"), "primary": .bool(true)])])
            : .string(value)
    }
}
