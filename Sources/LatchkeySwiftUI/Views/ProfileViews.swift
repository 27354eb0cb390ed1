#if canImport(SwiftUI)
import SwiftUI
import Latchkey
#if canImport(UIKit)
import UIKit
#endif

/// The unstyled profile form builder (ThunderID's `BaseUserProfile`): loads the profile when it appears and hands
/// `content` the loaded profile, bindings for the editable fields, whether it is busy, the last error and `save`.
@MainActor
public struct BaseUserProfile<Content: View>: View {
    @Environment(LatchkeyState.self) private var state
    @State private var model: UserProfileModel?
    private let editable: [UserProfileModel.Field]
    private let onSaved: (@MainActor () -> Void)?
    private let onError: (@MainActor () -> Void)?
    private let content: (LatchkeyUserProfile?, [String: Binding<String>], Bool, String?, @escaping () -> Void) -> Content

    /// - Parameters:
    ///   - fields: the editable fields (ThunderID's: display name and phone number).
    ///   - onSaved: called after a successful save.
    ///   - onError: called when a load or save fails.
    ///   - content: `(profile, fields, isLoading, error, save)`.
    public init(
        fields: [UserProfileModel.Field] = [.displayName, .phoneNumbers], onSaved: (@MainActor () -> Void)? = nil,
        onError: (@MainActor () -> Void)? = nil,
        @ViewBuilder content: @escaping (LatchkeyUserProfile?, [String: Binding<String>], Bool, String?, @escaping () -> Void) -> Content
    ) {
        self.editable = fields
        self.onSaved = onSaved
        self.onError = onError
        self.content = content
    }

    public var body: some View {
        Group {
            if let model {
                content(model.profile, bindings(model), model.isLoading, model.error, { Task { await model.save() } })
            } else {
                ProgressView().accessibilityLabel(state.i18n.t(.loading))
            }
        }
        .onAppear {
            guard model == nil else { return }
            let form = UserProfileModel(state: state, fields: editable)
            form.onSaved = onSaved
            form.onError = onError
            model = form
            Task { await form.load() }
        }
    }

    private func bindings(_ model: UserProfileModel) -> [String: Binding<String>] {
        Dictionary(
            uniqueKeysWithValues: model.editable.map { field in
                (
                    field.key,
                    Binding(
                        get: { @MainActor in model.value(for: field.key) },
                        set: { @MainActor value in model.setValue(value, for: field.key) })
                )
            })
    }
}

/// The profile form (ThunderID's `UserProfile`): the editable fields with their labels, the error (a conflict shows
/// the latest version with the user's edits kept) and a save button.
///
/// Where a file imports both `Latchkey` and `LatchkeySwiftUI`, `UserProfile` may name the profile data type:
/// write `UserProfileView` (or `LatchkeySwiftUI.UserProfile`) for this view there.
@MainActor
public struct UserProfile: View {
    @Environment(LatchkeyState.self) private var state
    @Environment(\.latchkeyTheme) private var theme
    private let onSaved: (@MainActor () -> Void)?
    private let onError: (@MainActor () -> Void)?

    /// - Parameters:
    ///   - onSaved: called after a successful save.
    ///   - onError: called when a load or save fails.
    public init(onSaved: (@MainActor () -> Void)? = nil, onError: (@MainActor () -> Void)? = nil) {
        self.onSaved = onSaved
        self.onError = onError
    }

    public var body: some View {
        BaseUserProfile(onSaved: onSaved, onError: onError) { _, fields, isLoading, error, save in
            VStack(alignment: .leading, spacing: theme.spacing) {
                if let error {
                    Label(error, systemImage: "exclamationmark.triangle").font(theme.bodyFont).foregroundStyle(theme.error)
                        .accessibilityIdentifier(LatchkeyAccessibilityID.error)
                }
                ForEach(UserProfileModel.Field.all(in: fields), id: \.key) { field in
                    if let binding = fields[field.key] {
                        TextField(state.i18n.t(field.label), text: binding)
                            .textFieldStyle(.roundedBorder)
                            .font(theme.bodyFont)
                            .accessibilityLabel(state.i18n.t(field.label))
                            .accessibilityIdentifier(LatchkeyAccessibilityID.profileField(field.key))
                            #if os(iOS) || os(visionOS)
                        .textContentType(field.contentType)
                            #endif
                    }
                }
                Button {
                    save()
                } label: {
                    HStack(spacing: 8) {
                        if isLoading { ProgressView() }
                        Text(isLoading ? state.i18n.t(.saving) : state.i18n.t(.save))
                    }
                    .frame(maxWidth: .infinity)
                }
                .font(theme.bodyFont)
                .latchkeyPrimaryButton(theme)
                .disabled(isLoading)
                .accessibilityIdentifier(LatchkeyAccessibilityID.profileSave)
            }
        }
    }
}

/// An unambiguous name for the `UserProfile` view.
public typealias UserProfileView = UserProfile

extension UserProfileModel.Field {
    #if os(iOS) || os(visionOS)
    /// What the keyboard may offer for the field.
    var contentType: UITextContentType? {
        switch key {
        case "displayName": .name
        case "given_name": .givenName
        case "family_name": .familyName
        case "phoneNumbers": .telephoneNumber
        default: nil
        }
    }
    #endif

    /// The predefined fields among `bindings`' keys, in a stable order.
    static func all(in bindings: [String: Binding<String>]) -> [UserProfileModel.Field] {
        [.displayName, .givenName, .familyName, .phoneNumbers, .locale].filter { bindings[$0.key] != nil }
    }
}
#endif
