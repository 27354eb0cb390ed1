// Every file of this target imports the system frameworks the same way:
//
//     #if canImport(AuthenticationServices)
//     import AuthenticationServices
//     #else
//     import AppleFrameworkStandIns   // Linux: Apple's API subset, name for name (ARCHITECTURE §7)
//     #endif
//
// so the code below compiles unchanged against Apple's SDK and, on Linux, against the stand-ins the tests script.
// Keep the adapters thin: every protocol decision lives in `Latchkey`; these types only translate system callbacks
// into its seams (`AuthorizationUserAgent`, `CredentialProvider`, `PasskeyAuthenticator`, `StorageAdapter`).
