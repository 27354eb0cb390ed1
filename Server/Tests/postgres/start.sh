#!/usr/bin/env bash
# Starts a throwaway PostgreSQL cluster on 127.0.0.1 for the tests: Debian's postgresql (installed if missing), a new
# data directory under WORKDIR, trust authentication for loopback only, and a superuser `latchkey`.
#
# Usage: Server/Tests/postgres/start.sh WORKDIR
#   PG_PORT  port on 127.0.0.1 (default: a free one the kernel picks, so a cluster of the developer's own never clashes)
# Writes WORKDIR/env (sourceable): LATCHKEY_TEST_POSTGRES_URL=postgres://latchkey@127.0.0.1:PORT/postgres and the rest
# initdb refuses to run as root: as root the cluster belongs to the `postgres` system user (or `nobody` without it).
set -euo pipefail

WORKDIR="${1:?usage: start.sh WORKDIR}"
PORT="${PG_PORT:-$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')}"
log() { echo "[postgres/start] $*" >&2; }

pg_bin() {
  local dir
  for dir in /usr/lib/postgresql/*/bin; do
    [ -x "$dir/initdb" ] && { echo "$dir"; return 0; }
  done
  return 1
}

if ! BIN="$(pg_bin)"; then
  log "installing Debian's postgresql"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q postgresql
  BIN="$(pg_bin)"
fi

mkdir -p "$WORKDIR"
DATA="$WORKDIR/data"
RUN_AS=()
if [ "$(id -u)" -eq 0 ]; then
  OWNER=postgres; id postgres >/dev/null 2>&1 || OWNER=nobody
  chown "$OWNER" "$WORKDIR"
  RUN_AS=(runuser -u "$OWNER" --)
fi

rm -rf "$DATA"
"${RUN_AS[@]}" "$BIN/initdb" -D "$DATA" -U latchkey --auth=trust --no-sync -E UTF8 --locale=C.UTF-8 >"$WORKDIR/initdb.log" 2>&1 \
  || { cat "$WORKDIR/initdb.log"; exit 1; }
# Loopback only, a socket directory of our own, and durability settings kept (the SIGKILL tests rely on them).
# max_connections: the whole suite on PostgreSQL has had 613 test servers alive at once (each with a pool of up to 3)
# and about 90 connections creating or dropping their databases: 863 connections measured at the peak, 1000 reached in
# a CI run (53300 "too many connections" at a server's start). 2500 covers every pool full at once.
"${RUN_AS[@]}" "$BIN/pg_ctl" -D "$DATA" -l "$WORKDIR/postgres.log" -w -t 60 \
  -o "-c listen_addresses=127.0.0.1 -p $PORT -c unix_socket_directories=$WORKDIR -c max_connections=2500" start >/dev/null

URL="postgres://latchkey@127.0.0.1:$PORT/postgres"
cat >"$WORKDIR/env" <<ENV
export LATCHKEY_TEST_POSTGRES_URL=$URL
export LATCHKEY_TEST_POSTGRES_BIN=$BIN
export LATCHKEY_TEST_POSTGRES_DATA=$DATA
export LATCHKEY_TEST_POSTGRES_PORT=$PORT
export LATCHKEY_TEST_POSTGRES_WORKDIR=$WORKDIR
ENV
log "PostgreSQL $("$BIN/postgres" --version | awk '{print $3}') on 127.0.0.1:$PORT ($DATA)"
