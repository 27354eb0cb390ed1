// The subset of Apple's AuthenticationServices and Security frameworks that Latchkey's Apple code uses, declared with
// the names and signatures of Apple's documentation so that code compiles here unchanged (ARCHITECTURE §7).
//
// Only Linux links this module (a platform condition in Package.swift); where AuthenticationServices exists its
// files compile to nothing. What the system would do — a user signing in on a web page, picking a passkey, tapping
// Cancel; a locked device — is scripted per test task through `StandInSystem` (Scripting/), so tests that run in
// parallel never see each other's scripts.
//
// Faithfulness notes are on each declaration; where a stand-in adds something Apple does not have (an initializer a
// test needs to build a credential the system would build), its doc comment says "stand-in only".
