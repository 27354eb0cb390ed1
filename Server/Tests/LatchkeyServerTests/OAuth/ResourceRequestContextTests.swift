import Hummingbird
@testable import LatchkeyServer
import Logging
import NIOEmbedded
import Testing

/// A protected group's handlers get `ResourceRequestContext`; it cannot be made for a request nobody authenticated,
/// so a group registered without its `ResourceAuthenticationMiddleware` refuses instead of serving anonymously.
@Suite("Protected groups: no handler context without an authenticated caller")
struct ResourceRequestContextTests {
    @Test("a request without a caller is refused as invalid_token before any handler")
    func noCallerNoContext() throws {
        let source = ApplicationRequestContextSource(channel: EmbeddedChannel(), logger: Logger(label: "test"))
        let parent = LatchkeyRequestContext(source: source)
        #expect(parent.resourceCaller == nil)
        #expect {
            _ = try ResourceRequestContext(context: parent)
        } throws: { error in
            (error as? OAuthError)?.code == .invalidToken
        }
    }
}
