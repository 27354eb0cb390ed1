#if canImport(SwiftUI)
import SwiftUI
import Latchkey
#if canImport(CoreImage)
import CoreImage
import CoreImage.CIFilterBuiltins
#endif

/// A model an account component makes once and loads when it first appears.
@MainActor
protocol AccountScreenModel: AnyObject {
    func load() async
}

extension SecondFactorsModel: AccountScreenModel {}
extension PasskeysModel: AccountScreenModel {}
extension SessionsModel: AccountScreenModel {}
extension LinkedAccountsModel: AccountScreenModel {}

/// An account component: its title, then `content` over its model, which is made once from the environment's state
/// (kept across the parent's rebuilds) and loaded when the component first appears.
@MainActor
struct AccountScreen<Model: AccountScreenModel, Content: View>: View {
    @Environment(LatchkeyState.self) private var state
    @Environment(\.latchkeyTheme) private var theme
    @State private var model: Model?
    let title: UIText
    let make: @MainActor (LatchkeyState) -> Model
    @ViewBuilder let content: (Model) -> Content

    var body: some View {
        VStack(alignment: .leading, spacing: theme.fieldSpacing) {
            Text(state.i18n.t(title)).font(theme.titleFont).accessibilityAddTraits(.isHeader)
            if let model { content(model) } else { ProgressView().accessibilityLabel(state.i18n.t(.loading)) }
        }
        .onAppear {
            guard model == nil else { return }
            let made = make(state)
            model = made
            Task { await made.load() }
        }
    }
}

/// One row of an account list: a name, a line under it, and its actions at the trailing edge.
@MainActor
struct AccountRow<Actions: View>: View {
    @Environment(\.latchkeyTheme) private var theme
    let title: String
    let detail: String?
    var badge: String?
    var isWarning = false
    @ViewBuilder let actions: () -> Actions

    var body: some View {
        HStack(alignment: .firstTextBaseline, spacing: theme.fieldSpacing) {
            VStack(alignment: .leading, spacing: 2) {
                HStack(spacing: 6) {
                    Text(title).font(theme.bodyFont)
                    if let badge {
                        Text(badge).font(theme.captionFont).padding(.horizontal, 6).padding(.vertical, 2)
                            .background(Capsule().stroke(theme.secondaryText))
                    }
                }
                if let detail {
                    Text(detail).font(theme.captionFont).foregroundStyle(isWarning ? theme.error : theme.secondaryText)
                }
            }
            Spacer(minLength: 0)
            actions().font(theme.bodyFont)
        }
        .accessibilityElement(children: .contain)
    }
}

/// What the last change came to, styled by its kind.
@MainActor
struct AccountNoticeText: View {
    @Environment(\.latchkeyTheme) private var theme
    let notice: AccountNotice

    var body: some View {
        Label(notice.message, systemImage: notice.isProblem ? "exclamationmark.triangle" : "checkmark.circle")
            .font(theme.captionFont)
            .foregroundStyle(notice.isProblem ? theme.error : theme.secondaryText)
            .accessibilityIdentifier(LatchkeyAccessibilityID.accountNotice)
            // VoiceOver reads the outcome when it appears or changes, not only when the person finds it.
            .onAppear { AccessibilityNotification.Announcement(notice.message).post() }
            .onChange(of: notice) { AccessibilityNotification.Announcement(notice.message).post() }
    }
}

/// A QR code of `text`, drawn with Core Image where it is available; the text itself otherwise.
@MainActor
struct QRCodeImage: View {
    let text: String
    let label: String
    #if canImport(CoreImage)
    @State private var image: CGImage?
    @State private var drawn = false
    #endif

    var body: some View {
        Group {
            #if canImport(CoreImage)
            if let image {
                Image(image, scale: 1, label: Text(label)).interpolation(.none).resizable().scaledToFit()
            } else if drawn {
                fallback  // Core Image could not draw it
            } else {
                Color.clear.aspectRatio(1, contentMode: .fit)  // not the text for a frame: it holds the key
            }
            #else
            fallback
            #endif
        }
        #if canImport(CoreImage)
        .task(id: text) {
            image = Self.draw(text)
            drawn = true
        }
        #endif
    }

    private var fallback: some View {
        Text(text).font(.system(.caption, design: .monospaced)).accessibilityLabel(label)
    }

    #if canImport(CoreImage)
    /// The code with medium error correction, scaled so that each module is whole pixels (no blur).
    static func draw(_ text: String) -> CGImage? {
        let filter = CIFilter.qrCodeGenerator()
        filter.message = Data(text.utf8)
        filter.correctionLevel = "M"
        guard let output = filter.outputImage else { return nil }
        let scaled = output.transformed(by: CGAffineTransform(scaleX: 10, y: 10))
        return CIContext().createCGImage(scaled, from: scaled.extent)
    }
    #endif
}
#endif
