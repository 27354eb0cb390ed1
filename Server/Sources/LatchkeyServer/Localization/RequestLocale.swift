import Hummingbird

extension Request {
    /// The language to answer this request in (see `LocaleNegotiator` for the precedence).
    func locale(explicit: String? = nil, uiLocales: String? = nil) -> SupportedLocale {
        LocaleNegotiator.negotiate(explicit: explicit, uiLocales: uiLocales, acceptLanguage: headers[.acceptLanguage])
    }
}
