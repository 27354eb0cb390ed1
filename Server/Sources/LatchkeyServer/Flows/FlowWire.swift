import Foundation
import LatchkeyJOSE

/// `POST /flow/execute` request (thunderID `FlowRequest`).
struct FlowRequest: Decodable {
    var applicationId: String?
    var flowType: String?
    var executionId: String?
    var challengeToken: String?
    var action: String?
    var inputs: [String: String]?
    var verbose: Bool?
    /// Our extension: the language the client wants messages in (ahead of `Accept-Language`).
    var locale: String?
}

/// `POST /flow/execute` response (thunderID `FlowResponse`).
struct FlowResponse: Encodable {
    var executionId: String
    var flowStatus: String
    var type: String?
    var challengeToken: String?
    var data: FlowData
    var assertion: String?
    var error: FlowErrorBody?

    struct FlowData: Encodable {
        var inputs: [FlowInputSpecWire]?
        var actions: [FlowActionWire]?
        var redirectURL: String?
        var meta: Meta?
        var additionalData: [String: String]?
        var fieldErrors: [FieldError]?
    }

    /// `components` as thunderID sends them (labels are `{{ t(ns:key) }}` templates), plus our addition: the texts
    /// those templates name, in the execution's `language`, so a client can render the step without another call.
    struct Meta: Encodable {
        var components: [JSONValue]
        var language: String?
        var translations: [String: [String: String]]?
    }
    struct FieldError: Encodable, Equatable { var identifier: String; var message: String }

    struct FlowInputSpecWire: Encodable {
        var ref: String
        var identifier: String
        var type: String
        var required: Bool
        var options: [String]?
        var validation: [FlowValidationRule]?
        var oneTimeUse: Bool?
        /// The input as sent, its rules' messages in `locale` (rules with a catalog `key`).
        init(_ spec: FlowInputSpec, locale: SupportedLocale = .en) {
            ref = spec.ref; identifier = spec.identifier; type = spec.type; required = spec.required; options = spec.options
            validation = spec.validation?.map { rule in
                var localized = rule
                if rule.key != nil { localized.message = FlowEngine.message(rule, locale: locale) }
                return localized
            }
            oneTimeUse = spec.type == "OTP_INPUT" ? true : nil
        }
    }

    struct FlowActionWire: Encodable {
        var ref: String
        var type: String?
        var nextNode: String
        init(_ spec: FlowActionSpec) { ref = spec.ref; type = spec.type; nextNode = spec.next }
    }
}

/// `{code, message{key, defaultValue}, description{key, defaultValue}}` inside a flow response.
struct FlowErrorBody: Encodable {
    struct I18n: Encodable { var key: String; var defaultValue: String }
    var code: String
    var message: I18n
    var description: I18n
}
