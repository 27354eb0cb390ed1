import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOSSL

/// Why a delivery failed. Descriptions name the dialogue step and the reply code only: never the message, the code
/// it carries or the relay's credentials.
enum SMTPError: Error, CustomStringConvertible, Equatable {
    case connect(String)
    case timeout(stage: String)
    case closed(stage: String)
    case reply(stage: String, code: Int)
    case malformedReply(stage: String)
    case startTLSUnavailable
    case authenticationUnavailable
    case invalidMessage(String)
    /// The relay (or someone on the path to it) sent more after its `220` to STARTTLS, before the handshake.
    case plaintextAfterStartTLS

    /// A 5xx answer to the envelope or the content will not change by retrying; anything else might.
    var isPermanent: Bool {
        switch self {
        case .reply(let stage, let code): return code >= 500 && ["MAIL FROM", "RCPT TO", "DATA", "message"].contains(stage)
        case .invalidMessage: return true
        default: return false
        }
    }

    /// No relay answered at all (no connection, no greeting in time): every queued email would fail the same way, so
    /// they wait for the same retry (`DeliveryLoop`) instead of each costing a timeout and an attempt.
    var isUnreachable: Bool {
        switch self {
        case .connect: return true
        case .timeout(let stage): return stage == "greeting"
        default: return false
        }
    }

    var description: String {
        switch self {
        case .connect(let why): "cannot connect to the relay (\(why))"
        case .timeout(let stage): "timed out waiting for the relay at \(stage)"
        case .closed(let stage): "the relay closed the connection at \(stage)"
        case .reply(let stage, let code): "the relay answered \(code) to \(stage)"
        case .malformedReply(let stage): "malformed reply at \(stage)"
        case .startTLSUnavailable: "the relay does not offer STARTTLS, which is required"
        case .authenticationUnavailable: "the relay offers neither AUTH PLAIN nor AUTH LOGIN"
        case .invalidMessage(let why): "refused to send: \(why)"
        case .plaintextAfterStartTLS: "plaintext arrived after the answer to STARTTLS, before TLS (RFC 3207 §4.2): refused"
        }
    }
}

/// One reply: its code and text lines (a multi-line reply has `code-text` lines then `code text`).
struct SMTPReply: Sendable, Equatable {
    var code: Int
    var lines: [String]
}

/// One line from the relay, and how many bytes it took on the wire (for the STARTTLS check in `SMTPSession`).
struct SMTPLine: Sendable, Equatable {
    var text: String
    var wireLength: Int
}

/// Splits the relay's byte stream into lines (CRLF, tolerating a bare LF), refusing absurdly long ones.
struct SMTPLineDecoder: ByteToMessageDecoder {
    typealias InboundOut = SMTPLine
    static let maxLineLength = 4096

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        let view = buffer.readableBytesView
        guard let newline = view.firstIndex(of: UInt8(ascii: "\n")) else {
            if buffer.readableBytes > Self.maxLineLength { throw SMTPError.malformedReply(stage: "line") }
            return .needMoreData
        }
        let length = view.distance(from: view.startIndex, to: newline)
        guard length <= Self.maxLineLength, var line = buffer.readString(length: length) else { throw SMTPError.malformedReply(stage: "line") }
        buffer.moveReaderIndex(forwardBy: 1)
        if line.hasSuffix("\r") { line.removeLast() }
        context.fireChannelRead(NIOAny(SMTPLine(text: line, wireLength: length + 1)))
        return .continue
    }

    mutating func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool) throws -> DecodingState {
        while try decode(context: context, buffer: &buffer) == .continue {}
        return .needMoreData
    }
}

/// Counts the bytes the relay sends before TLS (it sits nearest the socket; once TLS is put below it, it counts
/// decrypted bytes, which nobody reads any more). Used on the channel's event loop only.
final class PlaintextMeter: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    private(set) var bytes = 0

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        bytes += unwrapInboundIn(data).readableBytes
        context.fireChannelRead(data)
    }
}

/// A small SMTP submission client (RFC 5321, STARTTLS RFC 3207, AUTH PLAIN/LOGIN RFC 4954) on SwiftNIO: one connection
/// per message, every step bounded by the timeout.
struct SMTPClient: Sendable {
    let settings: SMTPSettings
    /// Built once (the CA file is read at start-up); nil when STARTTLS is off.
    let tls: NIOSSLContext?

    init(settings: SMTPSettings) throws {
        self.settings = settings
        guard settings.startTLS == .required else { self.tls = nil; return }
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.minimumTLSVersion = .tlsv12
        configuration.certificateVerification = .fullVerification
        if let caFile = settings.caFile {
            do { configuration.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(caFile)) } catch {
                throw ConfigurationError.invalid("smtp: ca_file \(caFile) holds no readable PEM certificate")
            }
        }
        do { self.tls = try NIOSSLContext(configuration: configuration) } catch {
            throw ConfigurationError.invalid("smtp: cannot set up TLS (\(error))")
        }
    }

    /// Delivers one message: `data` is the complete RFC 5322 message (CRLF lines, not yet dot-stuffed).
    func send(from: String, to recipient: String, data: String) async throws {
        guard MailAddress.isValid(from), MailAddress.isValid(recipient) else { throw SMTPError.invalidMessage("not a plain address") }
        let timeout = TimeAmount.seconds(Int64(settings.timeoutSeconds))
        let channel: NIOAsyncChannel<SMTPLine, ByteBuffer>
        do {
            channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .connectTimeout(timeout)
                .connect(host: settings.host, port: settings.port) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandlers(PlaintextMeter(), ByteToMessageHandler(SMTPLineDecoder()))
                        return try NIOAsyncChannel<SMTPLine, ByteBuffer>(wrappingChannelSynchronously: channel)
                    }
                }
        } catch {
            throw SMTPError.connect(String(describing: type(of: error)))
        }
        try await channel.executeThenClose { inbound, outbound in
            var session = SMTPSession(channel: channel.channel, lines: inbound.makeAsyncIterator(), outbound: outbound, timeout: timeout)
            try await session.run(settings: settings, tls: tls, from: from, to: recipient, data: data)
        }
    }
}

/// The dialogue of one connection.
private struct SMTPSession {
    let channel: any Channel
    var lines: NIOAsyncChannelInboundStream<SMTPLine>.AsyncIterator
    /// Bytes of every line read so far (compared with `PlaintextMeter` at STARTTLS).
    var consumedBytes = 0
    let outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>
    let timeout: TimeAmount
    let timedOut = NIOLockedValueBox(false)

    init(
        channel: any Channel, lines: NIOAsyncChannelInboundStream<SMTPLine>.AsyncIterator,
        outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>, timeout: TimeAmount
    ) {
        self.channel = channel; self.lines = lines; self.outbound = outbound; self.timeout = timeout
    }

    mutating func run(settings: SMTPSettings, tls: NIOSSLContext?, from: String, to recipient: String, data: String) async throws {
        try await expect(220, stage: "greeting")
        var extensions = try await ehlo(settings.heloName)
        if let tls {
            guard extensions.contains(where: { $0.uppercased() == "STARTTLS" }) else { throw SMTPError.startTLSUnavailable }
            try await command("STARTTLS", expect: [220], stage: "STARTTLS")
            try await startTLS(tls, host: settings.host, plaintextRead: consumedBytes)
            // RFC 3207 §4.2: everything learnt before the handshake is discarded.
            extensions = try await ehlo(settings.heloName)
        }
        if let username = settings.username, let password = settings.password {
            try await authenticate(username: username, password: password, extensions: extensions)
        }
        try await command("MAIL FROM:<\(from)>", expect: [250], stage: "MAIL FROM")
        try await command("RCPT TO:<\(recipient)>", expect: [250, 251], stage: "RCPT TO")
        try await command("DATA", expect: [354], stage: "DATA")
        try await write(MailMessage.dotStuffed(data) + ".\r\n", stage: "message")
        try await expect(250, stage: "message")
        // The message is accepted; a relay that hangs up without answering QUIT changes nothing.
        _ = try? await command("QUIT", expect: [221], stage: "QUIT")
    }

    private mutating func ehlo(_ name: String) async throws -> [String] {
        let reply = try await command("EHLO \(name)", expect: [250], stage: "EHLO")
        return reply.lines.dropFirst().map { $0 }
    }

    private mutating func authenticate(username: String, password: String, extensions: [String]) async throws {
        let mechanisms = Set(
            extensions.filter { $0.uppercased().hasPrefix("AUTH") }
                .flatMap { $0.uppercased().split(whereSeparator: { $0 == " " || $0 == "=" }).dropFirst().map(String.init) })
        func base64(_ s: String) -> String { Data(s.utf8).base64EncodedString() }
        if mechanisms.contains("PLAIN") {
            try await command("AUTH PLAIN " + base64("\u{0}\(username)\u{0}\(password)"), expect: [235], stage: "AUTH")
        } else if mechanisms.contains("LOGIN") {
            try await command("AUTH LOGIN", expect: [334], stage: "AUTH")
            try await command(base64(username), expect: [334], stage: "AUTH")
            try await command(base64(password), expect: [235], stage: "AUTH")
        } else {
            throw SMTPError.authenticationUnavailable
        }
    }

    /// Puts TLS under the line decoder, after making sure the relay sent nothing past its `220` (RFC 3207 §4.2):
    /// replies already received in plaintext (split into lines, or half a line in the decoder) would otherwise be
    /// read as the answers of the TLS side, so someone on the path could accept a message the relay never got.
    /// The check and the insertion happen in one event-loop turn, so no byte can slip in between; bytes arriving
    /// later reach the TLS handler, which refuses them as a broken handshake.
    private func startTLS(_ context: NIOSSLContext, host: String, plaintextRead: Int) async throws {
        // SNI and name checks need a host name; an IP address is matched against the certificate's IP entries.
        let isAddress = (try? SocketAddress(ipAddress: host, port: 0)) != nil
        let channel = self.channel
        try await channel.eventLoop.submit {
            let meter = try channel.pipeline.syncOperations.handler(type: PlaintextMeter.self)
            guard meter.bytes == plaintextRead else { throw SMTPError.plaintextAfterStartTLS }
            let handler = try NIOSSLClientHandler(context: context, serverHostname: isAddress ? nil : host)
            try channel.pipeline.syncOperations.addHandler(handler, position: .first)
        }.get()
    }

    @discardableResult
    private mutating func command(_ line: String, expect codes: Set<Int>, stage: String) async throws -> SMTPReply {
        try await write(line + "\r\n", stage: stage)
        let reply = try await readReply(stage: stage)
        guard codes.contains(reply.code) else { throw SMTPError.reply(stage: stage, code: reply.code) }
        return reply
    }

    private mutating func expect(_ code: Int, stage: String) async throws {
        let reply = try await readReply(stage: stage)
        guard reply.code == code else { throw SMTPError.reply(stage: stage, code: reply.code) }
    }

    private func write(_ text: String, stage: String) async throws {
        let watchdog = arm()
        defer { watchdog.cancel() }
        do { try await outbound.write(ByteBuffer(string: text)) } catch {
            throw timedOut.withLockedValue { $0 } ? SMTPError.timeout(stage: stage) : SMTPError.closed(stage: stage)
        }
    }

    /// Reads one (possibly multi-line) reply before the timeout.
    private mutating func readReply(stage: String) async throws -> SMTPReply {
        let watchdog = arm()
        defer { watchdog.cancel() }
        var texts: [String] = []
        while texts.count < 100 {
            let next: SMTPLine?
            do { next = try await lines.next() } catch {
                if timedOut.withLockedValue({ $0 }) { throw SMTPError.timeout(stage: stage) }
                if let error = error as? SMTPError { throw error }
                throw SMTPError.closed(stage: stage)  // includes a failed TLS handshake
            }
            guard let next else {
                throw timedOut.withLockedValue { $0 } ? SMTPError.timeout(stage: stage) : SMTPError.closed(stage: stage)
            }
            consumedBytes += next.wireLength
            let bytes = Array(next.text.utf8)
            guard bytes.count >= 3, let code = Int(String(decoding: bytes[0..<3], as: UTF8.self)), (200...599).contains(code) else {
                throw SMTPError.malformedReply(stage: stage)
            }
            texts.append(bytes.count > 4 ? String(decoding: bytes[4...], as: UTF8.self) : "")
            if bytes.count == 3 || bytes[3] == UInt8(ascii: " ") { return SMTPReply(code: code, lines: texts) }
            guard bytes[3] == UInt8(ascii: "-") else { throw SMTPError.malformedReply(stage: stage) }
        }
        throw SMTPError.malformedReply(stage: stage)
    }

    /// Closes the connection when a step takes longer than the timeout; the pending read or write then fails.
    private func arm() -> Scheduled<Void> {
        let channel = self.channel, timedOut = self.timedOut
        return channel.eventLoop.scheduleTask(in: timeout) {
            timedOut.withLockedValue { $0 = true }
            channel.close(promise: nil)
        }
    }
}

/// The RFC 5322 text of an outgoing message: UTF-8 body in base64, subject as RFC 2047 encoded words when it is not
/// plain ASCII. Values that could end a header line are refused, never escaped.
enum MailMessage {
    static func render(from: String, to recipient: String, subject: String, body: String, messageId: String, date: Date) throws -> String {
        guard MailAddress.isValid(from), MailAddress.isValid(recipient) else { throw SMTPError.invalidMessage("not a plain address") }
        guard !subject.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw SMTPError.invalidMessage("control characters in the subject")
        }
        let domain = from.split(separator: "@").last.map(String.init) ?? "localhost"
        let id = messageId.filter { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") }
        let normalized = body.replacingOccurrences(of: "\r\n", with: "\n").replacingOccurrences(of: "\r", with: "\n")
            .replacingOccurrences(of: "\n", with: "\r\n")
        let encodedBody = Data(normalized.utf8).base64EncodedString(options: [
            .lineLength76Characters, .endLineWithCarriageReturn, .endLineWithLineFeed
        ])
        let headers = [
            "Date: \(rfc5322Date(date))",
            "From: <\(from)>",
            "To: <\(recipient)>",
            "Subject: \(encodedSubject(subject))",
            "Message-ID: <\(id.isEmpty ? UUID().uuidString : id)@\(domain)>",
            "MIME-Version: 1.0",
            "Content-Type: text/plain; charset=UTF-8",
            "Content-Transfer-Encoding: base64",
            "Auto-Submitted: auto-generated"
        ]
        return headers.joined(separator: "\r\n") + "\r\n\r\n" + encodedBody + "\r\n"
    }

    /// Lines starting with "." get another one (RFC 5321 §4.5.2), so no line of the message can end the DATA phase;
    /// the result ends with CRLF.
    static func dotStuffed(_ data: String) -> String {
        var lines = data.replacingOccurrences(of: "\r\n", with: "\n").split(separator: "\n", omittingEmptySubsequences: false)
        if lines.last == "" { lines.removeLast() }
        return lines.map { $0.hasPrefix(".") ? "." + $0 : String($0) }.joined(separator: "\r\n") + "\r\n"
    }

    /// Plain when printable ASCII and short; otherwise UTF-8 "B" encoded words of at most 75 characters, folded.
    static func encodedSubject(_ subject: String) -> String {
        if subject.allSatisfy({ $0.isASCII }), subject.count <= 900, !subject.contains("=?") { return subject }
        var words: [String] = [], chunk = ""
        for character in subject {
            if !chunk.isEmpty, chunk.utf8.count + String(character).utf8.count > 45 {
                words.append(chunk); chunk = ""
            }
            chunk.append(character)
        }
        if !chunk.isEmpty { words.append(chunk) }
        return words.map { "=?UTF-8?B?\(Data($0.utf8).base64EncodedString())?=" }.joined(separator: "\r\n ")
    }

    static func rfc5322Date(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss '+0000'"
        return formatter.string(from: date)
    }
}
