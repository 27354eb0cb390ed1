#!/usr/bin/env bash
# The whole Swift suite in rounds on a machine whose cores are all kept busy by another process, to show that no test
# depends on how much wall-clock time passes (docs/testing.md, "A suite that passes on a busy machine").
#
#   scripts/stress-suite.sh [ROUNDS] [STORE…]     STORE: sqlite, postgres (default: both, alternating)
#
# One busy loop per core (`nproc`), at the same priority as the tests, runs for the whole time. A round is one
# `swift test --package-path Server --skip-build` of every test target: on SQLite (the store contract suite still runs against PostgreSQL
# too), or with every test server on PostgreSQL. glewlwyd, django-oauth-toolkit and a throwaway PostgreSQL cluster run
# on loopback as in scripts/test.sh. Prints one line per round and then the rounds passed per store; a failed round's
# log is kept (its path is printed). Exits non-zero unless every round passed. Environment:
#   LATCHKEY_STRESS_LOAD=0   no busy loops (a baseline)
#   LATCHKEY_STRESS_LOGS     where round logs go (default: a new /tmp/latchkey-stress.XXXXXX)
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS="${1:-5}"
shift || true
STORES=("$@")
[ ${#STORES[@]} -gt 0 ] || STORES=(sqlite postgres)
for store in "${STORES[@]}"; do
  case "$store" in sqlite|postgres) ;; *) echo "unknown store $store (sqlite or postgres)" >&2; exit 2 ;; esac
done
LOGS="${LATCHKEY_STRESS_LOGS:-$(mktemp -d /tmp/latchkey-stress.XXXXXX)}"
mkdir -p "$LOGS"

echo "==> swift build --package-path Server --build-tests"
swift build --package-path Server --build-tests

GLEWLWYD_WORK="$(mktemp -d /tmp/latchkey-glewlwyd.XXXXXX)"
PG_WORK="$(mktemp -d /tmp/latchkey-postgres.XXXXXX)"
DOT_WORK="$(mktemp -d /tmp/latchkey-dot.XXXXXX)"
LOAD_PIDS=()
cleanup() {
  for pid in "${LOAD_PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  Server/Tests/glewlwyd/stop.sh "$GLEWLWYD_WORK" >/dev/null 2>&1 || true
  Server/Tests/dot/stop.sh "$DOT_WORK" >/dev/null 2>&1 || true
  Server/Tests/postgres/stop.sh "$PG_WORK" >/dev/null 2>&1 || true
}
trap cleanup EXIT
Server/Tests/glewlwyd/start.sh "$GLEWLWYD_WORK"
export LATCHKEY_GLEWLWYD_ENV="$GLEWLWYD_WORK/env"
Server/Tests/dot/start.sh "$DOT_WORK"
export LATCHKEY_DOT_ENV="$DOT_WORK/env"
Server/Tests/postgres/start.sh "$PG_WORK"
# shellcheck disable=SC1091
. "$PG_WORK/env"

cores="$(nproc)"
if [ "${LATCHKEY_STRESS_LOAD:-1}" != 0 ]; then
  echo "==> $cores busy loop(s), one per core, for the whole run"
  for _ in $(seq "$cores"); do
    bash -c 'while :; do :; done' &
    LOAD_PIDS+=("$!")
  done
fi

declare -A passed=() ran=()
started_all=$SECONDS
for round in $(seq "$ROUNDS"); do
  for store in "${STORES[@]}"; do
    log="$LOGS/round-$round-$store.log"
    started=$SECONDS
    status=0
    if [ "$store" = postgres ]; then
      LATCHKEY_TEST_SERVER_POSTGRES_URL="$LATCHKEY_TEST_POSTGRES_URL" swift test --package-path Server --skip-build >"$log" 2>&1 || status=$?
    else
      swift test --package-path Server --skip-build >"$log" 2>&1 || status=$?
    fi
    ran[$store]=$(( ${ran[$store]:-0} + 1 ))
    tests="$(grep -Eo 'Test run with [0-9]+ tests' "$log" | tail -1 || true)"
    if [ "$status" -eq 0 ]; then
      passed[$store]=$(( ${passed[$store]:-0} + 1 ))
      echo "round $round $store: green in $(( SECONDS - started )) s (${tests:-no summary})"
      rm -f "$log"
    else
      echo "round $round $store: FAILED in $(( SECONDS - started )) s, log $log"
      grep -E '✘ Test .* failed|error:|recorded an issue' "$log" | head -20 | sed 's/^/    /'
    fi
  done
done

echo "==> $(( SECONDS - started_all )) s with $([ "${LATCHKEY_STRESS_LOAD:-1}" != 0 ] && echo "$cores busy loop(s)" || echo "no load")"
all=0
for store in "${STORES[@]}"; do
  echo "$store: ${passed[$store]:-0} of ${ran[$store]} rounds green"
  [ "${passed[$store]:-0}" -eq "${ran[$store]}" ] || all=1
done
exit "$all"
