#!/usr/bin/env bash
# Type-checks every Apple-side module of the package, and the example app, against a real iOS SDK with this machine's
# Swift toolchain: Latchkey, LatchkeyJOSE, LatchkeyApple, LatchkeySwiftUI and Examples/LatchkeyDemo (app and widget), compiled for
# arm64-apple-ios17.0 (whole module, SIL diagnostics included, nothing linked). Fails on any error or warning in them.
#
#   scripts/ios-typecheck.sh [SDK]
#
#   SDK   an extracted iPhoneOS*.sdk; default $LATCHKEY_IOS_SDK, then /tmp/ios-sdk/iPhoneOS17.4.sdk. Where one comes
#         from: ../shared/tools/ios-typecheck/README.md (the public repository danpashin/sdks, tag v17.4).
#
# Environment: IOS_TYPECHECK_TOOL (default ../shared/tools/ios-typecheck/ios-typecheck.sh beside the checkout: the
# compiler set-up for an Apple SDK on Linux, which this script drives), IOS_TYPECHECK_WORK (default /tmp/ios-typecheck).
#
# Exit status: 0 clean; 1 errors or warnings (listed); 2 no SDK or no tool (one line says which).
# On a Mac, Xcode's own build of the package and of the example is the check; this script is for Linux.
set -uo pipefail
cd "$(dirname "$0")/.."

SDK=${1:-${LATCHKEY_IOS_SDK:-/tmp/ios-sdk/iPhoneOS17.4.sdk}}
TOOL=${IOS_TYPECHECK_TOOL:-../shared/tools/ios-typecheck/ios-typecheck.sh}
WORK=${IOS_TYPECHECK_WORK:-/tmp/ios-typecheck}

if [ ! -d "$SDK" ]; then echo "ios-typecheck: no iOS SDK at $SDK (set LATCHKEY_IOS_SDK); skipped"; exit 2; fi
if [ ! -f "$TOOL" ]; then echo "ios-typecheck: no type-check tool at $TOOL (set IOS_TYPECHECK_TOOL); skipped"; exit 2; fi

# The example app is checked as one more module on top of the package's, so it can never rot.
# (Run by bash: a read-only copy of the tool may have lost its execute bit.)
EXTRA_MODULES="LatchkeyDemo=Examples/LatchkeyDemo/Sources LatchkeyDemoWidget=Examples/LatchkeyDemo/Widget" bash "$TOOL" . "$SDK" "$WORK"
status=$?

# The tool fails on errors only; warnings in our own modules fail here too (the dependencies' are not ours).
warnings=0
for module in LatchkeyJOSE Latchkey LatchkeyApple LatchkeySwiftUI LatchkeyDemo LatchkeyDemoWidget; do
    log="$WORK/logs/$module.log"
    [ -f "$log" ] || { echo "ios-typecheck: $module was not checked (no $log)"; status=1; continue; }
    if grep -q ': warning: ' "$log"; then
        grep ': warning: ' "$log" | sed "s#$PWD/##" | sort -u
        warnings=$((warnings + 1))
    fi
done
if [ "$status" -ne 0 ]; then
    echo "ios-typecheck: errors (above; each module's in $WORK/errors-<Module>.txt)"
    cat "$WORK"/errors-Latchkey*.txt 2>/dev/null
    exit 1
fi
if [ "$warnings" -ne 0 ]; then echo "ios-typecheck: warnings in $warnings module(s)"; exit 1; fi
echo "ios-typecheck: clean (LatchkeyJOSE, Latchkey, LatchkeyApple, LatchkeySwiftUI, LatchkeyDemo, LatchkeyDemoWidget against $(basename "$SDK"))"
