#!/usr/bin/env bash
# The main job: builds latchkey, starts the development server (http://localhost:8090, SQLite file ./latchkey.sqlite,
# demo client and user), signs the demo user in through the hosted login page, then keeps serving until Ctrl-C.
set -euo pipefail
cd "$(dirname "$0")/.."
swift build --package-path Server --product latchkey
BIN="$(swift build --package-path Server --show-bin-path)/latchkey"
"$BIN" serve "$@" &
SERVER=$!
trap 'kill $SERVER 2>/dev/null || true' EXIT INT TERM
for _ in $(seq 1 100); do
  python3 -c "import urllib.request; urllib.request.urlopen('http://localhost:8090/health')" 2>/dev/null && break
  sleep 0.1
done
python3 scripts/demo_signin.py http://localhost:8090
echo "Server still running on http://localhost:8090 — open the discovery document or sign in from your app; Ctrl-C stops it."
wait $SERVER
