// `import LatchkeySwiftUI` is all a SwiftUI app writes, as with ThunderID's package: the SDK core (configuration,
// errors, the client) and the Apple layer (Keychain storage, the system sheets) come with it.
@_exported import Latchkey
@_exported import LatchkeyApple
