#!/usr/bin/env bash
# Runs every test: Swift unit and end-to-end tests (in-process servers on loopback), then the system tests
# (the real `latchkey` binary driven by pytest, headless Chromium through the hosted pages, SIGKILL durability, the
# CLI), with glewlwyd running on loopback for the SDK's standards-mode test.
# Installs what it needs on a fresh Debian machine (apt-get, pip); safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

# Each step's heading says how long the run has taken so far (the step's start), so a slow step shows in the log.
step() { printf '==> [%dm%02ds] %s\n' $((SECONDS / 60)) $((SECONDS % 60)) "$*"; }
trap 'step "done (exit $?)"' EXIT  # replaced once background builds start

need_apt=()
command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)
command -v chromedriver >/dev/null 2>&1 || need_apt+=(chromium-driver)
# The failover and partition tests' cluster (Server/Tests/system/patroni_cluster.py): Patroni and an etcd member.
command -v patroni >/dev/null 2>&1 || need_apt+=(patroni)
command -v etcd >/dev/null 2>&1 || need_apt+=(etcd-server)
if [ ${#need_apt[@]} -gt 0 ]; then
  step "installing ${need_apt[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q "${need_apt[@]}"
fi
python3 -c "import selenium, pytest, requests, pexpect, webauthn, aiosmtpd, zxingcpp, PIL" 2>/dev/null || { step "installing selenium pytest requests pexpect webauthn aiosmtpd zxing-cpp pillow"; python3 -m pip install -q selenium pytest requests pexpect webauthn aiosmtpd zxing-cpp pillow; }
# django-oauth-toolkit: a second third-party OpenID provider for the SDK's tests (Server/Tests/dot/start.sh).
python3 -c "import django, oauth2_provider" 2>/dev/null || { step "installing django-oauth-toolkit"; python3 -m pip install -q django-oauth-toolkit; }
# The API description's checkers (test_openapi.py), pinned: a new schemathesis release may add checks.
python3 -c "import openapi_spec_validator, schemathesis" 2>/dev/null || { step "installing openapi-spec-validator schemathesis"; python3 -m pip install -q openapi-spec-validator==0.9.0 schemathesis==4.32.5; }

step "formatting (swift-format, the toolchain's, with .swift-format: 4 spaces, 150 columns, layout only)"
# Fix with: swift format format --in-place --recursive --parallel Sources Examples Package.swift Server/Package.swift Server/Sources Server/Tests
swift format lint --strict --recursive --parallel Sources Examples Package.swift Server/Package.swift Server/Sources Server/Tests

step "the docs name only files that exist (scripts/check-docs.py)"
python3 scripts/check-docs.py

step "the Apple-side modules and the example app against a real iOS SDK (scripts/ios-typecheck.sh)"
# Runs where an extracted SDK is configured (LATCHKEY_IOS_SDK, or /tmp/ios-sdk/iPhoneOS17.4.sdk) and says in one line
# that it skipped otherwise; errors or warnings fail the run.
ios_status=0; scripts/ios-typecheck.sh || ios_status=$?
[ "$ios_status" -eq 0 ] || [ "$ios_status" -eq 2 ] || exit 1

step "the SDK's package (the repository's root): an app resolves swift-crypto and swift-log alone"
# The server, the CLI, the benchmarks, the fuzzers and the tests are the package in Server/ (it uses this one by path).
# A fresh resolution, as an app's first: nothing of the server's may reach an app's Package.resolved.
rm -f Package.resolved
swift package resolve >/dev/null
sdk_pins="$(python3 -c 'import json; print(" ".join(sorted(p["identity"] for p in json.load(open("Package.resolved"))["pins"])))')"
echo "an app that adds the SDK resolves: $sdk_pins"
[ "$sdk_pins" = "swift-asn1 swift-crypto swift-log" ] || { echo "the SDK package must resolve swift-crypto and swift-log (and swift-crypto's swift-asn1) only"; exit 1; }

# Two builds run in the background, beside the debug build and the tests: the ThreadSanitizer build (its own build
# folder, since sanitizer flags would otherwise rebuild .build from scratch; LATCHKEY_TSAN_BUILD leaves out of the
# package what its suites do not use, see Server/Package.swift) and the DocC catalogs of Latchkey, LatchkeyApple and
# LatchkeySwiftUI (in the SDK's package, which builds on its own, its .build without the server; the plugin is added to
# its dependencies only when LATCHKEY_DOCC is set, so an app never resolves it). They run in a CPU control group of the
# lowest weight, so the step in the foreground keeps the cores it needs and they take what it leaves (the suites wait
# on sockets, browsers and databases for much of their time); `nice` is not enough, because the build system starts
# its compilers at the default priority. Where no such group can be made, each runs in the foreground at its step.
tsan_build() { LATCHKEY_TSAN_BUILD=1 swift build --package-path Server --build-tests --sanitize=thread --scratch-path Server/.build-tsan; }
docc_build() { LATCHKEY_DOCC=1 swift package --disable-sandbox generate-documentation --target Latchkey --target LatchkeyApple --target LatchkeySwiftUI; }
background_group=""
make_background_group() {
  local dir knob value
  if [ -f /sys/fs/cgroup/cpu/cpu.shares ]; then  # cgroup v1: cpu.shares 2 against 1024 per task outside
    dir="/sys/fs/cgroup/cpu/latchkey-background-$$" knob=cpu.shares value=2
  elif grep -qw cpu /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null; then  # cgroup v2: cpu.weight 1 against 100
    dir="/sys/fs/cgroup/latchkey-background-$$" knob=cpu.weight value=1
  else
    return 0
  fi
  mkdir "$dir" 2>/dev/null || return 0
  if echo "$value" >"$dir/$knob" 2>/dev/null; then background_group="$dir"; else rmdir "$dir" 2>/dev/null || true; fi
}
make_background_group
declare -A background_pid=()
# start_background FUNCTION LOG: FUNCTION's run starts in the background group (nothing happens without one).
start_background() {
  [ -n "$background_group" ] || return 0
  # Should joining the group fail after all, the build still runs (at the default priority).
  (echo "$BASHPID" >"$background_group/cgroup.procs" || true; "$1") >"$2" 2>&1 &
  background_pid[$1]=$!
}
# finish FUNCTION LOG: waits for FUNCTION's background run, or runs it now; its log in full when it failed.
finish() {
  local started=$SECONDS status=0
  if [ -n "${background_pid[$1]:-}" ]; then
    wait "${background_pid[$1]}" || status=$?
    echo "$1 ran in the background; waited $((SECONDS - started)) s for its end"
  else
    "$1" >"$2" 2>&1 || status=$?
  fi
  [ "$status" -eq 0 ] || { cat "$2"; echo "$1 failed"; exit 1; }
}
stop_background() {
  [ -n "$background_group" ] || return 0
  for pid in $(cat "$background_group/cgroup.procs" 2>/dev/null); do kill "$pid" 2>/dev/null || true; done
  rmdir "$background_group" 2>/dev/null || true
}
trap 'status=$?; stop_background; step "done (exit $status)"' EXIT
# The server package is resolved first, so the builds beside each other never write its Package.resolved at once.
swift package --package-path Server resolve >/dev/null
TSAN_LOG="$(mktemp /tmp/latchkey-tsan-build.XXXXXX)"
DOCC_LOG="$(mktemp /tmp/latchkey-docc.XXXXXX)"
start_background tsan_build "$TSAN_LOG"
start_background docc_build "$DOCC_LOG"
[ -n "$background_group" ] && echo "the ThreadSanitizer and DocC builds run in the background ($background_group)"

step "swift build --package-path Server (the server, the CLI, the benchmarks, the fuzzers, every test; the SDK by path)"
swift build --package-path Server --build-tests
BIN="$(swift build --package-path Server --show-bin-path)"
# One build serves every step below (the debug build): a release build cost CI 10 to 24 minutes for a system-test step
# 2 minutes shorter. Set LATCHKEY_RELEASE_BUILD=1 to add it — the optimizer has crashed on code that builds in debug
# (Swift 6.3, SCIMPatch) — and the benchmark scripts (scripts/bench-peers.sh) build it for every figure they publish.
if [ -n "${LATCHKEY_RELEASE_BUILD:-}" ]; then
  step "swift build --package-path Server -c release"
  swift build --package-path Server -c release
fi
# Every benchmark group, briefly: they run, and the 10,000-caller run fails unless exactly one refresh was sent. The
# figures are in docs/testing.md, from longer release runs; nothing here is timed against a threshold.
step "latchkey-bench (a short run of every group)"
LATCHKEY_BENCH_SECONDS=0.1 "$BIN/latchkey-bench"

step "glewlwyd (Debian's OpenID provider, for the SDK's standards-mode test) on 127.0.0.1"
GLEWLWYD_WORK="$(mktemp -d /tmp/latchkey-glewlwyd.XXXXXX)"
PG_WORK="$(mktemp -d /tmp/latchkey-postgres.XXXXXX)"
DOT_WORK="$(mktemp -d /tmp/latchkey-dot.XXXXXX)"
cleanup() {
  local status=$?
  stop_background
  Server/Tests/glewlwyd/stop.sh "$GLEWLWYD_WORK" >/dev/null 2>&1 || true
  Server/Tests/dot/stop.sh "$DOT_WORK" >/dev/null 2>&1 || true
  Server/Tests/postgres/stop.sh "$PG_WORK" >/dev/null 2>&1 || true
  step "done (exit $status)"
}
trap cleanup EXIT
Server/Tests/glewlwyd/start.sh "$GLEWLWYD_WORK"
export LATCHKEY_GLEWLWYD_ENV="$GLEWLWYD_WORK/env"

step "django-oauth-toolkit (PyPI's OpenID provider for Django, for the SDK's any-provider test) on 127.0.0.1"
Server/Tests/dot/start.sh "$DOT_WORK"
export LATCHKEY_DOT_ENV="$DOT_WORK/env"

step "PostgreSQL (Debian's), a throwaway cluster on 127.0.0.1 for the shared store's tests"
Server/Tests/postgres/start.sh "$PG_WORK"
# shellcheck disable=SC1091
. "$PG_WORK/env"

step "swift test --package-path Server (SQLite; the store contract suite against SQLite and PostgreSQL)"
swift test --package-path Server --skip-build
step "swift test --package-path Server again, every test server on PostgreSQL (the whole suite against the shared store)"
# A failure keeps the database server's log (deadlocks, connection limits, what it refused): .ci-artifacts/.
LATCHKEY_TEST_SERVER_POSTGRES_URL="$LATCHKEY_TEST_POSTGRES_URL" swift test --package-path Server --skip-build || {
  status=$?
  mkdir -p .ci-artifacts
  cp "$PG_WORK/postgres.log" .ci-artifacts/postgres.log 2>/dev/null || true
  echo "PostgreSQL's log kept in .ci-artifacts/postgres.log; its last lines:"
  tail -n 60 .ci-artifacts/postgres.log 2>/dev/null || true
  exit $status
}
step "system tests (pytest: two instances on one PostgreSQL, the OpenAPI document under schemathesis, load and SIGKILL among them)"
# The debug binary: about 10 minutes on 2 cores where the release binary took 8 (the slowest tests are listed at the end).
LATCHKEY_BIN="$BIN/latchkey" python3 -m pytest -q --durations=12 Server/Tests/system

step "documentation: DocC catalogs of Latchkey, LatchkeyApple and LatchkeySwiftUI (swift-docc-plugin), no warnings"
finish docc_build "$DOCC_LOG"
if grep -q "warning:" "$DOCC_LOG"; then grep -A4 "warning:" "$DOCC_LOG"; echo "DocC reported warnings"; exit 1; fi
grep "Generated\|doccarchive" "$DOCC_LOG"
rm -f "$DOCC_LOG"

step "ThreadSanitizer: the concurrency-heavy suites (token manager single-flight, store contract, the PostgreSQL pool, server under concurrent requests)"
finish tsan_build "$TSAN_LOG"
export LATCHKEY_TSAN_BUILD=1
# Server/Tests/tsan-suppressions.txt names the third-party false positives it ignores, and why.
TSAN_OPTIONS="halt_on_error=1 suppressions=$PWD/Server/Tests/tsan-suppressions.txt" swift test --package-path Server --skip-build --sanitize=thread --scratch-path Server/.build-tsan \
  --filter "LockedStorageRefreshTests|AccessTokenCacheTests|AuthStateBroadcastTests|SDKHardeningTests|SDKRedirectSignInTests|StoreContractTests|PostgresPoolTests|ConcurrentGuessLockoutTests|RefreshTokenTests|RequestLimitsTests|MetricsTests"
unset LATCHKEY_TSAN_BUILD

step "fuzz targets: every seed and past finding replayed (libFuzzer runs: scripts/fuzz.sh)"
# The coverage-guided runs need their own AddressSanitizer build (4–7 min on 2 cores) and find nothing new in a few
# seconds; they run by hand (`scripts/fuzz.sh --all SECONDS`, figures in docs/testing.md) or with LATCHKEY_FUZZ_SECONDS
# set here. Every input that ever crashed a target is kept in its corpus, so the replay is the regression check.
"$BIN/latchkey-fuzz" --corpora Server/Tests/fuzz/corpus
if [ -n "${LATCHKEY_FUZZ_SECONDS:-}" ]; then
  step "fuzzing: every libFuzzer target for ${LATCHKEY_FUZZ_SECONDS} s from its seed corpus (scripts/fuzz.sh)"
  scripts/fuzz.sh --all "$LATCHKEY_FUZZ_SECONDS"
fi
