import Foundation

/// Checks a registered `sector_identifier_uri` (OpenID Connect Core §8.1, Registration §5): the server fetches it — a
/// JSON array of URIs — and every redirect URI of the application must be in it, so an application can claim a sector
/// (and with it the pairwise subjects of that sector's other applications) only with the sector's own consent. The
/// fetch goes through `ClientDocumentFetcher` (public addresses only, `https`, no redirect followed, 64 KiB), at
/// registration and at every update; a document that cannot be fetched refuses the registration.
struct SectorDocuments: Sendable {
    /// The body of a 200 answer at a URL the application registered; throws when there is none.
    let fetch: @Sendable (_ url: URL, _ clientId: String) async throws -> Data

    init(fetcher: ClientDocumentFetcher) {
        fetch = { url, clientId in try await fetcher.fetch(url, accept: "application/json", client: clientId) }
    }

    /// Tests give the documents of their choosing (`ServerConfiguration.sectorDocuments`).
    init(fetch: @escaping @Sendable (_ url: URL, _ clientId: String) async throws -> Data) {
        self.fetch = fetch
    }

    /// Refuses (`invalid_client_metadata`) an application whose `sector_identifier_uri` cannot be fetched, is not a
    /// JSON array of strings, or leaves out one of its redirect URIs. Nothing to do without one.
    func check(_ configuration: ClientConfiguration) async throws(OAuthError) {
        guard let uri = configuration.sectorIdentifierURI, let url = URL(string: uri) else { return }
        let body: Data
        do { body = try await fetch(url, configuration.clientId) } catch {
            // Why is in the server's log (`ClientDocumentFetcher`): the registrant learns nothing of what answered.
            throw OAuthError(.invalidClientMetadata, "sector_identifier_uri could not be fetched (\(ClientDocumentFetcher.Failure.publicReason))")
        }
        guard let listed = (try? JSONSerialization.jsonObject(with: body)) as? [Any], let uris = listed as? [String] else {
            throw OAuthError(.invalidClientMetadata, "sector_identifier_uri must answer with a JSON array of URIs")
        }
        let sector = Set(uris)
        if let missing = configuration.redirectUris.first(where: { !sector.contains($0) }) {
            throw OAuthError(
                .invalidClientMetadata,
                "redirect URI \(ClientMetadata.printable(missing)) is not listed at sector_identifier_uri (every redirect URI must be)")
        }
    }
}
