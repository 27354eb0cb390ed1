#if canImport(SwiftUI)
import SwiftUI

/// How the components look: colors, fonts, corner radius and spacing, through the environment. Set it once near the
/// root and every component below uses it; a screen can override it for its subtree.
///
///     RootView()
///         .latchkeyProvider(config: config)
///         .latchkeyTheme(LatchkeyTheme(accent: .indigo, titleFont: .largeTitle.bold(), cornerRadius: 14))
///
/// The defaults are the system's (the app's accent color, Dynamic Type text styles), so an app that sets nothing
/// looks like the platform.
public struct LatchkeyTheme: Sendable {
    /// The primary buttons' color (nil: the app's accent color).
    public var accent: Color?
    /// Error messages, under a field and for the step.
    public var error: Color
    /// Notices and secondary text.
    public var secondaryText: Color
    /// A step's heading.
    public var titleFont: Font
    /// Field and button text.
    public var bodyFont: Font
    /// Errors under fields and notices.
    public var captionFont: Font
    /// The corner radius of the buttons.
    public var cornerRadius: CGFloat
    /// The space between the parts of a step (heading, fields, buttons).
    public var spacing: CGFloat
    /// The space between a field and its error.
    public var fieldSpacing: CGFloat

    /// A theme; every value has the system's default.
    public init(
        accent: Color? = nil, error: Color = .red, secondaryText: Color = .secondary, titleFont: Font = .title2.weight(.semibold),
        bodyFont: Font = .body, captionFont: Font = .footnote, cornerRadius: CGFloat = 10, spacing: CGFloat = 16, fieldSpacing: CGFloat = 4
    ) {
        self.accent = accent; self.error = error; self.secondaryText = secondaryText; self.titleFont = titleFont
        self.bodyFont = bodyFont; self.captionFont = captionFont; self.cornerRadius = cornerRadius; self.spacing = spacing
        self.fieldSpacing = fieldSpacing
    }

    /// The system's look.
    public static let standard = LatchkeyTheme()
}

private struct LatchkeyThemeKey: EnvironmentKey {
    static let defaultValue = LatchkeyTheme.standard
}

extension EnvironmentValues {
    /// The theme the components use (`.latchkeyTheme(_:)` sets it).
    public var latchkeyTheme: LatchkeyTheme {
        get { self[LatchkeyThemeKey.self] }
        set { self[LatchkeyThemeKey.self] = newValue }
    }
}

@MainActor
extension View {
    /// Styles the Latchkey components in this view's subtree.
    public func latchkeyTheme(_ theme: LatchkeyTheme) -> some View {
        environment(\.latchkeyTheme, theme)
    }
}

@MainActor
extension View {
    /// The theme's accent on a view (nil leaves the app's).
    @ViewBuilder
    func latchkeyAccent(_ theme: LatchkeyTheme) -> some View {
        if let accent = theme.accent { tint(accent) } else { self }
    }

    /// A primary button as the components draw one: prominent, the theme's corner radius and accent.
    func latchkeyPrimaryButton(_ theme: LatchkeyTheme) -> some View {
        buttonStyle(.borderedProminent).buttonBorderShape(.roundedRectangle(radius: theme.cornerRadius)).latchkeyAccent(theme)
    }
}
#endif
