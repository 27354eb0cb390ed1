import Foundation

/// A QR code symbol (ISO/IEC 18004), for the authenticator-app enrollment page: the page draws the
/// `otpauth://totp/...` URI as a QR code so that a phone's authenticator app can scan it, and shows the key as text
/// too, for an app (or a person) that cannot scan. The page is script-free, so the symbol is built here, on the
/// server, and inlined as SVG.
///
/// Only what that needs is implemented: byte mode, error-correction level M (about 15% of the symbol can be lost),
/// versions 1 to 40. The encoder is written from the standard: the data bit stream, Reed–Solomon error correction
/// over GF(256) and block interleaving, the function patterns, the zigzag placement of the codewords, the eight data
/// masks scored by the standard's four penalty rules, and the format and version information with their BCH codes.
struct QRCode: Sendable, Equatable {
    /// Modules, row by row; true is dark. `size` × `size`, without the quiet zone.
    let modules: [[Bool]]
    var size: Int { modules.count }
    /// 1...40; the symbol is 4 × `version` + 17 modules wide.
    let version: Int
    /// The data mask pattern (0...7) that scored the lowest penalty, as recorded in the format information.
    let mask: Int

    enum Failure: Error, Sendable {
        /// More bytes than a version 40 symbol at level M holds (2,331).
        case tooLong
    }

    /// Encodes `bytes` in byte mode at error-correction level M, in the smallest version (1...40) that holds them,
    /// choosing the mask with the lowest penalty (the standard's four rules). Throws `QRCode.Failure.tooLong` when no
    /// version holds them.
    init(bytes: [UInt8]) throws(QRCode.Failure) {
        guard let layout = (1...40).lazy.map(BlockLayout.init(levelMVersion:)).first(where: { $0.holds(byteCount: bytes.count) }) else {
            throw .tooLong
        }
        var unmasked = Symbol(version: layout.version)
        unmasked.place(layout.finalCodewords(data: Self.dataCodewords(bytes, layout: layout)))
        // The standard's order: mask the encoding region, score each result, keep the best, and only then write the
        // format and version information (never masked; while the masks are scored their modules are still light).
        // Ties go to the lower mask number.
        var best = unmasked.masked(by: 0)
        var bestMask = 0
        var bestPenalty = best.penalty()
        for mask in 1..<8 {
            let candidate = unmasked.masked(by: mask)
            let penalty = candidate.penalty()
            if penalty < bestPenalty {
                (best, bestMask, bestPenalty) = (candidate, mask, penalty)
            }
        }
        best.drawFormatInformation(mask: bestMask)
        best.drawVersionInformation(version: layout.version)
        self.modules = best.rows
        self.version = layout.version
        self.mask = bestMask
    }

    /// Encodes the text's UTF-8 bytes. Byte mode names no character set; scanners take such bytes as UTF-8 (and an
    /// `otpauth` URI is ASCII anyway).
    init(text: String) throws(QRCode.Failure) {
        try self.init(bytes: Array(text.utf8))
    }

    /// An SVG drawing of the symbol, to inline into a page: one `<path>` of dark unit squares on a white background,
    /// with the 4-module quiet zone scanners need around it. `label` is what a screen reader announces (escaped here);
    /// the drawing is `pixelsPerModule` CSS pixels per module. Nothing in it is a script, a style or a reference to
    /// anything outside, so a page whose CSP is `default-src 'none'` shows it.
    func svg(label: String, pixelsPerModule: Int = 6) -> String {
        let quietZone = 4
        let extent = size + 2 * quietZone
        let pixels = extent * max(1, pixelsPerModule)
        var path = ""
        for (row, line) in modules.enumerated() {
            for (column, isDark) in line.enumerated() where isDark {
                path += "M\(column + quietZone) \(row + quietZone)h1v1h-1z"
            }
        }
        return """
            <svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 \(extent) \(extent)" width="\(pixels)" height="\(pixels)" \
            shape-rendering="crispEdges" role="img" aria-label="\(HTML.escape(label))">\
            <rect width="\(extent)" height="\(extent)" fill="#fff"/><path fill="#000" d="\(path)"/></svg>
            """
    }

    /// The data codewords: mode indicator, character count, the bytes, a terminator of up to four zero bits, zero
    /// bits to the next byte boundary, then the standard's alternating pad bytes to fill the capacity.
    private static func dataCodewords(_ bytes: [UInt8], layout: BlockLayout) -> [UInt8] {
        var stream = BitStream()
        stream.append(0b0100, bits: 4)  // byte mode
        stream.append(bytes.count, bits: layout.characterCountBits)
        for byte in bytes {
            stream.append(Int(byte), bits: 8)
        }
        let capacityBits = layout.dataCodewords * 8
        stream.append(0, bits: min(4, capacityBits - stream.count))
        stream.append(0, bits: (8 - stream.count % 8) % 8)
        var codewords = stream.bytes
        for index in 0..<layout.dataCodewords - codewords.count {
            codewords.append(index % 2 == 0 ? 0xEC : 0x11)
        }
        return codewords
    }
}

/// Bits appended most significant first and packed into bytes.
private struct BitStream {
    private(set) var bytes: [UInt8] = []
    private(set) var count = 0

    mutating func append(_ value: Int, bits: Int) {
        for shift in stride(from: bits - 1, through: 0, by: -1) {
            if count % 8 == 0 {
                bytes.append(0)
            }
            if (value >> shift) & 1 == 1 {
                bytes[bytes.count - 1] |= 0x80 >> UInt8(count % 8)
            }
            count += 1
        }
    }
}

/// How one version's codewords divide into data and error correction at level M (the standard's Table 9): the
/// codewords form `blockCount` blocks, each with `errorCorrectionPerBlock` error-correction codewords; the data is
/// shared out so that the later blocks carry one data codeword more than the earlier ones when it does not divide.
private struct BlockLayout {
    let version: Int
    let errorCorrectionPerBlock: Int
    let blockCount: Int
    /// Every codeword the symbol holds: its encoding region's modules, eight per codeword (the 0, 3, 4 or 7 left
    /// over are the remainder bits).
    let totalCodewords: Int

    /// Level M, versions 1...40: (error-correction codewords per block, number of blocks), from the standard's Table 9.
    private static let levelM: [(errorCorrectionPerBlock: Int, blocks: Int)] = [
        (10, 1), (16, 1), (26, 1), (18, 2), (24, 2), (16, 4), (18, 4), (22, 4), (22, 5), (26, 5),
        (30, 5), (22, 8), (22, 9), (24, 9), (24, 10), (28, 10), (28, 11), (26, 13), (26, 14), (26, 16),
        (26, 17), (28, 17), (28, 18), (28, 20), (28, 21), (28, 23), (28, 25), (28, 26), (28, 28), (28, 29),
        (28, 31), (28, 33), (28, 35), (28, 37), (28, 38), (28, 40), (28, 43), (28, 45), (28, 47), (28, 49)
    ]

    init(levelMVersion version: Int) {
        let row = Self.levelM[version - 1]
        self.version = version
        self.errorCorrectionPerBlock = row.errorCorrectionPerBlock
        self.blockCount = row.blocks
        self.totalCodewords = Self.encodingRegionModules(version: version) / 8
    }

    var dataCodewords: Int { totalCodewords - errorCorrectionPerBlock * blockCount }

    /// Byte mode's character count indicator is 8 bits wide up to version 9 and 16 bits from version 10.
    var characterCountBits: Int { version <= 9 ? 8 : 16 }

    func holds(byteCount: Int) -> Bool {
        4 + characterCountBits + 8 * byteCount <= 8 * dataCodewords
    }

    /// The modules left for codewords once the function patterns are drawn, counted from the symbol's geometry.
    private static func encodingRegionModules(version: Int) -> Int {
        let size = 4 * version + 17
        var modules = size * size
        modules -= 3 * 8 * 8  // three finder patterns with their separators
        modules -= 2 * (size - 16)  // the two timing patterns, between the separators
        modules -= 2 * 15 + 1  // two copies of the format information, and the dark module
        let centres = Symbol.alignmentCentres(version: version).count
        if centres > 0 {
            // Every pair of centres but the three under the finder patterns holds a 5 × 5 alignment pattern; those on
            // row 6 or column 6 share five modules with a timing pattern, which were already taken off.
            modules -= 25 * (centres * centres - 3) - 2 * 5 * (centres - 2)
        }
        if version >= 7 {
            modules -= 2 * 18  // two copies of the version information
        }
        return modules
    }

    /// The final message (the standard's 7.6): the data split into blocks, each block's error-correction codewords,
    /// then the data codewords interleaved across the blocks (the first of each, the second of each, ...) followed by
    /// the error-correction codewords interleaved the same way. A burst of damage in the symbol is then spread over
    /// several blocks instead of exhausting one.
    func finalCodewords(data: [UInt8]) -> [UInt8] {
        let shortLength = dataCodewords / blockCount
        let shortBlocks = blockCount - dataCodewords % blockCount
        var blocks: [ArraySlice<UInt8>] = []
        var start = 0
        for index in 0..<blockCount {
            let length = index < shortBlocks ? shortLength : shortLength + 1
            blocks.append(data[start..<start + length])
            start += length
        }
        let corrections = blocks.map { ReedSolomon.remainder(dividing: Array($0), degree: errorCorrectionPerBlock) }
        var result: [UInt8] = []
        result.reserveCapacity(totalCodewords)
        for offset in 0...shortLength {
            for block in blocks where offset < block.count {
                result.append(block[block.startIndex + offset])
            }
        }
        for offset in 0..<errorCorrectionPerBlock {
            for correction in corrections {
                result.append(correction[offset])
            }
        }
        return result
    }
}

/// Reed–Solomon error correction over GF(256) as the standard defines it: the field's polynomial is
/// x⁸ + x⁴ + x³ + x² + 1 (0x11D), α = 2, and the generator of degree n is (x − α⁰)(x − α¹)…(x − αⁿ⁻¹).
private enum ReedSolomon {
    /// `exponent[i]` is αⁱ, for i in 0..<255.
    private static let exponent: [UInt8] = {
        var table: [UInt8] = []
        var value = 1
        for _ in 0..<255 {
            table.append(UInt8(value))
            value <<= 1
            if value & 0x100 != 0 {
                value ^= 0x11D
            }
        }
        return table
    }()

    /// `logarithm[x]` is i where αⁱ = x, for x in 1...255 (`logarithm[0]` is unused).
    private static let logarithm: [Int] = {
        var table = [Int](repeating: 0, count: 256)
        for (power, value) in exponent.enumerated() {
            table[Int(value)] = power
        }
        return table
    }()

    private static func multiply(_ a: UInt8, _ b: UInt8) -> UInt8 {
        if a == 0 || b == 0 {
            return 0
        }
        return exponent[(logarithm[Int(a)] + logarithm[Int(b)]) % 255]
    }

    /// The generator polynomial's coefficients, highest degree first (the first, always 1, included).
    private static func generator(degree: Int) -> [UInt8] {
        var polynomial: [UInt8] = [1]
        for power in 0..<degree {
            // Multiply by (x + αⁱ); in GF(2⁸) subtraction is addition, which is exclusive or.
            let root = exponent[power]
            var product = polynomial + [0]
            for index in polynomial.indices {
                product[index + 1] ^= multiply(polynomial[index], root)
            }
            polynomial = product
        }
        return polynomial
    }

    /// The error-correction codewords: the remainder of data(x) · xⁿ divided by the generator of degree n.
    static func remainder(dividing data: [UInt8], degree: Int) -> [UInt8] {
        let generator = generator(degree: degree)
        var remainder = [UInt8](repeating: 0, count: degree)
        for codeword in data {
            let factor = codeword ^ remainder[0]
            remainder.removeFirst()
            remainder.append(0)
            for index in 0..<degree {
                remainder[index] ^= multiply(generator[index + 1], factor)
            }
        }
        return remainder
    }
}

/// The module grid while it is built: which modules are dark, and which belong to function patterns (or are kept
/// for the format and version information) and so take no data and no mask.
private struct Symbol {
    let size: Int
    private var dark: [Bool]
    private var isFunction: [Bool]

    /// A blank symbol of the version with its function patterns drawn: finder patterns and separators, timing
    /// patterns, alignment patterns, and the format and version information areas kept light for now.
    init(version: Int) {
        size = 4 * version + 17
        dark = Array(repeating: false, count: size * size)
        isFunction = Array(repeating: false, count: size * size)
        for index in 0..<size {
            // Alternating from dark at both ends; the finder patterns below cover what lies under them.
            setFunction(6, index, dark: index % 2 == 0)
            setFunction(index, 6, dark: index % 2 == 0)
        }
        drawFinderPattern(centreRow: 3, centreColumn: 3)
        drawFinderPattern(centreRow: 3, centreColumn: size - 4)
        drawFinderPattern(centreRow: size - 4, centreColumn: 3)
        let centres = Self.alignmentCentres(version: version)
        let last = size - 7
        for row in centres {
            for column in centres {
                // Three places would overlap a finder pattern: those get none.
                let underFinder = (row == 6 && column == 6) || (row == 6 && column == last) || (row == last && column == 6)
                if !underFinder {
                    drawAlignmentPattern(centreRow: row, centreColumn: column)
                }
            }
        }
        // Format information: beside the top-left finder pattern, and split between the other two (with the dark
        // module, written with it).
        for index in 0..<9 where index != 6 {  // not the timing patterns
            setFunction(8, index, dark: false)
            setFunction(index, 8, dark: false)
        }
        for index in 0..<8 {
            setFunction(8, size - 1 - index, dark: false)
            setFunction(size - 1 - index, 8, dark: false)
        }
        if version >= 7 {
            // Version information: 6 × 3 beside the top-right finder pattern, 3 × 6 above the bottom-left one.
            for long in 0..<6 {
                for short in size - 11..<size - 8 {
                    setFunction(long, short, dark: false)
                    setFunction(short, long, dark: false)
                }
            }
        }
    }

    /// The alignment pattern centres on each axis (the standard's Annex E): none in version 1; from version 2,
    /// version / 7 + 2 of them, the first on row (and column) 6, the last 7 modules from the far edge, and those
    /// between spaced evenly back from the last by an even step, whatever is left over going into the first gap.
    /// Version 32 is the one exception to the smallest such step: its table spaces 26 apart, not 28.
    static func alignmentCentres(version: Int) -> [Int] {
        guard version >= 2 else {
            return []
        }
        let gaps = version / 7 + 1
        let last = 4 * version + 10
        let step = version == 32 ? 26 : (last - 6 + 2 * gaps - 1) / (2 * gaps) * 2
        return [6] + (0..<gaps).reversed().map { last - $0 * step }
    }

    /// The rows of the finished symbol.
    var rows: [[Bool]] {
        (0..<size).map { row in Array(dark[row * size..<(row + 1) * size]) }
    }

    private subscript(row: Int, column: Int) -> Bool {
        get { dark[row * size + column] }
        set { dark[row * size + column] = newValue }
    }

    private mutating func setFunction(_ row: Int, _ column: Int, dark isDark: Bool) {
        self[row, column] = isDark
        isFunction[row * size + column] = true
    }

    /// A 7 × 7 finder pattern (dark ring, light ring, dark 3 × 3 centre) with its one-module light separator, clipped
    /// to the symbol.
    private mutating func drawFinderPattern(centreRow: Int, centreColumn: Int) {
        for row in centreRow - 4...centreRow + 4 where (0..<size).contains(row) {
            for column in centreColumn - 4...centreColumn + 4 where (0..<size).contains(column) {
                let ring = max(abs(row - centreRow), abs(column - centreColumn))
                setFunction(row, column, dark: ring != 2 && ring != 4)
            }
        }
    }

    /// A 5 × 5 alignment pattern: dark ring, light ring, dark centre.
    private mutating func drawAlignmentPattern(centreRow: Int, centreColumn: Int) {
        for row in centreRow - 2...centreRow + 2 {
            for column in centreColumn - 2...centreColumn + 2 {
                setFunction(row, column, dark: max(abs(row - centreRow), abs(column - centreColumn)) != 1)
            }
        }
    }

    /// Places the codewords' bits, most significant first, in the standard's zigzag: two-module-wide columns from
    /// the right edge, going up then down in turn, right module before left, skipping function modules and the
    /// whole vertical timing column. Modules left over (the remainder bits) stay light.
    mutating func place(_ codewords: [UInt8]) {
        var bitIndex = 0
        var upward = true
        var right = size - 1
        while right > 0 {
            if right == 6 {
                right = 5
            }
            for step in 0..<size {
                let row = upward ? size - 1 - step : step
                for column in [right, right - 1] where !isFunction[row * size + column] {
                    if bitIndex < codewords.count * 8 {
                        self[row, column] = (codewords[bitIndex / 8] >> (7 - bitIndex % 8)) & 1 == 1
                    }
                    bitIndex += 1
                }
            }
            upward.toggle()
            right -= 2
        }
    }

    /// The symbol with data mask `pattern` applied: every module outside the function patterns where the pattern's
    /// condition holds is inverted (the standard's Table 10; i is the row, j the column).
    func masked(by pattern: Int) -> Symbol {
        var result = self
        for row in 0..<size {
            for column in 0..<size where !isFunction[row * size + column] {
                if Self.maskCondition(pattern, row: row, column: column) {
                    result[row, column].toggle()
                }
            }
        }
        return result
    }

    private static func maskCondition(_ pattern: Int, row i: Int, column j: Int) -> Bool {
        switch pattern {
        case 0: (i + j) % 2 == 0
        case 1: i % 2 == 0
        case 2: j % 3 == 0
        case 3: (i + j) % 3 == 0
        case 4: (i / 2 + j / 3) % 2 == 0
        case 5: (i * j) % 2 + (i * j) % 3 == 0
        case 6: ((i * j) % 2 + (i * j) % 3) % 2 == 0
        default: ((i + j) % 2 + (i * j) % 3) % 2 == 0
        }
    }

    /// The standard's penalty score (7.8.3.1), lower is better: N1 = 3 for each run of five same-coloured modules in
    /// a row or column, plus 1 for each module beyond five; N2 = 3 for each 2 × 2 block of one colour (overlapping
    /// blocks counted each); N3 = 40 for each dark-light-dark-dark-dark-light-dark (1:1:3:1:1) pattern with four
    /// light modules before or after it, which a scanner could take for a finder pattern; N4 = 10 for each full 5%
    /// the proportion of dark modules is away from half.
    func penalty() -> Int {
        var points = 0
        for index in 0..<size {
            let row = (0..<size).map { self[index, $0] }
            let column = (0..<size).map { self[$0, index] }
            points += Self.runPenalty(row) + Self.runPenalty(column) + Self.finderLikePenalty(row) + Self.finderLikePenalty(column)
        }
        for row in 0..<size - 1 {
            for column in 0..<size - 1 {
                let colour = self[row, column]
                if self[row, column + 1] == colour && self[row + 1, column] == colour && self[row + 1, column + 1] == colour {
                    points += 3
                }
            }
        }
        let darkCount = dark.count(where: { $0 })
        points += 10 * (abs(darkCount * 20 - dark.count * 10) / dark.count)
        return points
    }

    private static func runPenalty(_ line: [Bool]) -> Int {
        var points = 0
        var runLength = 0
        for (index, isDark) in line.enumerated() {
            runLength = index > 0 && line[index - 1] == isDark ? runLength + 1 : 1
            if runLength == 5 {
                points += 3
            } else if runLength > 5 {
                points += 1
            }
        }
        return points
    }

    private static let finderLike = [true, false, true, true, true, false, true]

    /// N3 for one row or column. Every occurrence counts, overlapping ones too; modules beyond the symbol's edge count
    /// as light, since the quiet zone there is.
    private static func finderLikePenalty(_ line: [Bool]) -> Int {
        var points = 0
        for start in 0..<max(0, line.count - finderLike.count + 1) {
            guard zip(line[start...], finderLike).allSatisfy({ $0 == $1 }) else {
                continue
            }
            let end = start + finderLike.count
            let lightBefore = (start - 4..<start).allSatisfy { $0 < 0 || !line[$0] }
            let lightAfter = (end..<end + 4).allSatisfy { $0 >= line.count || !line[$0] }
            if lightBefore || lightAfter {
                points += 40
            }
        }
        return points
    }

    /// Writes the 15-bit format information twice, and the dark module. Its 5 data bits are the error-correction
    /// level (M is 00) and the mask; a BCH(15, 5) code (generator 0x537) protects them, and the result is XORed with
    /// 0x5412 so that it is never all light.
    mutating func drawFormatInformation(mask: Int) {
        let bits = Self.bchCodeword(data: 0b00 << 3 | mask, generator: 0x537, generatorDegree: 10) ^ 0x5412
        func bit(_ index: Int) -> Bool { (bits >> index) & 1 == 1 }
        // Around the top-left finder pattern: bits 0–7 down column 8 (skipping the timing row), 8–14 leftwards along
        // row 8 (skipping the timing column).
        for index in 0..<6 {
            self[index, 8] = bit(index)
        }
        self[7, 8] = bit(6)
        self[8, 8] = bit(7)
        self[8, 7] = bit(8)
        for index in 9..<15 {
            self[8, 14 - index] = bit(index)
        }
        // The second copy: bits 0–7 leftwards from the right edge along row 8, bits 8–14 down column 8 to the bottom.
        for index in 0..<8 {
            self[8, size - 1 - index] = bit(index)
        }
        for index in 8..<15 {
            self[size - 15 + index, 8] = bit(index)
        }
        self[size - 8, 8] = true  // the dark module, always dark
    }

    /// From version 7, writes the 18-bit version information twice: the 6-bit version and a BCH(18, 6) code
    /// (generator 0x1F25). Bit i sits at row i / 3 of the top-right block, column size − 11 + i % 3, and transposed
    /// in the bottom-left block.
    mutating func drawVersionInformation(version: Int) {
        guard version >= 7 else {
            return
        }
        let bits = Self.bchCodeword(data: version, generator: 0x1F25, generatorDegree: 12)
        for index in 0..<18 {
            let isDark = (bits >> index) & 1 == 1
            let long = index / 3
            let short = size - 11 + index % 3
            self[long, short] = isDark
            self[short, long] = isDark
        }
    }

    /// `data` followed by the remainder of data(x) · x^degree divided by the generator, over GF(2).
    private static func bchCodeword(data: Int, generator: Int, generatorDegree: Int) -> Int {
        var remainder = data << generatorDegree
        for bit in stride(from: remainder.bitWidth - remainder.leadingZeroBitCount - 1, through: generatorDegree, by: -1)
        where (remainder >> bit) & 1 == 1 {
            remainder ^= generator << (bit - generatorDegree)
        }
        return data << generatorDegree | remainder
    }
}
