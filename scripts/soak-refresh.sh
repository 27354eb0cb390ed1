#!/usr/bin/env bash
# The never-signed-out soak at full size: `latchkey token --repeat` processes sharing one signed-in home refresh on
# 10-second access tokens against two instances on one PostgreSQL, through a proxy that loses, cuts, resets and delays
# token answers, while processes are killed with SIGKILL (Server/Tests/system/test_never_signed_out.py; CI runs 600).
#   scripts/soak-refresh.sh [REFRESHES] [PROCESSES]     default: 100000 refreshes, 4 processes at once
# Prints the figures (docs/testing.md keeps the last ones). Starts a throwaway PostgreSQL unless
# LATCHKEY_TEST_POSTGRES_URL names one.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -c "import pytest, requests" 2>/dev/null || python3 -m pip install -q pytest requests
swift build --package-path Server -c release --product latchkey >/dev/null
if [ -z "${LATCHKEY_TEST_POSTGRES_URL:-}" ]; then
  PG_WORK="$(mktemp -d /tmp/latchkey-soak-postgres.XXXXXX)"
  trap 'Server/Tests/postgres/stop.sh "$PG_WORK" >/dev/null 2>&1 || true' EXIT
  Server/Tests/postgres/start.sh "$PG_WORK"
  # shellcheck disable=SC1091
  . "$PG_WORK/env"
fi
LATCHKEY_SOAK_REFRESHES="${1:-100000}" LATCHKEY_SOAK_PROCESSES="${2:-4}" \
  LATCHKEY_BIN="$(swift build --package-path Server -c release --show-bin-path)/latchkey" \
  python3 -m pytest -q -s -p no:cacheprovider Server/Tests/system/test_never_signed_out.py
