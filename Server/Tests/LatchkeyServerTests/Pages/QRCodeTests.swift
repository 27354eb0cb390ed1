import Foundation
import Testing

@testable import LatchkeyServer

/// The QR code encoder against whole symbols made by two independent encoders: segno 1.6.6 chose the version and the
/// mask (with its padding-bit slip, heuer/segno#148, corrected: it adds a zero byte when the bit stream already ends on
/// a codeword boundary), and python-qrcode 8.2, given the same version and mask, made the same modules bit for bit.
/// Then the version picked at the capacity boundaries, the version information against the standard's own value,
/// the input too long for any version, and the SVG drawing.
@Suite("QR code encoder")
struct QRCodeTests {
    static let otpauth = "otpauth://totp/id.example.com:ada%40example.com?secret=JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP&issuer=id.example.com"

    /// 300 printable ASCII bytes: a version 13 symbol, with version information and six alignment patterns.
    static let threeHundredBytes = (0..<300).map { UInt8(($0 * 7 + 32) % 95 + 32) }

    /// Rows written as hex: the leftmost module is the first digit's most significant bit, and the last digit is
    /// padded with light modules.
    static func modules(_ rows: [String], size: Int) -> [[Bool]] {
        rows.map { row in
            let bits = row.flatMap { digit in
                let value = digit.hexDigitValue ?? 0
                return (0..<4).map { (value >> (3 - $0)) & 1 == 1 }
            }
            return Array(bits.prefix(size))
        }
    }

    static func expect(_ code: QRCode, version: Int, mask: Int, rows: [String], sourceLocation: SourceLocation = #_sourceLocation) {
        let size = 4 * version + 17
        #expect(code.version == version, sourceLocation: sourceLocation)
        #expect(code.mask == mask, sourceLocation: sourceLocation)
        #expect(code.size == size && code.modules.allSatisfy { $0.count == size }, sourceLocation: sourceLocation)
        let expected = modules(rows, size: size)
        for (index, (row, expectedRow)) in zip(code.modules, expected).enumerated() {
            #expect(row == expectedRow, "row \(index)", sourceLocation: sourceLocation)
        }
    }

    @Test("“hello”: version 1, mask 7")
    func hello() throws {
        let code = try QRCode(bytes: Array("hello".utf8))
        Self.expect(
            code, version: 1, mask: 7,
            rows: [
                "fe63f8", "826208", "ba4ae8", "ba32e8", "ba6ae8", "829a08", "feabf8", "001800", "96c500", "2c2218", "1bcc68", "ec9058",
                "6b2a80", "00d1a8", "fe2570", "82bd80", "ba1388", "bad178", "ba68a8", "826600", "fef950"
            ])
    }

    @Test("UTF-8 text is encoded as its bytes: version 2, mask 1")
    func utf8() throws {
        let code = try QRCode(text: "Café – 日本語 é")
        #expect(code == (try QRCode(bytes: Array("Café – 日本語 é".utf8))))
        Self.expect(
            code, version: 2, mask: 1,
            rows: [
                "fef2bf8", "821d208", "babbae8", "ba392e8", "ba202e8", "82af208", "feaabf8", "0030800", "a362928", "f8b9248", "e7fee48",
                "c0c4870", "b6640f8", "6d40288", "fb92b88", "2087a38", "d73bfd8", "00ec8a0", "fe8eaa8", "825b888", "ba66fc8", "ba05210",
                "bab0b78", "8244ce0", "fefd1c8"
            ])
    }

    @Test("an authenticator enrollment URI: version 7, mask 2")
    func otpauthURI() throws {
        let code = try QRCode(text: Self.otpauth)
        Self.expect(
            code, version: 7, mask: 2,
            rows: [
                "fe78f2524bf8", "823639d81208", "babb50fad2e8", "bab0ed251ae8", "baf95fe6bae8", "82a02881c208", "feaaaaaaabf8",
                "00e2f8a92800", "be08bf873be0", "9da47ec3dc78", "9b2145256e30", "0878f802a1f8", "422da9750118", "cdbcddc69d38",
                "378799f1ba30", "d4a77495cb70", "2606b0854630", "b96349460930", "932530814710", "d4f2549ca6a0", "0fafffc40fd0",
                "78bfd88f18e8", "ead34ad13ab0", "2885089b28f0", "bfc3cfc52fc0", "741abfdf8b28", "6e698e2a3570", "c11ab794c230",
                "639f48ac4c98", "b0c104df0868", "4e7eeda96c70", "dc0c64b1f370", "432205e76db0", "c4b2be978c40", "0a2f23f1d470",
                "794a7fecdff8", "9a14afa74f80", "00f1f8ea08a8", "fe512a8deab0", "82a638ff08e8", "bacdcfd35f88", "ba9c0b569068",
                "bac1c4e67e70", "820deb54bd20", "fecab7d75dd0"
            ])
    }

    @Test("300 bytes: version 13, mask 3, with version information")
    func threeHundred() throws {
        let code = try QRCode(bytes: Self.threeHundredBytes)
        Self.expect(
            code, version: 13, mask: 3,
            rows: [
                "feba716728359abbf8", "829d5fb6a0a50a0208", "ba33ca0a43735722e8", "bacb1b0f4f11954ae8", "ba297164fe15f0eae8",
                "8244dba98ff67e2208", "feaaaaaaaaaaaaabf8", "00adf91d8f44f04800", "b77715a9f9c56c2258", "c04c028025b4c69c78",
                "2bb85689e396a124d8", "61c29e3c6e6cb3ca58", "b6af697f4674947f78", "d59dfd17ca10a8e670", "eb53feaaf26139b9b0",
                "6d3a2a3549bc834d70", "6247a869262a70ef40", "e502e40c9d5f087410", "1bfb217bed66f07eb0", "193c6ae8c87bfa2d50",
                "e33a64f1df433b6fb0", "60af2d34d9e15d0d48", "066cf65085d1ec56d8", "996b3afa727da0c940", "ce86b3860717d22838",
                "d4d6e673de407482b0", "ca74e09793a55a4aa0", "bc1acd4b5565770ab8", "e2358f987757119e78", "000e4bba885e35f5d8",
                "6bbfab04ac9a89aaa0", "51deda8e81624e2c18", "0fbc594ffba75e0fb0", "48eeb88a8d78460888", "4a8bc2aeaa9ba83ae8",
                "28e71bd68d1c51a8d0", "efc7e0affc27265fe8", "e59a64d7aac7bd4550", "1f3c8f61bef3ef2110", "d806a33f0ce7ce1238",
                "6b334148501847bfa8", "e4467c8989d78428c0", "4a99b5069ad82df5f0", "6033f432743fc3ab98", "6e25d68875a1104ee8",
                "554b2880ccc9df9608", "7358619b97587ffa38", "e9fb50d0f44ed0b248", "f623151fda34f10990", "986e27d25b09398340",
                "9650fad972f0316850", "ac6d6559ff9ea06768", "1f13bcf9c86c3536c8", "288ff9bca34ed9eed0", "178bdd08318a39bd50",
                "49aa1f44834e4d0fc8", "63516b7030857c2328", "ddb778b53070ca9130", "afe43bca1c5c00d7d8", "812c3b34605f84f5d8",
                "9ade0b32fb11946fb0", "0097be568e51f58890", "fe96eca9ab2dd2caa0", "82a513dd8e970c68a0", "ba6c1a48fa2b65ffe8",
                "baad28ba61434ca1b0", "baeb959ba2465d7c40", "827bf381d341340f08", "febe021857c33a68e0"
            ])
    }

    /// Byte capacities at level M from the standard's table: 14 in version 1, 26 in 2, 122 in 7, 180 in 9 and 213
    /// in 10 (where the character count grows from 8 bits to 16), 2,331 in 40.
    @Test(
        "the smallest version that holds the bytes",
        arguments: [(0, 1), (14, 1), (15, 2), (26, 2), (27, 3), (122, 7), (123, 8), (180, 9), (181, 10), (213, 10), (214, 11), (2331, 40)])
    func smallestVersion(byteCount: Int, version: Int) throws {
        let code = try QRCode(bytes: Array(repeating: 0x61, count: byteCount))
        #expect(code.version == version)
        #expect(code.size == 4 * version + 17)
    }

    @Test("more than version 40 holds is refused")
    func tooLong() {
        #expect(throws: QRCode.Failure.tooLong) { try QRCode(bytes: Array(repeating: 0x61, count: 2332)) }
        #expect(throws: QRCode.Failure.tooLong) { try QRCode(text: String(repeating: "é", count: 1166)) }
    }

    /// The standard's Annex D gives version 7's information as 000111 110010 010100; bit 0 (the last) sits at the
    /// top-right block's first row, leftmost column, and the bottom-left block is its transpose.
    @Test("version information, both copies")
    func versionInformation() throws {
        let code = try QRCode(text: Self.otpauth)
        var topRight = 0
        var bottomLeft = 0
        for index in 0..<18 {
            let long = index / 3
            let short = code.size - 11 + index % 3
            topRight |= (code.modules[long][short] ? 1 : 0) << index
            bottomLeft |= (code.modules[short][long] ? 1 : 0) << index
        }
        #expect(topRight == 0b000111_110010_010100)
        #expect(bottomLeft == 0b000111_110010_010100)
    }

    @Test("the SVG: one unit square per dark module inside a 4-module quiet zone, labelled, nothing active or external")
    func svg() throws {
        let code = try QRCode(text: Self.otpauth)
        let svg = code.svg(label: #"Scan <this> & "enrol""#)
        let extent = code.size + 8
        #expect(svg.hasPrefix("<svg ") && svg.hasSuffix("</svg>"))
        #expect(svg.contains(#"viewBox="0 0 \#(extent) \#(extent)""#))
        #expect(svg.contains(#"width="\#(extent * 6)" height="\#(extent * 6)""#))
        #expect(svg.contains(#"shape-rendering="crispEdges""#))
        #expect(svg.contains(#"role="img""#))
        #expect(svg.contains(#"aria-label="Scan &lt;this&gt; &amp; &quot;enrol&quot;""#))
        #expect(svg.contains(##"<rect width="\##(extent)" height="\##(extent)" fill="#fff"/>"##))
        for forbidden in ["<script", "url(", "style", "href", "<foreignObject", "<image", " on"] {
            #expect(!svg.contains(forbidden), "\(forbidden)")
        }
        #expect(svg.components(separatedBy: "<path").count == 2)
        var drawn = Array(repeating: Array(repeating: false, count: code.size), count: code.size)
        for square in svg.matches(of: #/M(\d+) (\d+)h1v1h-1z/#) {
            let column = try #require(Int(square.output.1)) - 4
            let row = try #require(Int(square.output.2)) - 4
            try #require((0..<code.size).contains(row) && (0..<code.size).contains(column))
            #expect(!drawn[row][column], "(\(row), \(column)) drawn twice")
            drawn[row][column] = true
        }
        #expect(drawn == code.modules)
        #expect(code.svg(label: "", pixelsPerModule: 3).contains(#"width="\#(extent * 3)" height="\#(extent * 3)""#))
    }
}
