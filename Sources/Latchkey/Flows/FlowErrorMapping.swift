import Foundation

/// Server codes (thunderID `FES-`/`FET-`/`ICS-`/`USR-`/`AUTH-`/`SSE-`) → ThunderID's codes. Some codes mean different
/// things by flow: a wrong one-time code is MFA_FAILED while signing in and CONFIRMATION_CODE_INVALID in recovery.
enum FlowErrorMapping {
    static func code(_ serverCode: String, flowType: EmbeddedFlowType?, status: Int? = nil) -> LatchkeyError.Code {
        let signingIn = flowType == .authentication
        switch serverCode {
        case "FES-1001", "FET-1064", "FLC-1002", "ICS-1001", "ICS-1002", "ICS-1003", "USR-1001", "USR-1017", "USR-1019":
            return .invalidInput
        case "FES-1003", "FES-1005", "FES-1010", "FES-1011", "FES-1012", "FES-1014", "FES-1015", "FES-1016", "FES-1017", "USR-1021":
            return .invalidConfiguration
        case "FES-1004": return .sessionExpired
        case "FES-1006", "FET-1026", "FET-1052", "FET-1059": return .registrationDisabled
        case "FES-1009", "FET-1094": return .recoveryFailed
        case "FET-1001", "FET-1004", "FET-1005", "FET-1006", "FET-1095": return .authenticationFailed
        case "FET-1007", "FET-1061", "FET-1080", "USR-1014": return .userAlreadyExists
        case "FET-1008": return signingIn ? .mfaFailed : .confirmationCodeInvalid
        case "FET-1009": return signingIn ? .mfaFailed : flowType == .recovery ? .recoveryFailed : .confirmationCodeInvalid
        case "FET-1093": return signingIn ? .mfaFailed : .confirmationCodeExpired
        case "FET-1066", "FET-1069": return .consentRequired
        case "FET-1073": return .invitationCodeInvalid
        case "FET-1074": return .invitationCodeExpired
        case "FET-1016": return .passkeyNoCredential
        case "FET-1018", "FET-1019": return .passkeyFailed
        case "FET-1090": return .userAccountLocked
        case "FET-1091": return .userAccountDisabled
        case "FET-1092": return .mfaRequired
        case "AUTH-4010": return .sessionExpired
        case "SSE-5000": return .serverError
        default:
            if let status, status >= 500 { return .serverError }
            if serverCode.hasPrefix("FET-") { return .authenticationFailed }
            return .unknownError
        }
    }

    /// An HTTP error answer of the flow/profile APIs as an SDK error; the user message rides in `apiError`
    /// (`errorUserMsg`), so one error type serves both error models (ThunderID's and ReachFive's).
    static func error(from response: HTTPResponse, flowType: EmbeddedFlowType?) -> LatchkeyError {
        guard let body = try? JSONDecoder().decode(WireError.self, from: response.body), let serverCode = body.code else {
            return OAuthClient.errorFrom(response)
        }
        let code = self.code(serverCode, flowType: flowType, status: response.status)
        let technical = body.description?.defaultValue ?? body.message?.defaultValue ?? "HTTP \(response.status)"
        let api = LatchkeyError.ApiError(
            error: serverCode, errorId: nil, errorUserMsg: body.message?.defaultValue,
            errorMessageKey: body.message?.key, errorDescription: technical, errorDetails: nil)
        return LatchkeyError(code, "\(serverCode): \(technical)", statusCode: response.status, serverCode: serverCode, apiError: api)
    }
}
