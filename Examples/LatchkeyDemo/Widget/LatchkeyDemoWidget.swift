import AppIntents
import LatchkeySwiftUI
import SwiftUI
import WidgetKit

/// A home-screen widget showing who is signed in to the app: an app extension, a separate process, reading the app's
/// session from the Keychain access group both targets share (`DemoConfiguration.keychainAccessGroup`). When the access
/// token is due, the widget refreshes it like the app would; the SDK holds the session's lease in the Keychain while
/// it does, and the other process adopts the stored result, so the two never present one refresh token twice.
@main
struct LatchkeyDemoWidget: Widget {
    var body: some WidgetConfiguration {
        AppIntentConfiguration(kind: "io.latchkey.demo.session", intent: SessionWidgetIntent.self, provider: SessionTimeline()) { entry in
            SessionWidgetView(entry: entry)
                .containerBackground(.fill.tertiary, for: .widget)
        }
        .configurationDisplayName("Latchkey session")
        .description("Who is signed in to Latchkey Demo.")
        .supportedFamilies([.systemSmall])
    }
}

/// The widget has nothing to configure; WidgetKit's async timeline API needs an intent all the same.
struct SessionWidgetIntent: WidgetConfigurationIntent {
    static var title: LocalizedStringResource { "Latchkey session" }
}

/// What the widget shows at one moment.
struct SessionEntry: TimelineEntry {
    enum Session {
        case signedIn(name: String)
        /// Signed in, but the session could not be checked (offline, the server down): still signed in.
        case unconfirmed
        case signedOut
    }

    let date: Date
    let session: Session
}

struct SessionTimeline: AppIntentTimelineProvider {
    func placeholder(in context: Context) -> SessionEntry {
        SessionEntry(date: Date(), session: .signedIn(name: "Ada Lovelace"))
    }

    func snapshot(for configuration: SessionWidgetIntent, in context: Context) async -> SessionEntry {
        context.isPreview ? placeholder(in: context) : await Self.current()
    }

    func timeline(for configuration: SessionWidgetIntent, in context: Context) async -> Timeline<SessionEntry> {
        Timeline(entries: [await Self.current()], policy: .after(Date().addingTimeInterval(15 * 60)))
    }

    /// The session as the app left it. Only a definitive answer shows "signed out": a network failure keeps the
    /// session, as the app does.
    static func current() async -> SessionEntry {
        let client = LatchkeyClient(keychainAccessGroup: DemoConfiguration.keychainAccessGroup)
        do {
            try await client.initialize(config: DemoConfiguration.latchkey)
            guard try await client.isSignedIn() else { return SessionEntry(date: Date(), session: .signedOut) }
            _ = try await client.getAccessToken()  // refreshed when due, under the session's lease
            let user = try await client.getUser()
            return SessionEntry(date: Date(), session: .signedIn(name: user.displayName ?? user.email ?? user.sub))
        } catch let error as LatchkeyError where error.code == .sessionExpired {
            return SessionEntry(date: Date(), session: .signedOut)
        } catch {
            return SessionEntry(date: Date(), session: .unconfirmed)
        }
    }
}

struct SessionWidgetView: View {
    let entry: SessionEntry

    var body: some View {
        VStack(alignment: .leading, spacing: 6) {
            Image(systemName: "person.badge.key")
                .font(.title2)
            switch entry.session {
            case .signedIn(let name):
                Text("Signed in").font(.caption).foregroundStyle(.secondary)
                Text(name).font(.headline).lineLimit(2)
            case .unconfirmed:
                Text("Signed in").font(.headline)
                Text("Offline").font(.caption).foregroundStyle(.secondary)
            case .signedOut:
                Text("Signed out").font(.headline)
            }
        }
        .frame(maxWidth: .infinity, alignment: .leading)
    }
}
