#!/usr/bin/env bash
# Stops the django-oauth-toolkit that start.sh started in WORKDIR and removes WORKDIR.
set -uo pipefail
WORK="${1:?usage: stop.sh WORKDIR}"
if [ -f "$WORK/dot.pid" ]; then
  PID="$(cat "$WORK/dot.pid")"
  if kill -0 "$PID" 2>/dev/null && grep -q python "/proc/$PID/comm" 2>/dev/null; then
    kill -TERM "$PID"
    for _ in $(seq 1 40); do kill -0 "$PID" 2>/dev/null || break; sleep 0.25; done
    kill -0 "$PID" 2>/dev/null && kill -KILL "$PID"
  fi
fi
rm -rf -- "$WORK"
exit 0
