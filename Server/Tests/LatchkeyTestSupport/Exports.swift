// `eventually` and the programmable HTTP client double: a suite that imports this target has them too.
@_exported import LatchkeySDKTestSupport
