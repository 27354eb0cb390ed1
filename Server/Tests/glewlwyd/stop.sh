#!/usr/bin/env bash
# Stop the glewlwyd started by start.sh. Usage: stop.sh [WORKDIR] (default: last start.sh run).
# Set GLEWLWYD_KEEP_WORKDIR=1 to keep the workdir (db, config, log) for inspection.
set -uo pipefail
WORK="${1:-$(cat /tmp/latchkey-glewlwyd.last 2>/dev/null || true)}"
[ -n "$WORK" ] && [ -f "$WORK/glewlwyd.pid" ] || { echo "[glewlwyd/stop] nothing to stop (no pid file)"; exit 0; }
PID="$(cat "$WORK/glewlwyd.pid")"
# only signal it if it really is our glewlwyd
if kill -0 "$PID" 2>/dev/null && grep -q glewlwyd "/proc/$PID/comm" 2>/dev/null; then
  kill -TERM "$PID"
  for _ in $(seq 1 40); do kill -0 "$PID" 2>/dev/null || break; sleep 0.25; done
  if kill -0 "$PID" 2>/dev/null; then kill -KILL "$PID"; sleep 0.5; fi
  echo "[glewlwyd/stop] stopped pid $PID"
else
  echo "[glewlwyd/stop] pid $PID not running"
fi
rm -f "$WORK/glewlwyd.pid"
if [ "${GLEWLWYD_KEEP_WORKDIR:-0}" != 1 ] && [ -f "$WORK/glewlwyd.conf" ]; then
  rm -rf -- "$WORK"
  echo "[glewlwyd/stop] removed $WORK"
fi
[ "$(cat /tmp/latchkey-glewlwyd.last 2>/dev/null)" = "$WORK" ] && rm -f /tmp/latchkey-glewlwyd.last
exit 0
