import Foundation
import NIOConcurrencyHelpers

/// Client configurations decoded from their stored JSON, remembered by that exact text.
///
/// Every token request reads its client, and decoding the configuration with `JSONDecoder` was a visible share of a
/// refresh grant. The row is still read each time — a changed, disabled or deleted client takes effect on the next
/// request, on every instance — only the decoding of text already seen is skipped.
final class DecodedClientConfigurations: Sendable {
    /// Far more than the clients of any deployment; past it the memory starts over rather than grow with edits.
    private static let capacity = 256
    private let decoded = NIOLockedValueBox<[String: ClientConfiguration]>([:])

    func configuration(_ json: String) throws -> ClientConfiguration {
        if let known = decoded.withLockedValue({ $0[json] }) { return known }
        let configuration = try JSONDecoder().decode(ClientConfiguration.self, from: Data(json.utf8))
        decoded.withLockedValue { memory in
            if memory.count >= Self.capacity { memory.removeAll(keepingCapacity: true) }
            memory[json] = configuration
        }
        return configuration
    }
}
