import Crypto
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import SwiftASN1
import Testing
import X509

@testable import LatchkeyServer

/// A test PKI: a root and a leaf certificate for `name`, the leaf's key in PEM.
struct TLSTestPKI {
    let root: NIOSSLCertificate
    let leaf: NIOSSLCertificate
    let leafKey: NIOSSLPrivateKey

    init(name: String) throws {
        let rootKey = P256.Signing.PrivateKey()
        let leafKey = P256.Signing.PrivateKey()
        let rootName = try DistinguishedName { CommonName("Latchkey Test TLS Root") }
        let leafName = try DistinguishedName { CommonName(name) }
        let now = Date()
        let root = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(rootKey.publicKey), notValidBefore: now - 3600, notValidAfter: now + 3600,
            issuer: rootName, subject: rootName, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                KeyUsage(keyCertSign: true)
            },
            issuerPrivateKey: .init(rootKey))
        let leaf = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(leafKey.publicKey), notValidBefore: now - 3600, notValidAfter: now + 3600,
            issuer: rootName, subject: leafName, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                SubjectAlternativeNames([.dnsName(name)])
            },
            issuerPrivateKey: .init(rootKey))
        func der(_ certificate: Certificate) throws -> [UInt8] {
            var serializer = DER.Serializer()
            try serializer.serialize(certificate)
            return serializer.serializedBytes
        }
        self.root = try NIOSSLCertificate(bytes: try der(root), format: .der)
        self.leaf = try NIOSSLCertificate(bytes: try der(leaf), format: .der)
        self.leafKey = try NIOSSLPrivateKey(bytes: Array(leafKey.pemRepresentation.utf8), format: .pem)
    }
}

/// An https server on a loopback port that answers every request with `body` (or never answers, `silent`), counting
/// connections and remembering the SNI name of the last handshake.
final class TLSDocumentServer: Sendable {
    let port: Int
    private let channel: any Channel
    private let accepted: NIOLockedValueBox<Int>
    var connections: Int { accepted.withLockedValue { $0 } }

    private init(port: Int, channel: any Channel, accepted: NIOLockedValueBox<Int>) {
        self.port = port
        self.channel = channel
        self.accepted = accepted
    }

    static func start(_ pki: TLSTestPKI, body: String, silent: Bool = false) async throws -> TLSDocumentServer {
        let context = try NIOSSLContext(
            configuration: .makeServerConfiguration(certificateChain: [.certificate(pki.leaf)], privateKey: .privateKey(pki.leafKey)))
        let accepted = NIOLockedValueBox(0)
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { child in
                accepted.withLockedValue { $0 += 1 }
                do {
                    try child.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: context))
                    try child.pipeline.syncOperations.configureHTTPServerPipeline()
                    if !silent { try child.pipeline.syncOperations.addHandler(Answerer(body: body)) }
                    return child.eventLoop.makeSucceededVoidFuture()
                } catch {
                    return child.eventLoop.makeFailedFuture(error)
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        return TLSDocumentServer(port: try #require(channel.localAddress?.port), channel: channel, accepted: accepted)
    }

    func stop() async { try? await channel.close() }

    private final class Answerer: ChannelInboundHandler {
        typealias InboundIn = HTTPServerRequestPart
        typealias OutboundOut = HTTPServerResponsePart
        let body: String
        init(body: String) { self.body = body }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            guard case .end = unwrapInboundIn(data) else { return }
            var headers = HTTPHeaders()
            headers.add(name: "Content-Type", value: "application/json")
            headers.add(name: "Content-Length", value: String(body.utf8.count))
            context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .ok, headers: headers))), promise: nil)
            context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(string: body)))), promise: nil)
            let channel = context.channel  // Sendable, unlike the context the completion would otherwise capture
            context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in channel.close(promise: nil) }
        }
    }
}

/// `OutboundHTTPClient` over real TLS on loopback: the connection goes to the address the resolver gave, the URL's name
/// is the SNI and the name the certificate must carry, an untrusted or misnamed certificate is refused, a public-only
/// request never connects to an internal address, and a server that never answers costs the timeout, no more.
@Suite("OutboundHTTPClient: TLS to the checked address")
struct OutboundHTTPClientTests {
    static let resolver = ScriptedResolver(["docs.tls.test": ["127.0.0.1"], "other.tls.test": ["127.0.0.1"]])

    @Test("https to a name resolved to the server: verified with the trusted root and the name; wrong name or unknown root refused")
    func tlsIsVerified() async throws {
        let pki = try TLSTestPKI(name: "docs.tls.test")
        let server = try await TLSDocumentServer.start(pki, body: #"{"keys":[]}"#)
        defer { Task { await server.stop() } }
        // Verification is the subject, not time: a deadline a machine ten times slower than a busy CI one still meets.
        let trusting = OutboundHTTPClient(resolver: Self.resolver, additionalTrustRoots: [pki.root])
        let url = try #require(URL(string: "https://docs.tls.test:\(server.port)/jwks"))
        let answer = await trusting.send(.GET, url, limits: .init(timeoutSeconds: 120, maximumBytes: 1024, reach: .any))
        #expect(answer == .response(status: 200, body: Data(#"{"keys":[]}"#.utf8)), "\(answer)")

        let misnamed = await trusting.send(
            .GET, try #require(URL(string: "https://other.tls.test:\(server.port)/jwks")),
            limits: .init(timeoutSeconds: 120, maximumBytes: 1024, reach: .any))
        guard case .failed = misnamed else { Issue.record("a certificate for another name was accepted: \(misnamed)"); return }
        let untrusting = OutboundHTTPClient(resolver: Self.resolver)
        let untrusted = await untrusting.send(.GET, url, limits: .init(timeoutSeconds: 120, maximumBytes: 1024, reach: .any))
        guard case .failed = untrusted else { Issue.record("an unknown root was accepted: \(untrusted)"); return }
        #expect(server.connections == 3)

        // Public only: the same name (127.0.0.1) is not even connected to.
        let refused = await trusting.send(.GET, url, limits: .init(timeoutSeconds: 120, maximumBytes: 1024, reach: .publicOnly))
        #expect(refused == .failed("docs.tls.test resolves to an internal address (127.0.0.1)"), "\(refused)")
        #expect(server.connections == 3)
    }

    @Test("a server that never answers costs the timeout (1 s here: wall time is the subject), then the exchange is abandoned")
    func silentServersTimeOut() async throws {
        let pki = try TLSTestPKI(name: "docs.tls.test")
        let server = try await TLSDocumentServer.start(pki, body: "", silent: true)
        defer { Task { await server.stop() } }
        let client = OutboundHTTPClient(resolver: Self.resolver, additionalTrustRoots: [pki.root])
        let answer = await client.send(
            .GET, try #require(URL(string: "https://docs.tls.test:\(server.port)/jwks")),
            limits: .init(timeoutSeconds: 1, maximumBytes: 1024, reach: .any))
        #expect(answer == .failed("no answer within 1 s"), "\(answer)")
    }
}
