#!/usr/bin/env bash
# The benchmarks with their peers in the same run: glewlwyd (Debian's OpenID provider, on 127.0.0.1) for the token
# endpoint, py_webauthn (PyPI) for WebAuthn assertion verification. Every figure is a ratio measured in this run.
#   scripts/bench-peers.sh [GROUP…]     default: every group of latchkey-bench
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -c "import webauthn, joserfc, requests" 2>/dev/null || python3 -m pip install -q webauthn joserfc requests
WORK="$(mktemp -d /tmp/latchkey-bench-glewlwyd.XXXXXX)"
trap 'Server/Tests/glewlwyd/stop.sh "$WORK" >/dev/null 2>&1 || true; rm -f "$WORK.tokens"' EXIT
Server/Tests/glewlwyd/start.sh "$WORK" >/dev/null
GLEWLWYD_TOKENS_TO="$WORK.tokens" python3 Server/Tests/glewlwyd/flow_check.py "$WORK" >/dev/null
export LATCHKEY_BENCH_GLEWLWYD_TOKEN_URL="$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['token_endpoint'])" "$WORK.tokens")"
export LATCHKEY_BENCH_GLEWLWYD_CLIENT_ID="$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['client_id'])" "$WORK.tokens")"
export LATCHKEY_BENCH_GLEWLWYD_REFRESH_TOKEN="$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['refresh_token'])" "$WORK.tokens")"
swift build --package-path Server -c release --product latchkey-bench >/dev/null
"$(swift build --package-path Server -c release --show-bin-path)/latchkey-bench" "$@"
