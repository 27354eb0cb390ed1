import Foundation

/// What a person reads for the passkey outcomes the SDK raises itself — the system sheet closed, no passkey on the
/// device, the app not associated with the relying party, another request already showing, passkeys not available
/// here, a passkey already on the device — in the SDK's 15 languages.
///
/// The server's errors come with their own words, already localized (`LatchkeyError.userMessage` from
/// `error_user_msg`); these are for the errors no server answered. The client attaches them (`userMessage`,
/// `errorUserMsg`) in the first of `LatchkeyConfig.preferredLanguages` (the device's by default) this catalog speaks,
/// so the core, LatchkeyApple and the SwiftUI components all show the same sentence. The texts are written for the
/// person, not the developer: no codes, no "RP ID"; what a developer must fix is in `LatchkeyError.message`.
public enum PasskeyErrorMessages {
    /// The codes that have a message.
    public static let codes: [LatchkeyError.Code] = [
        .passkeyCanceled, .passkeyNoCredential, .passkeyDomainNotAssociated, .passkeyRequestInProgress, .passkeyNotSupported,
        .passkeyAlreadyRegistered
    ]

    /// The message for `code` in `language` (one of `LanguagePreferences.sdkLanguages`; another tag is resolved
    /// first), English when the table lacks it; nil for a code without a message.
    public static func message(for code: LatchkeyError.Code, language: String) -> String? {
        guard let key = Key(code) else { return nil }
        let resolved = tables[language] != nil ? language : LanguagePreferences.sdkLanguage(for: [language])
        return tables[resolved]?[key] ?? english[key]
    }

    /// The message for `code` in the first of `preferredLanguages` the SDK speaks (English when none).
    public static func message(for code: LatchkeyError.Code, preferredLanguages: [String]) -> String? {
        message(for: code, language: LanguagePreferences.sdkLanguage(for: preferredLanguages))
    }

    /// One message of the catalog (the codes, without the ones it has no words for).
    enum Key: CaseIterable {
        case canceled, noCredential, domainNotAssociated, requestInProgress, notSupported, alreadyRegistered

        init?(_ code: LatchkeyError.Code) {
            switch code {
            case .passkeyCanceled: self = .canceled
            case .passkeyNoCredential: self = .noCredential
            case .passkeyDomainNotAssociated: self = .domainNotAssociated
            case .passkeyRequestInProgress: self = .requestInProgress
            case .passkeyNotSupported: self = .notSupported
            case .passkeyAlreadyRegistered: self = .alreadyRegistered
            default: return nil
            }
        }
    }

    /// Every table, by the tags of `LanguagePreferences.sdkLanguages`; each holds every key (`PasskeyErrorMessagesTests`).
    static let tables: [String: [Key: String]] = [
        "en": english, "ar": arabic, "de": german, "es": spanish, "fr": french, "hu": hungarian, "it": italian,
        "ja": japanese, "ko": korean, "nl": dutch, "pt": portuguese, "ru": russian, "sk": slovak,
        "zh-Hans": chineseSimplified, "zh-Hant": chineseTraditional
    ]

    static let english: [Key: String] = [
        .canceled: "The passkey request was cancelled.",
        .noCredential: "No passkey for this account was found on this device. Sign in another way, or use a passkey from another device.",
        .domainNotAssociated: "Passkeys can't be used with this app right now. Please sign in another way.",
        .requestInProgress: "Another sign-in request is already open. Finish or close it, then try again.",
        .notSupported: "Passkeys aren't available on this device. Please sign in another way.",
        .alreadyRegistered: "This device already has a passkey for your account."
    ]

    static let arabic: [Key: String] = [
        .canceled: "تم إلغاء طلب مفتاح المرور.",
        .noCredential: "لم يُعثر على مفتاح مرور لهذا الحساب على هذا الجهاز. سجّل الدخول بطريقة أخرى، أو استخدم مفتاح مرور من جهاز آخر.",
        .domainNotAssociated: "لا يمكن استخدام مفاتيح المرور مع هذا التطبيق حاليًا. يُرجى تسجيل الدخول بطريقة أخرى.",
        .requestInProgress: "هناك طلب تسجيل دخول آخر مفتوح بالفعل. أكمِله أو أغلقه، ثم حاول مرة أخرى.",
        .notSupported: "مفاتيح المرور غير متاحة على هذا الجهاز. يُرجى تسجيل الدخول بطريقة أخرى.",
        .alreadyRegistered: "يحتوي هذا الجهاز بالفعل على مفتاح مرور لحسابك."
    ]

    static let german: [Key: String] = [
        .canceled: "Die Passkey-Anfrage wurde abgebrochen.",
        .noCredential:
            "Auf diesem Gerät wurde kein Passkey für dieses Konto gefunden. Melden Sie sich auf andere Weise an oder verwenden Sie einen Passkey von einem anderen Gerät.",
        .domainNotAssociated: "Passkeys können mit dieser App derzeit nicht verwendet werden. Bitte melden Sie sich auf andere Weise an.",
        .requestInProgress: "Es ist bereits eine andere Anmeldeanfrage geöffnet. Beenden oder schließen Sie sie und versuchen Sie es dann erneut.",
        .notSupported: "Passkeys sind auf diesem Gerät nicht verfügbar. Bitte melden Sie sich auf andere Weise an.",
        .alreadyRegistered: "Dieses Gerät hat bereits einen Passkey für Ihr Konto."
    ]

    static let spanish: [Key: String] = [
        .canceled: "Se canceló la solicitud de la llave de acceso.",
        .noCredential:
            "No se encontró ninguna llave de acceso para esta cuenta en este dispositivo. Inicie sesión de otra forma o use una llave de acceso de otro dispositivo.",
        .domainNotAssociated: "Las llaves de acceso no se pueden usar con esta app en este momento. Inicie sesión de otra forma.",
        .requestInProgress: "Ya hay otra solicitud de inicio de sesión abierta. Termínela o ciérrela y vuelva a intentarlo.",
        .notSupported: "Las llaves de acceso no están disponibles en este dispositivo. Inicie sesión de otra forma.",
        .alreadyRegistered: "Este dispositivo ya tiene una llave de acceso para su cuenta."
    ]

    static let french: [Key: String] = [
        .canceled: "La demande de clé d’accès a été annulée.",
        .noCredential:
            "Aucune clé d’accès pour ce compte n’a été trouvée sur cet appareil. Connectez-vous autrement ou utilisez une clé d’accès d’un autre appareil.",
        .domainNotAssociated: "Les clés d’accès ne peuvent pas être utilisées avec cette app pour le moment. Veuillez vous connecter autrement.",
        .requestInProgress: "Une autre demande de connexion est déjà ouverte. Terminez-la ou fermez-la, puis réessayez.",
        .notSupported: "Les clés d’accès ne sont pas disponibles sur cet appareil. Veuillez vous connecter autrement.",
        .alreadyRegistered: "Cet appareil possède déjà une clé d’accès pour votre compte."
    ]

    static let hungarian: [Key: String] = [
        .canceled: "A jelkulcsos kérés megszakadt.",
        .noCredential:
            "Ezen az eszközön nem található jelkulcs ehhez a fiókhoz. Jelentkezzen be más módon, vagy használjon egy másik eszközön lévő jelkulcsot.",
        .domainNotAssociated: "A jelkulcsok jelenleg nem használhatók ezzel az alkalmazással. Kérjük, jelentkezzen be más módon.",
        .requestInProgress: "Már meg van nyitva egy másik bejelentkezési kérés. Fejezze be vagy zárja be, majd próbálja újra.",
        .notSupported: "Ezen az eszközön nem érhetők el jelkulcsok. Kérjük, jelentkezzen be más módon.",
        .alreadyRegistered: "Ezen az eszközön már van jelkulcs a fiókjához."
    ]

    static let italian: [Key: String] = [
        .canceled: "La richiesta della passkey è stata annullata.",
        .noCredential:
            "Su questo dispositivo non è stata trovata alcuna passkey per questo account. Accedi in un altro modo o usa una passkey di un altro dispositivo.",
        .domainNotAssociated: "Al momento non è possibile usare le passkey con questa app. Accedi in un altro modo.",
        .requestInProgress: "È già aperta un’altra richiesta di accesso. Completala o chiudila, poi riprova.",
        .notSupported: "Le passkey non sono disponibili su questo dispositivo. Accedi in un altro modo.",
        .alreadyRegistered: "Questo dispositivo ha già una passkey per il tuo account."
    ]

    static let japanese: [Key: String] = [
        .canceled: "パスキーのリクエストはキャンセルされました。",
        .noCredential: "このデバイスにこのアカウントのパスキーが見つかりません。別の方法でサインインするか、別のデバイスのパスキーを使用してください。",
        .domainNotAssociated: "現在、このアプリではパスキーを使用できません。別の方法でサインインしてください。",
        .requestInProgress: "別のサインインリクエストがすでに開いています。完了するか閉じてから、もう一度お試しください。",
        .notSupported: "このデバイスではパスキーを使用できません。別の方法でサインインしてください。",
        .alreadyRegistered: "このデバイスには、お使いのアカウントのパスキーがすでにあります。"
    ]

    static let korean: [Key: String] = [
        .canceled: "패스키 요청이 취소되었습니다.",
        .noCredential: "이 기기에서 이 계정의 패스키를 찾을 수 없습니다. 다른 방법으로 로그인하거나 다른 기기의 패스키를 사용하십시오.",
        .domainNotAssociated: "현재 이 앱에서는 패스키를 사용할 수 없습니다. 다른 방법으로 로그인하십시오.",
        .requestInProgress: "다른 로그인 요청이 이미 열려 있습니다. 해당 요청을 완료하거나 닫은 후 다시 시도하십시오.",
        .notSupported: "이 기기에서는 패스키를 사용할 수 없습니다. 다른 방법으로 로그인하십시오.",
        .alreadyRegistered: "이 기기에 이미 계정의 패스키가 있습니다."
    ]

    static let dutch: [Key: String] = [
        .canceled: "Het verzoek om de toegangssleutel is geannuleerd.",
        .noCredential:
            "Er is op dit apparaat geen toegangssleutel voor dit account gevonden. Log op een andere manier in of gebruik een toegangssleutel van een ander apparaat.",
        .domainNotAssociated: "Toegangssleutels kunnen op dit moment niet met deze app worden gebruikt. Log op een andere manier in.",
        .requestInProgress: "Er is al een ander inlogverzoek geopend. Rond het af of sluit het en probeer het daarna opnieuw.",
        .notSupported: "Toegangssleutels zijn niet beschikbaar op dit apparaat. Log op een andere manier in.",
        .alreadyRegistered: "Dit apparaat heeft al een toegangssleutel voor uw account."
    ]

    static let portuguese: [Key: String] = [
        .canceled: "A solicitação da chave-senha foi cancelada.",
        .noCredential:
            "Nenhuma chave-senha desta conta foi encontrada neste dispositivo. Entre de outra forma ou use uma chave-senha de outro dispositivo.",
        .domainNotAssociated: "No momento, não é possível usar chaves-senha com este app. Entre de outra forma.",
        .requestInProgress: "Já existe outra solicitação de login aberta. Conclua-a ou feche-a e tente novamente.",
        .notSupported: "As chaves-senha não estão disponíveis neste dispositivo. Entre de outra forma.",
        .alreadyRegistered: "Este dispositivo já tem uma chave-senha para sua conta."
    ]

    static let russian: [Key: String] = [
        .canceled: "Запрос ключа входа отменён.",
        .noCredential:
            "На этом устройстве не найден ключ входа для этой учётной записи. Войдите другим способом или используйте ключ входа с другого устройства.",
        .domainNotAssociated: "Сейчас ключи входа нельзя использовать в этом приложении. Войдите другим способом.",
        .requestInProgress: "Уже открыт другой запрос на вход. Завершите или закройте его и повторите попытку.",
        .notSupported: "Ключи входа недоступны на этом устройстве. Войдите другим способом.",
        .alreadyRegistered: "На этом устройстве уже есть ключ входа для вашей учётной записи."
    ]

    static let slovak: [Key: String] = [
        .canceled: "Žiadosť o prístupový kľúč bola zrušená.",
        .noCredential:
            "V tomto zariadení sa nenašiel žiadny prístupový kľúč pre tento účet. Prihláste sa iným spôsobom alebo použite prístupový kľúč z iného zariadenia.",
        .domainNotAssociated: "Prístupové kľúče momentálne nie je možné s touto aplikáciou použiť. Prihláste sa iným spôsobom.",
        .requestInProgress: "Už je otvorená iná žiadosť o prihlásenie. Dokončite ju alebo ju zatvorte a skúste to znova.",
        .notSupported: "Prístupové kľúče nie sú v tomto zariadení k dispozícii. Prihláste sa iným spôsobom.",
        .alreadyRegistered: "Toto zariadenie už má prístupový kľúč pre váš účet."
    ]

    static let chineseSimplified: [Key: String] = [
        .canceled: "通行密钥请求已取消。",
        .noCredential: "在此设备上找不到此账户的通行密钥。请使用其他方式登录，或使用其他设备上的通行密钥。",
        .domainNotAssociated: "目前无法在此应用中使用通行密钥。请使用其他方式登录。",
        .requestInProgress: "另一个登录请求已在进行中。请完成或关闭该请求，然后重试。",
        .notSupported: "此设备不支持通行密钥。请使用其他方式登录。",
        .alreadyRegistered: "此设备上已有您账户的通行密钥。"
    ]

    static let chineseTraditional: [Key: String] = [
        .canceled: "通行密鑰請求已取消。",
        .noCredential: "在此裝置上找不到此帳號的通行密鑰。請使用其他方式登入，或使用其他裝置上的通行密鑰。",
        .domainNotAssociated: "目前無法在此 App 中使用通行密鑰。請使用其他方式登入。",
        .requestInProgress: "另一個登入請求已在進行中。請完成或關閉該請求，然後再試一次。",
        .notSupported: "此裝置不支援通行密鑰。請使用其他方式登入。",
        .alreadyRegistered: "此裝置上已有您帳號的通行密鑰。"
    ]
}

extension LatchkeyError {
    /// This error with the catalog's words for the person (`PasskeyErrorMessages`) in the first of `preferredLanguages`
    /// the SDK speaks, when it is an outcome the SDK raised itself (no server answer: the server's own message is
    /// never replaced) and the catalog has words for its code; otherwise unchanged.
    package func withPasskeyUserMessage(preferredLanguages: [String]) -> LatchkeyError {
        guard apiError == nil, statusCode == nil,
            let text = PasskeyErrorMessages.message(for: code, preferredLanguages: preferredLanguages)
        else { return self }
        var error = self
        error.userMessage = text
        return error
    }
}
