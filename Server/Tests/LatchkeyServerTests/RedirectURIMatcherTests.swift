@testable import LatchkeyServer
import Testing

@Suite("Redirect URI matching (RFC 6749 §3.1.2.3, RFC 8252 §7.3)")
struct RedirectURIMatcherTests {
    let registered = ["http://127.0.0.1/callback", "http://localhost/callback", "io.latchkey.demo:/callback", "https://app.example/cb"]

    @Test(arguments: [
        ("http://127.0.0.1:1/callback", true), ("http://127.0.0.1:65535/callback", true), ("http://localhost:8080/callback", true),
        ("io.latchkey.demo:/callback", true), ("https://app.example/cb", true),
        ("https://app.example/cb?x=1", false), ("https://app.example/cb/", false), ("https://app.example:444/cb", false),
        ("http://127.0.0.1:80/callbackx", false), ("http://127.0.0.2:80/callback", false), ("http://localhost.evil:80/callback", false),
        ("http://user@127.0.0.1:80/callback", false), ("io.latchkey.demo:/callback2", false), ("https://127.0.0.1:80/callback", false),
        ("http://127.0.0.1/callback/../callback", false), ("HTTP://127.0.0.1:5/callback", false)
    ])
    func matches(uri: String, expected: Bool) {
        #expect(RedirectURIMatcher.isRegistered(uri, in: registered) == expected, "\(uri)")
    }

    @Test func loopbackRecognition() {
        for host in ["localhost", "127.0.0.1", "127.1.2.3", "[::1]", "::1"] { #expect(LoopbackHost.isLoopback(host), "\(host)") }
        for host in ["128.0.0.1", "localhost.example", "127.0.0", "0.0.0.0", "example.com"] { #expect(!LoopbackHost.isLoopback(host), "\(host)") }
    }
}
