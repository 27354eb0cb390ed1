#if !canImport(AuthenticationServices)
import Foundation

/// `ASAuthorizationErrorDomain`.
public let ASAuthorizationErrorDomain = "com.apple.AuthenticationServices.AuthorizationError"

/// Stand-in for the Swift import of `ASAuthorizationError` (`ASAuthorizationErrorCode` in Objective-C).
///
/// Like every imported `NS_ERROR_ENUM` error it wraps an `NSError`: a code and a user-info dictionary, in which the
/// system says what the code does not. Apple declares no key or code of its own there (the iOS 17.4 and 18.0 headers
/// list only the codes below); what arrives is Foundation's: `NSLocalizedFailureReasonErrorKey` (for `.failed`, for
/// instance "Application with identifier … is not associated with domain …") and `NSUnderlyingErrorKey` (the
/// credential daemon's own error). `@unchecked Sendable` as the real one: its dictionary holds immutable values.
public struct ASAuthorizationError: StandInCodedError, @unchecked Sendable {
    /// The codes and raw values of `ASAuthorizationErrorCode`.
    public enum Code: Int, Sendable, Hashable, StandInErrorCode {
        public typealias ErrorType = ASAuthorizationError
        case unknown = 1000
        /// The user canceled; also the answer to `preferImmediatelyAvailableCredentials` when nothing is available.
        case canceled = 1001
        case invalidResponse = 1002
        case notHandled = 1003
        case failed = 1004
        /// The request needed UI it was not allowed to show (iOS 15).
        case notInteractive = 1005
        /// A registration matched one of `excludedCredentials` (iOS 18).
        case matchedExcludedCredential = 1006
        case credentialImport = 1007
        case credentialExport = 1008
    }

    /// The error's code.
    public let code: Code
    /// The user-info dictionary (`NSError.userInfo`).
    public let userInfo: [String: Any]

    /// An error with `code` and `userInfo` (Foundation's `init(_:userInfo:)` of imported error codes).
    public init(_ code: Code, userInfo: [String: Any] = [:]) {
        self.code = code
        self.userInfo = userInfo
    }

    /// `userInfo`, for bridging to `NSError`.
    public var errorUserInfo: [String: Any] { userInfo }

    /// Equal codes and equal user-info dictionaries, as `NSError.isEqual(_:)` compares them.
    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.code == rhs.code && NSDictionary(dictionary: lhs.userInfo).isEqual(to: rhs.userInfo)
    }

    /// The code's hash (the dictionary's values need not be hashable).
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }

    public static let unknown = Code.unknown
    public static let canceled = Code.canceled
    public static let invalidResponse = Code.invalidResponse
    public static let notHandled = Code.notHandled
    public static let failed = Code.failed
    public static let notInteractive = Code.notInteractive
    public static let matchedExcludedCredential = Code.matchedExcludedCredential
    public static var errorDomain: String { ASAuthorizationErrorDomain }
}

/// What the Swift import of an `NS_ERROR_ENUM` gives both stand-in error types: an error struct around an `Int` code.
public protocol StandInCodedError: CustomNSError, Hashable, Sendable {
    associatedtype Code: StandInErrorCode where Code.ErrorType == Self
    /// The error's code.
    var code: Code { get }
}

extension StandInCodedError {
    public var errorCode: Int { code.rawValue }
}

/// The code of a `StandInCodedError`, knowing its error type (Foundation's `_ErrorCodeProtocol`).
public protocol StandInErrorCode: RawRepresentable, Hashable, Sendable where RawValue == Int {
    associatedtype ErrorType: StandInCodedError where ErrorType.Code == Self
}

/// `catch ASAuthorizationError.canceled` matching, as Foundation provides for Apple's imported error codes.
public func ~= <Code: StandInErrorCode>(code: Code, error: any Error) -> Bool { (error as? Code.ErrorType)?.code == code }
#endif
