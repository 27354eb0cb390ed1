import Foundation

// The component texts in the 14 languages other than English; every table holds every key of `UIText`.
extension UIStrings {
    static let arabic: [UIText: String] = [
        .signIn: "تسجيل الدخول", .signUp: "إنشاء حساب", .signOut: "تسجيل الخروج", .continueAction: "متابعة", .save: "حفظ",
        .saving: "جارٍ الحفظ…", .loading: "جارٍ التحميل…", .retry: "إعادة المحاولة", .startOver: "البدء من جديد",
        .usePasskey: "استخدام مفتاح المرور",
        .useRecoveryCode: "استخدام رمز استرداد بدلًا من ذلك",
        .signInWithBrowser: "تسجيل الدخول عبر المتصفح",
        .fieldRequired: "هذا الحقل مطلوب", .chooseOption: "اختر أحد الخيارات", .invalidValue: "القيمة غير صالحة",
        .sessionExpired: "انتهت جلستك. يُرجى تسجيل الدخول مرة أخرى.",
        .networkError: "يتعذّر الوصول إلى الخادم. تحقّق من اتصالك وحاول مرة أخرى.",
        .serverError: "تواجه الخدمة مشكلة. يُرجى المحاولة مرة أخرى بعد قليل.",
        .storageUnavailable: "افتح قفل جهازك للمتابعة.",
        .confirmItsYou: "أكّد هويتك للمتابعة.",
        .genericError: "حدث خطأ ما. يُرجى المحاولة مرة أخرى.",
        .flowExpired: "استغرق الأمر وقتًا طويلًا، لذا بدأنا من جديد.",
        .profileConflict: "تم تغيير ملفك الشخصي من مكان آخر. يُعرض أحدث إصدار مع تعديلاتك: راجعها واحفظ مرة أخرى.",
        .profileSaved: "تم حفظ ملفك الشخصي.", .codeSent: "أرسلنا إليك رمزًا عبر البريد الإلكتروني.",
        .displayName: "الاسم المعروض", .givenName: "الاسم الأول", .familyName: "اسم العائلة", .email: "البريد الإلكتروني",
        .phoneNumber: "رقم الهاتف", .locale: "اللغة",
        .deleteAccount: "حذف الحساب", .deleteAccountTitle: "هل تريد حذف حسابك؟",
        .deleteAccountWarning:
            "سيتم حذف ملفك الشخصي ومفاتيح المرور وعوامل التحقق الثانية والحسابات المرتبطة والأذونات التي منحتها للتطبيقات، وسيتم تسجيل خروجك على جميع الأجهزة. لا يمكن التراجع عن هذا الإجراء.",
        .delete: "حذف", .cancel: "إلغاء", .deleting: "جارٍ الحذف…", .accountDeleted: "تم حذف حسابك.",
        .accountDeletionScheduled: "سيتم حذف حسابك في {date}. سجّل الدخول مرة أخرى قبل ذلك التاريخ للاحتفاظ به.",
        .signInAgainToContinue: "حفاظًا على أمانك، سجّل الدخول مرة أخرى، ثم حاول مجددًا."
    ]

    static let german: [UIText: String] = [
        .signIn: "Anmelden", .signUp: "Konto erstellen", .signOut: "Abmelden", .continueAction: "Weiter", .save: "Speichern",
        .saving: "Wird gespeichert…", .loading: "Wird geladen…", .retry: "Erneut versuchen", .startOver: "Neu beginnen",
        .usePasskey: "Passkey verwenden",
        .useRecoveryCode: "Stattdessen einen Wiederherstellungscode verwenden",
        .signInWithBrowser: "Mit dem Browser anmelden",
        .fieldRequired: "Dieses Feld ist erforderlich", .chooseOption: "Wählen Sie eine der Optionen", .invalidValue: "Der Wert ist ungültig",
        .sessionExpired: "Ihre Sitzung ist abgelaufen. Bitte melden Sie sich erneut an.",
        .networkError: "Der Server ist nicht erreichbar. Überprüfen Sie Ihre Verbindung und versuchen Sie es erneut.",
        .serverError: "Beim Dienst ist ein Problem aufgetreten. Bitte versuchen Sie es gleich noch einmal.",
        .storageUnavailable: "Entsperren Sie Ihr Gerät, um fortzufahren.",
        .confirmItsYou: "Bestätigen Sie Ihre Identität, um fortzufahren.",
        .genericError: "Etwas ist schiefgelaufen. Bitte versuchen Sie es erneut.",
        .flowExpired: "Das hat zu lange gedauert, daher haben wir neu begonnen.",
        .profileConflict:
            "Ihr Profil wurde an anderer Stelle geändert. Die neueste Version wird mit Ihren Änderungen angezeigt: Prüfen Sie sie und speichern Sie erneut.",
        .profileSaved: "Ihr Profil wurde gespeichert.", .codeSent: "Wir haben Ihnen einen Code per E-Mail gesendet.",
        .displayName: "Anzeigename", .givenName: "Vorname", .familyName: "Nachname", .email: "E-Mail",
        .phoneNumber: "Telefonnummer", .locale: "Sprache",
        .deleteAccount: "Konto löschen", .deleteAccountTitle: "Möchten Sie Ihr Konto löschen?",
        .deleteAccountWarning:
            "Ihr Profil, Ihre Passkeys, zweiten Faktoren, verknüpften Konten und die Berechtigungen, die Sie Apps erteilt haben, werden gelöscht, und Sie werden auf allen Geräten abgemeldet. Dies kann nicht rückgängig gemacht werden.",
        .delete: "Löschen", .cancel: "Abbrechen", .deleting: "Wird gelöscht…", .accountDeleted: "Ihr Konto wurde gelöscht.",
        .accountDeletionScheduled: "Ihr Konto wird am {date} gelöscht. Melden Sie sich vorher erneut an, um es zu behalten.",
        .signInAgainToContinue: "Melden Sie sich zu Ihrer Sicherheit erneut an und versuchen Sie es dann noch einmal."
    ]

    static let spanish: [UIText: String] = [
        .signIn: "Iniciar sesión", .signUp: "Crear cuenta", .signOut: "Cerrar sesión", .continueAction: "Continuar", .save: "Guardar",
        .saving: "Guardando…", .loading: "Cargando…", .retry: "Reintentar", .startOver: "Empezar de nuevo",
        .usePasskey: "Usar una llave de acceso",
        .useRecoveryCode: "Usar un código de recuperación en su lugar",
        .signInWithBrowser: "Iniciar sesión con el navegador",
        .fieldRequired: "Este campo es obligatorio", .chooseOption: "Elija una de las opciones", .invalidValue: "El valor no es válido",
        .sessionExpired: "Su sesión ha finalizado. Vuelva a iniciar sesión.",
        .networkError: "No se puede conectar con el servidor. Compruebe su conexión e inténtelo de nuevo.",
        .serverError: "El servicio tiene un problema. Inténtelo de nuevo en unos momentos.",
        .storageUnavailable: "Desbloquee su dispositivo para continuar.",
        .confirmItsYou: "Confirme su identidad para continuar.",
        .genericError: "Algo salió mal. Inténtelo de nuevo.",
        .flowExpired: "Tardó demasiado, así que volvimos a empezar.",
        .profileConflict: "Su perfil se modificó en otro lugar. Se muestra la versión más reciente con sus cambios: revíselos y vuelva a guardar.",
        .profileSaved: "Se guardó su perfil.", .codeSent: "Le enviamos un código por correo electrónico.",
        .displayName: "Nombre para mostrar", .givenName: "Nombre", .familyName: "Apellidos", .email: "Correo electrónico",
        .phoneNumber: "Número de teléfono", .locale: "Idioma",
        .deleteAccount: "Eliminar cuenta", .deleteAccountTitle: "¿Eliminar su cuenta?",
        .deleteAccountWarning:
            "Se eliminarán su perfil, sus llaves de acceso, sus segundos factores, sus cuentas vinculadas y los permisos que concedió a las aplicaciones, y se cerrará su sesión en todos los dispositivos. Esta acción no se puede deshacer.",
        .delete: "Eliminar", .cancel: "Cancelar", .deleting: "Eliminando…", .accountDeleted: "Se eliminó su cuenta.",
        .accountDeletionScheduled: "Su cuenta se eliminará el {date}. Vuelva a iniciar sesión antes de esa fecha para conservarla.",
        .signInAgainToContinue: "Por su seguridad, vuelva a iniciar sesión y, después, inténtelo de nuevo."
    ]

    static let french: [UIText: String] = [
        .signIn: "Se connecter", .signUp: "Créer un compte", .signOut: "Se déconnecter", .continueAction: "Continuer", .save: "Enregistrer",
        .saving: "Enregistrement…", .loading: "Chargement…", .retry: "Réessayer", .startOver: "Recommencer",
        .usePasskey: "Utiliser une clé d’accès",
        .useRecoveryCode: "Utiliser plutôt un code de récupération",
        .signInWithBrowser: "Se connecter avec le navigateur",
        .fieldRequired: "Ce champ est obligatoire", .chooseOption: "Choisissez l’une des options", .invalidValue: "La valeur n’est pas valide",
        .sessionExpired: "Votre session a expiré. Veuillez vous reconnecter.",
        .networkError: "Impossible de joindre le serveur. Vérifiez votre connexion et réessayez.",
        .serverError: "Le service rencontre un problème. Veuillez réessayer dans un instant.",
        .storageUnavailable: "Déverrouillez votre appareil pour continuer.",
        .confirmItsYou: "Confirmez votre identité pour continuer.",
        .genericError: "Une erreur s’est produite. Veuillez réessayer.",
        .flowExpired: "Cela a pris trop de temps, nous avons donc recommencé.",
        .profileConflict:
            "Votre profil a été modifié ailleurs. La version la plus récente est affichée avec vos modifications : vérifiez-les et enregistrez à nouveau.",
        .profileSaved: "Votre profil a été enregistré.", .codeSent: "Nous vous avons envoyé un code par e-mail.",
        .displayName: "Nom d’affichage", .givenName: "Prénom", .familyName: "Nom", .email: "E-mail",
        .phoneNumber: "Numéro de téléphone", .locale: "Langue",
        .deleteAccount: "Supprimer le compte", .deleteAccountTitle: "Supprimer votre compte ?",
        .deleteAccountWarning:
            "Votre profil, vos clés d’accès, vos seconds facteurs, vos comptes associés et les autorisations que vous avez accordées aux applications seront supprimés, et vous serez déconnecté sur tous vos appareils. Cette action est irréversible.",
        .delete: "Supprimer", .cancel: "Annuler", .deleting: "Suppression…", .accountDeleted: "Votre compte a été supprimé.",
        .accountDeletionScheduled: "Votre compte sera supprimé le {date}. Reconnectez-vous d’ici là pour le conserver.",
        .signInAgainToContinue: "Pour votre sécurité, reconnectez-vous, puis réessayez."
    ]

    static let hungarian: [UIText: String] = [
        .signIn: "Bejelentkezés", .signUp: "Fiók létrehozása", .signOut: "Kijelentkezés", .continueAction: "Folytatás", .save: "Mentés",
        .saving: "Mentés…", .loading: "Betöltés…", .retry: "Újrapróbálkozás", .startOver: "Újrakezdés",
        .usePasskey: "Jelkulcs használata",
        .useRecoveryCode: "Helyreállítási kód használata helyette",
        .signInWithBrowser: "Bejelentkezés böngészővel",
        .fieldRequired: "Ez a mező kötelező", .chooseOption: "Válasszon a lehetőségek közül", .invalidValue: "Az érték érvénytelen",
        .sessionExpired: "A munkamenete véget ért. Kérjük, jelentkezzen be újra.",
        .networkError: "A szerver nem érhető el. Ellenőrizze a kapcsolatot, és próbálja újra.",
        .serverError: "A szolgáltatásban hiba lépett fel. Kérjük, próbálja újra egy kis idő múlva.",
        .storageUnavailable: "A folytatáshoz oldja fel az eszköz zárolását.",
        .confirmItsYou: "A folytatáshoz erősítse meg a személyazonosságát.",
        .genericError: "Hiba történt. Kérjük, próbálja újra.",
        .flowExpired: "Ez túl sokáig tartott, ezért újrakezdtük.",
        .profileConflict: "A profilját máshol módosították. A legújabb verzió látható az Ön módosításaival: ellenőrizze őket, és mentse újra.",
        .profileSaved: "A profilja mentve.", .codeSent: "E-mailben küldtünk Önnek egy kódot.",
        .displayName: "Megjelenített név", .givenName: "Utónév", .familyName: "Vezetéknév", .email: "E-mail",
        .phoneNumber: "Telefonszám", .locale: "Nyelv",
        .deleteAccount: "Fiók törlése", .deleteAccountTitle: "Törli a fiókját?",
        .deleteAccountWarning:
            "Profilja, jelkulcsai, második hitelesítési tényezői, kapcsolt fiókjai és az alkalmazásoknak adott engedélyei törlődnek, és minden eszközön kijelentkezik. Ez a művelet nem vonható vissza.",
        .delete: "Törlés", .cancel: "Mégse", .deleting: "Törlés…", .accountDeleted: "A fiókja törölve.",
        .accountDeletionScheduled: "A fiókja a következő napon törlődik: {date}. Ha meg szeretné tartani, addig jelentkezzen be újra.",
        .signInAgainToContinue: "Biztonsága érdekében jelentkezzen be újra, majd próbálja meg ismét."
    ]

    static let italian: [UIText: String] = [
        .signIn: "Accedi", .signUp: "Crea account", .signOut: "Esci", .continueAction: "Continua", .save: "Salva",
        .saving: "Salvataggio…", .loading: "Caricamento…", .retry: "Riprova", .startOver: "Ricomincia",
        .usePasskey: "Usa una passkey",
        .useRecoveryCode: "Usa invece un codice di recupero",
        .signInWithBrowser: "Accedi con il browser",
        .fieldRequired: "Questo campo è obbligatorio", .chooseOption: "Scegli una delle opzioni", .invalidValue: "Il valore non è valido",
        .sessionExpired: "La sessione è terminata. Accedi di nuovo.",
        .networkError: "Impossibile raggiungere il server. Controlla la connessione e riprova.",
        .serverError: "Il servizio ha un problema. Riprova tra qualche istante.",
        .storageUnavailable: "Sblocca il dispositivo per continuare.",
        .confirmItsYou: "Conferma la tua identità per continuare.",
        .genericError: "Si è verificato un errore. Riprova.",
        .flowExpired: "Ci è voluto troppo tempo, quindi abbiamo ricominciato.",
        .profileConflict:
            "Il profilo è stato modificato altrove. Viene mostrata la versione più recente con le tue modifiche: controllale e salva di nuovo.",
        .profileSaved: "Il profilo è stato salvato.", .codeSent: "Ti abbiamo inviato un codice via e-mail.",
        .displayName: "Nome visualizzato", .givenName: "Nome", .familyName: "Cognome", .email: "E-mail",
        .phoneNumber: "Numero di telefono", .locale: "Lingua",
        .deleteAccount: "Elimina account", .deleteAccountTitle: "Eliminare il tuo account?",
        .deleteAccountWarning:
            "Il tuo profilo, le passkey, i secondi fattori, gli account collegati e le autorizzazioni che hai concesso alle app verranno eliminati e verrai disconnesso da tutti i dispositivi. Questa operazione non può essere annullata.",
        .delete: "Elimina", .cancel: "Annulla", .deleting: "Eliminazione…", .accountDeleted: "Il tuo account è stato eliminato.",
        .accountDeletionScheduled: "Il tuo account verrà eliminato il {date}. Accedi di nuovo prima di quella data per mantenerlo.",
        .signInAgainToContinue: "Per la tua sicurezza, accedi di nuovo, poi riprova."
    ]

    static let japanese: [UIText: String] = [
        .signIn: "サインイン", .signUp: "アカウントを作成", .signOut: "サインアウト", .continueAction: "続ける", .save: "保存",
        .saving: "保存中…", .loading: "読み込み中…", .retry: "再試行", .startOver: "最初からやり直す",
        .usePasskey: "パスキーを使用",
        .useRecoveryCode: "代わりにリカバリーコードを使う",
        .signInWithBrowser: "ブラウザでサインイン",
        .fieldRequired: "この項目は必須です", .chooseOption: "いずれかのオプションを選択してください", .invalidValue: "値が無効です",
        .sessionExpired: "セッションが終了しました。もう一度サインインしてください。",
        .networkError: "サーバーに接続できません。接続を確認して、もう一度お試しください。",
        .serverError: "サービスで問題が発生しています。しばらくしてからもう一度お試しください。",
        .storageUnavailable: "続けるにはデバイスのロックを解除してください。",
        .confirmItsYou: "続けるには本人確認を行ってください。",
        .genericError: "問題が発生しました。もう一度お試しください。",
        .flowExpired: "時間がかかりすぎたため、最初からやり直しました。",
        .profileConflict: "プロフィールがほかの場所で変更されました。最新のバージョンが編集内容とともに表示されています。内容を確認して、もう一度保存してください。",
        .profileSaved: "プロフィールを保存しました。", .codeSent: "メールでコードを送信しました。",
        .displayName: "表示名", .givenName: "名", .familyName: "姓", .email: "メールアドレス",
        .phoneNumber: "電話番号", .locale: "言語",
        .deleteAccount: "アカウントを削除", .deleteAccountTitle: "アカウントを削除しますか？",
        .deleteAccountWarning: "プロフィール、パスキー、2段階目の認証方法、連携アカウント、アプリに許可した権限が削除され、すべてのデバイスでサインアウトされます。この操作は取り消せません。", .delete: "削除", .cancel: "キャンセル",
        .deleting: "削除中…", .accountDeleted: "アカウントを削除しました。", .accountDeletionScheduled: "アカウントは{date}に削除されます。アカウントを残すには、それまでにもう一度サインインしてください。",
        .signInAgainToContinue: "セキュリティのため、もう一度サインインしてから、再度お試しください。"
    ]

    static let korean: [UIText: String] = [
        .signIn: "로그인", .signUp: "계정 만들기", .signOut: "로그아웃", .continueAction: "계속", .save: "저장",
        .saving: "저장 중…", .loading: "불러오는 중…", .retry: "다시 시도", .startOver: "처음부터 다시 시작",
        .usePasskey: "패스키 사용",
        .useRecoveryCode: "대신 복구 코드 사용",
        .signInWithBrowser: "브라우저로 로그인",
        .fieldRequired: "필수 항목입니다", .chooseOption: "옵션 중 하나를 선택하십시오", .invalidValue: "값이 유효하지 않습니다",
        .sessionExpired: "세션이 종료되었습니다. 다시 로그인하십시오.",
        .networkError: "서버에 연결할 수 없습니다. 연결 상태를 확인한 후 다시 시도하십시오.",
        .serverError: "서비스에 문제가 발생했습니다. 잠시 후 다시 시도하십시오.",
        .storageUnavailable: "계속하려면 기기의 잠금을 해제하십시오.",
        .confirmItsYou: "계속하려면 본인 인증을 하십시오.",
        .genericError: "문제가 발생했습니다. 다시 시도하십시오.",
        .flowExpired: "시간이 너무 오래 걸려 처음부터 다시 시작했습니다.",
        .profileConflict: "프로필이 다른 곳에서 변경되었습니다. 최신 버전이 편집한 내용과 함께 표시됩니다. 내용을 확인한 후 다시 저장하십시오.",
        .profileSaved: "프로필이 저장되었습니다.", .codeSent: "이메일로 코드를 보냈습니다.",
        .displayName: "표시 이름", .givenName: "이름", .familyName: "성", .email: "이메일",
        .phoneNumber: "전화번호", .locale: "언어",
        .deleteAccount: "계정 삭제", .deleteAccountTitle: "계정을 삭제하시겠습니까?",
        .deleteAccountWarning: "프로필, 패스키, 2단계 인증 수단, 연결된 계정 및 앱에 부여한 권한이 삭제되며, 모든 기기에서 로그아웃됩니다. 이 작업은 취소할 수 없습니다.", .delete: "삭제", .cancel: "취소",
        .deleting: "삭제 중…", .accountDeleted: "계정이 삭제되었습니다.", .accountDeletionScheduled: "계정이 {date}에 삭제됩니다. 계정을 유지하려면 그 전에 다시 로그인하십시오.",
        .signInAgainToContinue: "보안을 위해 다시 로그인한 후 다시 시도하십시오."
    ]

    static let dutch: [UIText: String] = [
        .signIn: "Inloggen", .signUp: "Account aanmaken", .signOut: "Uitloggen", .continueAction: "Doorgaan", .save: "Opslaan",
        .saving: "Opslaan…", .loading: "Laden…", .retry: "Opnieuw proberen", .startOver: "Opnieuw beginnen",
        .usePasskey: "Toegangssleutel gebruiken",
        .useRecoveryCode: "In plaats daarvan een herstelcode gebruiken",
        .signInWithBrowser: "Inloggen met de browser",
        .fieldRequired: "Dit veld is verplicht", .chooseOption: "Kies een van de opties", .invalidValue: "De waarde is ongeldig",
        .sessionExpired: "Uw sessie is beëindigd. Log opnieuw in.",
        .networkError: "De server is niet bereikbaar. Controleer uw verbinding en probeer het opnieuw.",
        .serverError: "Er is een probleem met de dienst. Probeer het zo meteen opnieuw.",
        .storageUnavailable: "Ontgrendel uw apparaat om door te gaan.",
        .confirmItsYou: "Bevestig uw identiteit om door te gaan.",
        .genericError: "Er is iets misgegaan. Probeer het opnieuw.",
        .flowExpired: "Dat duurde te lang, dus we zijn opnieuw begonnen.",
        .profileConflict: "Uw profiel is elders gewijzigd. De nieuwste versie wordt getoond met uw wijzigingen: controleer ze en sla opnieuw op.",
        .profileSaved: "Uw profiel is opgeslagen.", .codeSent: "We hebben u een code per e-mail gestuurd.",
        .displayName: "Weergavenaam", .givenName: "Voornaam", .familyName: "Achternaam", .email: "E-mail",
        .phoneNumber: "Telefoonnummer", .locale: "Taal",
        .deleteAccount: "Account verwijderen", .deleteAccountTitle: "Uw account verwijderen?",
        .deleteAccountWarning:
            "Uw profiel, toegangssleutels, tweede factoren, gekoppelde accounts en de toestemmingen die u aan apps hebt gegeven, worden verwijderd en u wordt op al uw apparaten uitgelogd. Dit kan niet ongedaan worden gemaakt.",
        .delete: "Verwijderen", .cancel: "Annuleren", .deleting: "Verwijderen…", .accountDeleted: "Uw account is verwijderd.",
        .accountDeletionScheduled: "Uw account wordt op {date} verwijderd. Log vóór die datum opnieuw in om het te behouden.",
        .signInAgainToContinue: "Log voor uw veiligheid opnieuw in en probeer het daarna nog een keer."
    ]

    static let portuguese: [UIText: String] = [
        .signIn: "Entrar", .signUp: "Criar conta", .signOut: "Sair", .continueAction: "Continuar", .save: "Salvar",
        .saving: "Salvando…", .loading: "Carregando…", .retry: "Tentar novamente", .startOver: "Recomeçar",
        .usePasskey: "Usar uma chave-senha",
        .useRecoveryCode: "Em vez disso, usar um código de recuperação",
        .signInWithBrowser: "Entrar com o navegador",
        .fieldRequired: "Este campo é obrigatório", .chooseOption: "Escolha uma das opções", .invalidValue: "O valor não é válido",
        .sessionExpired: "Sua sessão terminou. Entre novamente.",
        .networkError: "Não foi possível acessar o servidor. Verifique sua conexão e tente novamente.",
        .serverError: "O serviço está com um problema. Tente novamente em instantes.",
        .storageUnavailable: "Desbloqueie o dispositivo para continuar.",
        .confirmItsYou: "Confirme sua identidade para continuar.",
        .genericError: "Algo deu errado. Tente novamente.",
        .flowExpired: "Isso demorou demais, então recomeçamos.",
        .profileConflict: "Seu perfil foi alterado em outro lugar. A versão mais recente é exibida com suas edições: revise-as e salve novamente.",
        .profileSaved: "Seu perfil foi salvo.", .codeSent: "Enviamos um código para você por e-mail.",
        .displayName: "Nome de exibição", .givenName: "Nome", .familyName: "Sobrenome", .email: "E-mail",
        .phoneNumber: "Número de telefone", .locale: "Idioma",
        .deleteAccount: "Excluir conta", .deleteAccountTitle: "Excluir sua conta?",
        .deleteAccountWarning:
            "Seu perfil, suas chaves-senha, seus segundos fatores, suas contas vinculadas e as permissões que você concedeu aos apps serão excluídos, e você sairá de todos os dispositivos. Essa ação não pode ser desfeita.",
        .delete: "Excluir", .cancel: "Cancelar", .deleting: "Excluindo…", .accountDeleted: "Sua conta foi excluída.",
        .accountDeletionScheduled: "Sua conta será excluída em {date}. Entre novamente antes dessa data para mantê-la.",
        .signInAgainToContinue: "Para sua segurança, entre novamente e tente outra vez."
    ]

    static let russian: [UIText: String] = [
        .signIn: "Войти", .signUp: "Создать аккаунт", .signOut: "Выйти", .continueAction: "Продолжить", .save: "Сохранить",
        .saving: "Сохранение…", .loading: "Загрузка…", .retry: "Повторить", .startOver: "Начать заново",
        .usePasskey: "Использовать ключ входа",
        .useRecoveryCode: "Использовать вместо этого код восстановления",
        .signInWithBrowser: "Войти через браузер",
        .fieldRequired: "Это поле обязательно", .chooseOption: "Выберите один из вариантов", .invalidValue: "Недопустимое значение",
        .sessionExpired: "Ваш сеанс завершён. Войдите снова.",
        .networkError: "Сервер недоступен. Проверьте подключение и повторите попытку.",
        .serverError: "В работе сервиса возникла проблема. Повторите попытку чуть позже.",
        .storageUnavailable: "Разблокируйте устройство, чтобы продолжить.",
        .confirmItsYou: "Подтвердите свою личность, чтобы продолжить.",
        .genericError: "Что-то пошло не так. Повторите попытку.",
        .flowExpired: "Это заняло слишком много времени, поэтому мы начали заново.",
        .profileConflict: "Ваш профиль был изменён в другом месте. Показана последняя версия с вашими правками: проверьте их и сохраните снова.",
        .profileSaved: "Ваш профиль сохранён.", .codeSent: "Мы отправили вам код по электронной почте.",
        .displayName: "Отображаемое имя", .givenName: "Имя", .familyName: "Фамилия", .email: "Эл. почта",
        .phoneNumber: "Номер телефона", .locale: "Язык",
        .deleteAccount: "Удалить аккаунт", .deleteAccountTitle: "Удалить аккаунт?",
        .deleteAccountWarning:
            "Ваш профиль, ключи входа, вторые факторы, привязанные аккаунты и разрешения, выданные приложениям, будут удалены, а вы выйдете из аккаунта на всех устройствах. Это действие нельзя отменить.",
        .delete: "Удалить", .cancel: "Отмена", .deleting: "Удаление…", .accountDeleted: "Ваш аккаунт удалён.",
        .accountDeletionScheduled: "Ваш аккаунт будет удалён {date}. Чтобы сохранить его, войдите снова до этой даты.",
        .signInAgainToContinue: "В целях безопасности войдите снова, затем повторите попытку."
    ]

    static let slovak: [UIText: String] = [
        .signIn: "Prihlásiť sa", .signUp: "Vytvoriť účet", .signOut: "Odhlásiť sa", .continueAction: "Pokračovať", .save: "Uložiť",
        .saving: "Ukladá sa…", .loading: "Načítava sa…", .retry: "Skúsiť znova", .startOver: "Začať odznova",
        .usePasskey: "Použiť prístupový kľúč",
        .useRecoveryCode: "Namiesto toho použiť kód na obnovenie",
        .signInWithBrowser: "Prihlásiť sa cez prehliadač",
        .fieldRequired: "Toto pole je povinné", .chooseOption: "Vyberte jednu z možností", .invalidValue: "Hodnota nie je platná",
        .sessionExpired: "Vaša relácia skončila. Prihláste sa znova.",
        .networkError: "Server nie je dostupný. Skontrolujte pripojenie a skúste to znova.",
        .serverError: "Služba má problém. Skúste to znova o chvíľu.",
        .storageUnavailable: "Ak chcete pokračovať, odomknite zariadenie.",
        .confirmItsYou: "Ak chcete pokračovať, potvrďte svoju totožnosť.",
        .genericError: "Niečo sa pokazilo. Skúste to znova.",
        .flowExpired: "Trvalo to príliš dlho, preto sme začali odznova.",
        .profileConflict: "Váš profil bol zmenený inde. Zobrazuje sa najnovšia verzia s vašimi úpravami: skontrolujte ich a znova uložte.",
        .profileSaved: "Váš profil bol uložený.", .codeSent: "Poslali sme vám kód e-mailom.",
        .displayName: "Zobrazované meno", .givenName: "Meno", .familyName: "Priezvisko", .email: "E-mail",
        .phoneNumber: "Telefónne číslo", .locale: "Jazyk",
        .deleteAccount: "Odstrániť účet", .deleteAccountTitle: "Chcete odstrániť svoj účet?",
        .deleteAccountWarning:
            "Váš profil, prístupové kľúče, druhé faktory, prepojené účty a oprávnenia, ktoré ste udelili aplikáciám, budú odstránené a budete odhlásení na všetkých zariadeniach. Túto akciu nie je možné vrátiť späť.",
        .delete: "Odstrániť", .cancel: "Zrušiť", .deleting: "Odstraňuje sa…", .accountDeleted: "Váš účet bol odstránený.",
        .accountDeletionScheduled: "Váš účet bude odstránený {date}. Ak si ho chcete ponechať, dovtedy sa znova prihláste.",
        .signInAgainToContinue: "Z bezpečnostných dôvodov sa znova prihláste a potom to skúste ešte raz."
    ]

    static let chineseSimplified: [UIText: String] = [
        .signIn: "登录", .signUp: "创建账户", .signOut: "退出登录", .continueAction: "继续", .save: "保存",
        .saving: "正在保存…", .loading: "正在加载…", .retry: "重试", .startOver: "重新开始",
        .usePasskey: "使用通行密钥",
        .useRecoveryCode: "改用恢复码",
        .signInWithBrowser: "使用浏览器登录",
        .fieldRequired: "此字段为必填项", .chooseOption: "请选择其中一个选项", .invalidValue: "该值无效",
        .sessionExpired: "您的会话已结束。请重新登录。",
        .networkError: "无法连接到服务器。请检查您的网络连接，然后重试。",
        .serverError: "服务出现问题。请稍后重试。",
        .storageUnavailable: "请解锁设备以继续。",
        .confirmItsYou: "请验证身份以继续。",
        .genericError: "出了点问题。请重试。",
        .flowExpired: "耗时过长，因此已重新开始。",
        .profileConflict: "您的个人资料已在其他地方更改。现显示最新版本及您的编辑内容：请检查后再次保存。",
        .profileSaved: "您的个人资料已保存。", .codeSent: "我们已通过电子邮件向您发送了验证码。",
        .displayName: "显示名称", .givenName: "名字", .familyName: "姓氏", .email: "电子邮件",
        .phoneNumber: "电话号码", .locale: "语言",
        .deleteAccount: "删除账户", .deleteAccountTitle: "要删除您的账户吗？",
        .deleteAccountWarning: "您的个人资料、通行密钥、第二步验证方式、关联账户以及您授予应用的权限都将被删除，并且您将在所有设备上退出登录。此操作无法撤消。", .delete: "删除", .cancel: "取消", .deleting: "正在删除…",
        .accountDeleted: "您的账户已删除。", .accountDeletionScheduled: "您的账户将于 {date} 删除。如需保留账户，请在此之前重新登录。", .signInAgainToContinue: "为了您的安全，请重新登录，然后再试一次。"
    ]

    static let chineseTraditional: [UIText: String] = [
        .signIn: "登入", .signUp: "建立帳號", .signOut: "登出", .continueAction: "繼續", .save: "儲存",
        .saving: "正在儲存…", .loading: "正在載入…", .retry: "再試一次", .startOver: "重新開始",
        .usePasskey: "使用通行密鑰",
        .useRecoveryCode: "改用復原碼",
        .signInWithBrowser: "使用瀏覽器登入",
        .fieldRequired: "此欄位為必填", .chooseOption: "請選擇其中一個選項", .invalidValue: "此值無效",
        .sessionExpired: "您的工作階段已結束。請重新登入。",
        .networkError: "無法連線至伺服器。請檢查您的網路連線，然後再試一次。",
        .serverError: "服務發生問題。請稍後再試。",
        .storageUnavailable: "請解鎖裝置以繼續。",
        .confirmItsYou: "請驗證身分以繼續。",
        .genericError: "發生錯誤。請再試一次。",
        .flowExpired: "耗時過久，因此已重新開始。",
        .profileConflict: "您的個人檔案已在其他地方變更。目前顯示最新版本及您的編輯內容：請檢查後再次儲存。",
        .profileSaved: "您的個人檔案已儲存。", .codeSent: "我們已透過電子郵件傳送驗證碼給您。",
        .displayName: "顯示名稱", .givenName: "名字", .familyName: "姓氏", .email: "電子郵件",
        .phoneNumber: "電話號碼", .locale: "語言",
        .deleteAccount: "刪除帳號", .deleteAccountTitle: "要刪除您的帳號嗎？",
        .deleteAccountWarning: "您的個人檔案、通行密鑰、第二步驗證方式、連結的帳號以及您授予應用程式的權限都將被刪除，且您將在所有裝置上登出。此操作無法復原。", .delete: "刪除", .cancel: "取消", .deleting: "正在刪除…",
        .accountDeleted: "您的帳號已刪除。", .accountDeletionScheduled: "您的帳號將於 {date} 刪除。如要保留帳號，請在此之前重新登入。", .signInAgainToContinue: "為了您的安全，請重新登入，然後再試一次。"
    ]
}
