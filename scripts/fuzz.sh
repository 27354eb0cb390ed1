#!/usr/bin/env bash
# Coverage-guided fuzzing (libFuzzer + AddressSanitizer) of the decoders of untrusted input; see Server/Tests/fuzz/README.md.
#
#   scripts/fuzz.sh TARGET SECONDS      fuzz one target for SECONDS, starting from Server/Tests/fuzz/corpus/TARGET
#   scripts/fuzz.sh --all SECONDS       every target in turn, SECONDS each
#   scripts/fuzz.sh --list              the targets (name, -max_len, what it feeds)
#   scripts/fuzz.sh --replay TARGET FILE_OR_DIR…   run inputs (a crash file) through the fuzzing build once
#
# Builds (incrementally) into .build-fuzz with its own flags; never touches .build. New inputs go to a temporary working
# corpus, never to the committed seeds. Exits non-zero on any crash, sanitizer report, timeout or out-of-memory, and
# prints the saved input's path. Environment:
#   LATCHKEY_FUZZ_ARTIFACTS  where crash inputs and logs go (default .build-fuzz/artifacts)
#   LATCHKEY_FUZZ_KEEP=1     keep the working corpus (its path is printed)
#   LATCHKEY_FUZZ_NO_BUILD=1 use the binary already built
#   LATCHKEY_FUZZ_JOBS       parallel builds (default: swift build --package-path Server's)
set -euo pipefail
cd "$(dirname "$0")/.."

SCRATCH=.build-fuzz
BIN="$SCRATCH/debug/latchkey-fuzz"
ARTIFACTS="${LATCHKEY_FUZZ_ARTIFACTS:-$SCRATCH/artifacts}"

usage() { sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }

build() {
  [ "${LATCHKEY_FUZZ_NO_BUILD:-}" = 1 ] && [ -x "$BIN" ] && return
  local swiftc runtime
  swiftc="$(command -v swiftc)" || { echo "swiftc not found" >&2; exit 2; }
  swiftc="$(readlink -f "$swiftc")"
  # libFuzzer without its main(): SwiftPM gives the executable its own entry point, which then calls
  # LLVMFuzzerRunDriver. The runtime sits in the clang resource directory swiftc uses for its sanitizers.
  runtime="$(dirname "$swiftc")/../lib/swift/clang/lib/linux/libclang_rt.fuzzer_no_main-$(uname -m).a"
  [ -f "$runtime" ] || runtime="$(ls "$(dirname "$swiftc")"/../lib/clang/*/lib/linux/libclang_rt.fuzzer_no_main-"$(uname -m)".a 2>/dev/null | head -1)"
  [ -f "$runtime" ] || { echo "libclang_rt.fuzzer_no_main not found next to $swiftc (a Linux Swift toolchain is needed)" >&2; exit 2; }
  echo "==> building latchkey-fuzz for libFuzzer (ASan, coverage) in $SCRATCH" >&2
  # --sanitize=address: Swift and C targets. -sanitize=fuzzer to the frontend only: coverage and comparison tracing
  # in every Swift module, without the driver linking libFuzzer's main.
  nice -n 10 swift build --package-path Server --scratch-path "$SCRATCH" --product latchkey-fuzz ${LATCHKEY_FUZZ_JOBS:+-j "$LATCHKEY_FUZZ_JOBS"} \
    --sanitize=address \
    -Xswiftc -Xfrontend -Xswiftc -sanitize=fuzzer \
    -Xswiftc -DLATCHKEY_LIBFUZZER \
    -Xlinker "$runtime" -Xlinker -lstdc++ 2>&1 | sed "/Cannot export local symbol '__asan/d" >&2
}

targets() { "$BIN" --list | cut -f1; }
max_len() { "$BIN" --list | awk -F'\t' -v t="$1" '$1 == t { print $2 }'; }

export SWIFT_BACKTRACE=enable=no  # libFuzzer reports crashes; Swift's backtracer would only slow them down
# No LeakSanitizer: Swift keeps enum tags in pointers' spare bits, so memory held by a global looks leaked. (Replaying
# the fuzzers' corpora many times in the normal build shows no growth.) A smaller quarantine and allocation stacks keep
# ASan's own memory, which otherwise grows to ~1 GiB in 4 minutes, well under -rss_limit_mb.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=0:allocator_may_return_null=1:quarantine_size_mb=64:malloc_context_size=10}"

# One target; prints a summary line "TARGET SECONDS EXECUTIONS COV FT CORPUS RESULT".
run_target() {
  local target="$1" seconds="$2" seeds="Server/Tests/fuzz/corpus/$1" len work log status
  len="$(max_len "$target")"
  [ -n "$len" ] || { echo "unknown target $target (scripts/fuzz.sh --list)" >&2; return 2; }
  [ -d "$seeds" ] || { echo "no seed corpus $seeds" >&2; return 2; }
  mkdir -p "$ARTIFACTS/$target"
  work="$(mktemp -d "${TMPDIR:-/tmp}/latchkey-fuzz-$target.XXXXXX")"
  log="$ARTIFACTS/$target.log"
  echo "==> $target: ${seconds}s, -max_len=$len, seeds $seeds, working corpus $work" >&2
  set +e
  LATCHKEY_FUZZ_TARGET="$target" nice -n 10 "$BIN" "$work" "$seeds" \
    -max_len="$len" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=2048 -max_total_time="$seconds" \
    -print_final_stats=1 -artifact_prefix="$ARTIFACTS/$target/" >"$log" 2>&1
  status=$?
  set -e
  local execs cov ft corp result
  # (`|| true`: a log without such lines, as when an input of the seed corpus crashes, is not an error of this script.)
  execs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)"
  cov="$( (grep -o 'cov: [0-9]*' "$log" || true) | tail -1 | cut -d' ' -f2)"
  ft="$( (grep -o 'ft: [0-9]*' "$log" || true) | tail -1 | cut -d' ' -f2)"
  corp="$( (grep -o 'corp: [0-9]*/[0-9]*[a-zA-Z]*' "$log" || true) | tail -1 | cut -d' ' -f2)"
  if [ "$status" -eq 0 ]; then
    result=ok
  else
    result="FAILED(exit $status)"
    echo "---- $target: libFuzzer exited $status; end of $log:" >&2
    tail -n 60 "$log" >&2
    (grep -h 'Test unit written to' "$log" || true) | sed "s/^/---- $target: /" >&2
    echo "---- replay: scripts/fuzz.sh --replay $target <that file>   (or: swift run --package-path Server latchkey-fuzz $target <that file>)" >&2
  fi
  if [ "${LATCHKEY_FUZZ_KEEP:-}" = 1 ]; then echo "==> $target: working corpus kept in $work" >&2; else rm -rf "$work"; fi
  printf '%-20s %6ss %12s %7s %7s %10s  %s\n' "$target" "$seconds" "${execs:-?}" "${cov:-?}" "${ft:-?}" "${corp:-?}" "$result"
  [ "$status" -eq 0 ]
}

header() { printf '%-20s %7s %12s %7s %7s %10s  %s\n' target time executions cov ft corpus result; }

case "${1:-}" in
  --list)
    build
    "$BIN" --list
    ;;
  --replay)
    [ $# -ge 3 ] || usage
    build
    target="$2"; shift 2
    [ -n "$(max_len "$target")" ] || { echo "unknown target $target" >&2; exit 2; }
    LATCHKEY_FUZZ_TARGET="$target" "$BIN" -runs=0 "$@"
    ;;
  --all)
    [ $# -eq 2 ] || usage
    build
    failed=()
    summary="$(mktemp)"
    header >"$summary"
    for target in $(targets); do
      run_target "$target" "$2" >>"$summary" || failed+=("$target")
    done
    cat "$summary"; rm -f "$summary"
    if [ ${#failed[@]} -gt 0 ]; then echo "failed: ${failed[*]} (inputs and logs in $ARTIFACTS)" >&2; exit 1; fi
    ;;
  ""|-h|--help) usage ;;
  -*) usage ;;
  *)
    [ $# -eq 2 ] || usage
    build
    header
    run_target "$1" "$2"
    ;;
esac
