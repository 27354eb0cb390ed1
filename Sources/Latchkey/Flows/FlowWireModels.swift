import Foundation

/// The server's `FlowResponse` as it arrives (thunderID wire shape); mapped to `EmbeddedFlowResponse`.
struct FlowWireResponse: Decodable {
    var executionId: String?
    var flowStatus: String?
    var type: String?
    var challengeToken: String?
    var data: WireData?
    var assertion: String?
    var error: WireError?

    struct WireData: Decodable {
        var inputs: [WireInput]?
        var actions: [WireAction]?
        var redirectURL: String?
        var meta: WireMeta?
        var additionalData: [String: String]?
        var fieldErrors: [WireFieldError]?
    }
    struct WireInput: Decodable {
        var ref: String?
        var identifier: String
        var type: String?
        var required: Bool?
        var options: [String]?
        var validation: [WireRule]?
        var oneTimeUse: Bool?
    }
    struct WireRule: Decodable { var type: String; var value: JSONValue; var message: String? }
    struct WireAction: Decodable { var ref: String; var type: String?; var nextNode: String? }
    /// `translations`/`language` are our server's addition: the component labels' texts in the execution's language.
    struct WireMeta: Decodable { var components: [JSONValue]?; var language: String?; var translations: [String: [String: String]]? }
    struct WireFieldError: Decodable { var identifier: String; var message: String }
}

/// thunderID `{code, message{key, defaultValue}, description{key, defaultValue}}` (flow, users, scim errors).
struct WireError: Decodable {
    struct I18n: Decodable { var key: String?; var defaultValue: String? }
    var code: String?
    var message: I18n?
    var description: I18n?
}

/// `GET /flow/meta`: what a client needs to render flows itself.
public struct FlowMeta: Sendable, Equatable {
    /// The application a flow belongs to, as `/flow/meta` describes it (name, logo …).
    public struct Application: Sendable, Equatable {
        public var id: String
        public var name: String?
        public var logoUrl: String?
    }
    public var isRegistrationFlowEnabled: Bool
    public var isRecoveryFlowEnabled: Bool
    public var application: Application?
    public var languages: [String]
    public var language: String
    /// namespace → key → text, for `{{ t(namespace:key) }}` labels.
    public var translations: [String: [String: String]]

    /// Resolves `{{ t(ns:key) }}` and `{{ meta(application.name) }}` templates in a label; unknown keys stay visible
    /// as the key itself rather than as template syntax.
    public func resolve(_ label: String) -> String {
        guard label.contains("{{") else { return label }
        var out = ""
        var rest = Substring(label)
        while let open = rest.range(of: "{{") {
            out += rest[..<open.lowerBound]
            guard let close = rest[open.upperBound...].range(of: "}}") else { out += rest[open.lowerBound...]; return out }
            let expression = rest[open.upperBound..<close.lowerBound].trimmingCharacters(in: .whitespaces)
            out += evaluate(expression)
            rest = rest[close.upperBound...]
        }
        return out + rest
    }

    private func evaluate(_ expression: String) -> String {
        func argument(_ prefix: String) -> String? {
            guard expression.hasPrefix(prefix + "("), expression.hasSuffix(")") else { return nil }
            return String(expression.dropFirst(prefix.count + 1).dropLast()).trimmingCharacters(in: .whitespaces)
        }
        if let key = argument("t") {
            let parts = key.split(separator: ":", maxSplits: 1).map(String.init)
            if parts.count == 2 { return translations[parts[0]]?[parts[1]] ?? parts[1] }
            return translations.values.lazy.compactMap { $0[key] }.first ?? key
        }
        if let path = argument("meta") {
            switch path {
            case "application.name": return application?.name ?? ""
            case "application.logoUrl": return application?.logoUrl ?? ""
            default: return ""
            }
        }
        return expression
    }
}

struct FlowMetaWire: Decodable {
    struct App: Decodable { var id: String?; var name: String?; var logoUrl: String? }
    struct I18n: Decodable { var languages: [String]?; var language: String?; var translations: [String: [String: String]]? }
    var isRegistrationFlowEnabled: Bool?
    var isRecoveryFlowEnabled: Bool?
    var application: App?
    var i18n: I18n?

    var model: FlowMeta {
        FlowMeta(
            isRegistrationFlowEnabled: isRegistrationFlowEnabled ?? false, isRecoveryFlowEnabled: isRecoveryFlowEnabled ?? false,
            application: application.map { .init(id: $0.id ?? "", name: $0.name, logoUrl: $0.logoUrl) },
            languages: i18n?.languages ?? [], language: i18n?.language ?? "en", translations: i18n?.translations ?? [:])
    }
}
