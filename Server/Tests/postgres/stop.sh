#!/usr/bin/env bash
# Stops the cluster Server/Tests/postgres/start.sh started in WORKDIR and deletes it.
set -uo pipefail
WORKDIR="${1:?usage: stop.sh WORKDIR}"
[ -f "$WORKDIR/env" ] || exit 0
# shellcheck disable=SC1091
. "$WORKDIR/env"
RUN_AS=()
[ "$(id -u)" -eq 0 ] && RUN_AS=(runuser -u "$(stat -c %U "$WORKDIR")" --)
"${RUN_AS[@]}" "$LATCHKEY_TEST_POSTGRES_BIN/pg_ctl" -D "$LATCHKEY_TEST_POSTGRES_DATA" -m immediate stop >/dev/null 2>&1
rm -rf "$WORKDIR"
