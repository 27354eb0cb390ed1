import Foundation

/// Tells a sign-in sheet the person closed on the provider's error page from one they closed on its sign-in page.
///
/// A provider that cannot trust a request's `redirect_uri` or `client_id` must not redirect back (RFC 6749 §4.1.2.1):
/// it shows an error page, and all the person can do is close the sheet, which the system reports as a cancel. So when
/// an unpushed authorization request ends in a cancel, the same URL is asked once more without following redirects:
/// a sign-in page answers 200 or a redirect (a real cancel), an error page answers 4xx (the request was refused). The
/// request carries nothing secret (PKCE sends only the challenge) and its state is discarded either way.
enum ErrorPageProbe {
    /// The error behind a closed sheet that showed `url`, or nil when the page was not an error (or cannot be asked).
    static func error(behind url: URL, http: any HTTPClient) async -> LatchkeyError? {
        let request = HTTPRequest(url: url, headers: ["Accept": "text/html, application/json", "Accept-Language": "en"])
        guard let response = try? await http.send(request), (400..<500).contains(response.status) else { return nil }
        if response.header("Content-Type")?.contains("json") == true {
            let error = OAuthClient.errorFrom(response)
            return LatchkeyError(
                error.code == .unknownError ? .invalidConfiguration : error.code,
                "the provider refused the authorization request and the person closed its error page: \(error.message)",
                statusCode: response.status, serverCode: error.serverCode)
        }
        let text = pageText(response.body)
        let lowered = text.lowercased()
        let reason: String
        let serverCode: String?
        if lowered.contains("redirect") || lowered.contains("return to an address") || lowered.contains("callback") {
            (reason, serverCode) = ("its redirect_uri is not registered for this client", "invalid_request")
        } else if lowered.contains("client") || lowered.contains("application") {
            (reason, serverCode) = ("its client_id is not registered", "invalid_client")
        } else {
            (reason, serverCode) = ("the provider did not accept it", nil)
        }
        let quoted = text.isEmpty ? "" : " (the page said: \"\(text)\")"
        return LatchkeyError(
            .invalidConfiguration,
            "the provider showed an error page (HTTP \(response.status)) instead of signing in, and the person closed it: "
                + "\(reason)\(quoted)",
            statusCode: response.status, serverCode: serverCode)
    }

    /// The visible text of an HTML page, without scripts and styles, whitespace collapsed, at most 300 characters.
    static func pageText(_ body: Data) -> String {
        var html = String(decoding: body.prefix(64 * 1024), as: UTF8.self)
        for element in ["script", "style", "head"] {
            while let open = html.range(of: "<\(element)", options: .caseInsensitive),
                let close = html.range(of: "</\(element)>", options: .caseInsensitive, range: open.upperBound..<html.endIndex)
            {
                html.removeSubrange(open.lowerBound..<close.upperBound)
            }
        }
        var text = ""
        var inTag = false
        for character in html {
            if character == "<" {
                inTag = true; text.append(" ")
            } else if character == ">" {
                inTag = false
            } else if !inTag {
                text.append(character)
            }
        }
        for (entity, character) in [("&#39;", "'"), ("&#x27;", "'"), ("&quot;", "\""), ("&lt;", "<"), ("&gt;", ">"), ("&amp;", "&")] {
            text = text.replacingOccurrences(of: entity, with: character)
        }
        let words = text.split(whereSeparator: { $0.isWhitespace })
        return String(words.joined(separator: " ").prefix(300))
    }
}
