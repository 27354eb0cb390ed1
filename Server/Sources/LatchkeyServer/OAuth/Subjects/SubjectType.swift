import Foundation

/// Which subject identifier an application's tokens carry (OpenID Connect Core §8, `subject_type`).
public enum SubjectType: String, Codable, Sendable, CaseIterable {
    /// The account id itself, the same for every application.
    case `public`
    /// A value of the account for the application's sector alone (OpenID Connect Core §8.1): two applications of
    /// different sectors cannot tell that they know the same person by comparing `sub`. Computed, never stored
    /// (`SubjectIdentifiers`).
    case pairwise
}

extension ClientConfiguration {
    /// The sector whose applications share pairwise subjects (OpenID Connect Core §8.1): the host of
    /// `sector_identifier_uri` when there is one; else the host of the redirect URIs, which must then all have the same
    /// one. A redirect URI of a private-use scheme (`com.example.app:/callback`) counts as its scheme. Loopback redirect
    /// URIs name no sector (every native application shares `127.0.0.1`), so an application with only those — or
    /// without any (device grant, token exchange) — is its own sector. Nil when the redirect URIs name several sectors
    /// and no `sector_identifier_uri` says which one is meant.
    var sectorIdentifier: String? {
        if let uri = sectorIdentifierURI { return URL(string: uri)?.host?.lowercased() }
        let sectors = redirectSectors
        if sectors.isEmpty { return "client:" + clientId }
        return sectors.count == 1 ? sectors.first : nil
    }

    /// The hosts (or private-use schemes) of the redirect URIs that are not on a loopback host.
    private var redirectSectors: Set<String> {
        Set(
            redirectUris.compactMap { uri in
                guard let url = URL(string: uri) else { return uri }
                guard let host = url.host?.lowercased(), !host.isEmpty else { return (url.scheme ?? uri).lowercased() }
                return LoopbackHost.isLoopback(host) ? nil : host
            })
    }

    /// Start-up and registration share this rule: a pairwise application needs one sector, and a
    /// `sector_identifier_uri` is an absolute `https` URL (`http` to a loopback host only in the configuration file).
    /// Nil when the settings hold, else why not.
    func subjectProblem(operatorSet: Bool) -> String? {
        if let uri = sectorIdentifierURI,
            let why = ClientDocumentURL.refusal(uri, member: "sector_identifier_uri", operatorSet: operatorSet, fragmentAllowed: false)
        {
            return why
        }
        if subjectType == .pairwise, sectorIdentifier == nil {
            let hosts = redirectSectors.sorted().joined(separator: ", ")
            return "the redirect URIs name several hosts (\(hosts)): pairwise subjects need a sector_identifier_uri that lists them all"
        }
        return nil
    }
}
