"""A PostgreSQL primary lost under a running `latchkey serve`, its standby promoted: the database URL names both hosts
(the standby first), and the server finds the writable one by itself, before and after the failover, without a restart.

A cluster of its own (not the shared one of the other tests): a primary and a streaming standby made with
`pg_basebackup`, with synchronous replication, so every commit the server answered is on the standby when the primary
dies. Patroni would do the promotion in production (`docs/operating.md`); here `pg_ctl promote` does it, which is what
Patroni runs. Needs Debian's PostgreSQL (`LATCHKEY_TEST_POSTGRES_BIN`, set by Server/Tests/postgres/start.sh), else skipped.
"""
import os
import pwd
import shutil
import subprocess
import tempfile
import time

import pytest
import requests

from conftest import Server, free_port, redeem, sign_in_code
from test_postgres_instances import KEK_ENV, REDIRECT, TIMEOUT, describe, is_refused, json_of, poll, refresh, sign_in

PG_BIN = os.environ.get("LATCHKEY_TEST_POSTGRES_BIN", "")
if not PG_BIN or not os.access(os.path.join(PG_BIN, "pg_basebackup"), os.X_OK):
    pytest.skip("LATCHKEY_TEST_POSTGRES_BIN is not set (scripts/test.sh sets it with Server/Tests/postgres/start.sh)",
                allow_module_level=True)


class Node:
    """One PostgreSQL node on 127.0.0.1, run as the data directory's owner (initdb refuses root, as in start.sh)."""

    def __init__(self, workdir, name, owner):
        self.workdir, self.name, self.owner = workdir, name, owner
        self.data = os.path.join(workdir, name)
        self.port = free_port()

    def run(self, binary, *args, timeout=90, check=True):
        command = [os.path.join(PG_BIN, binary), *args]
        if self.owner:
            command = ["runuser", "-u", self.owner, "--", *command]
        done = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout)
        assert not check or done.returncode == 0, f"{binary} {args}: {done.stdout}{done.stderr}"
        return done.stdout.strip()

    def configure(self, *lines):
        # Appended lines win over the ones before them (a standby's file is a copy of its primary's).
        with open(os.path.join(self.data, "postgresql.conf"), "a") as f:
            f.write("\n" + "\n".join(lines) + "\n")

    def start(self):
        self.configure("listen_addresses = '127.0.0.1'", f"port = {self.port}",
                       f"unix_socket_directories = '{self.workdir}'", "max_connections = 100")
        self.run("pg_ctl", "-D", self.data, "-l", os.path.join(self.workdir, self.name + ".log"), "-w", "-t", "60", "start")

    def kill(self):
        """As a crash: no checkpoint, no goodbye to the clients (`immediate` sends SIGQUIT to every backend)."""
        self.run("pg_ctl", "-D", self.data, "-m", "immediate", "-w", "stop")

    def stop(self):
        if os.path.exists(os.path.join(self.data, "postmaster.pid")):
            self.run("pg_ctl", "-D", self.data, "-m", "immediate", "stop", timeout=60, check=False)

    def sql(self, statement, database="postgres"):
        return self.run("psql", "-h", "127.0.0.1", "-p", str(self.port), "-U", "latchkey", "-d", database, "-X", "-q", "-A",
                        "-t", "-v", "ON_ERROR_STOP=1", "-c", statement, timeout=60)

    def latchkey_connections(self):
        return int(self.sql("SELECT count(*) FROM pg_stat_activity WHERE application_name = 'latchkey'"))


@pytest.fixture
def replicated():
    """A primary with one synchronous standby, streaming; the database `latchkey` on both."""
    workdir = tempfile.mkdtemp(prefix="latchkey-failover-")
    owner = None
    if os.geteuid() == 0:
        owner = "postgres"
        try:
            pwd.getpwnam(owner)
        except KeyError:
            owner = "nobody"
        shutil.chown(workdir, user=owner)
    primary, standby = Node(workdir, "primary", owner), Node(workdir, "standby", owner)
    try:
        primary.run("initdb", "-D", primary.data, "-U", "latchkey", "--auth=trust", "--no-sync", "-E", "UTF8",
                    "--locale=C.UTF-8")
        primary.start()
        primary.sql("CREATE DATABASE latchkey")
        standby.run("pg_basebackup", "-h", "127.0.0.1", "-p", str(primary.port), "-U", "latchkey", "-D", standby.data,
                    "-R", "-X", "stream", "-c", "fast", "--no-sync")
        standby.start()
        # Synchronous from here: a commit is answered once the standby has it.
        primary.sql("ALTER SYSTEM SET synchronous_standby_names = '*'")
        primary.sql("SELECT pg_reload_conf()")
        streaming = poll(lambda: primary.sql("SELECT sync_state FROM pg_stat_replication"), lambda s: s == "sync", within=60)
        assert streaming == "sync", f"the standby is not a synchronous one: {streaming!r}"
        assert standby.sql("SELECT pg_is_in_recovery()") == "t"
        yield primary, standby
    finally:
        primary.stop()
        standby.stop()
        shutil.rmtree(workdir, ignore_errors=True)


def test_a_promoted_standby_takes_over_without_a_restart(replicated):
    primary, standby = replicated
    workdir = tempfile.mkdtemp(prefix="latchkey-failover-server-")
    # The standby first: the server must pass it over (read-only) and write to the primary.
    url = f"postgres://latchkey@127.0.0.1:{standby.port},127.0.0.1:{primary.port}/latchkey"
    server = Server(workdir, database=url, env=KEK_ENV).start()
    try:
        tokens = sign_in(server)
        assert primary.latchkey_connections() >= 1
        assert standby.latchkey_connections() == 0, "a connection to the standby was kept"
        rotated = refresh(server, tokens["refresh_token"])
        assert rotated.status_code == 200, rotated.text
        live = rotated.json()["refresh_token"]
        code, verifier = sign_in_code(server, REDIRECT)
        spent = redeem(server, code, REDIRECT, verifier)
        assert spent.status_code == 200, spent.text

        killed = time.monotonic()
        primary.kill()
        # No writable host: 503 with Retry-After, promptly (not at a deadline), and /ready says so.
        ready = poll(lambda: requests.get(server.base + "/ready", timeout=TIMEOUT), lambda r: r.status_code == 503, within=30)
        assert isinstance(ready, requests.Response) and ready.status_code == 503, f"/ready: {describe(ready)}"
        during = refresh(server, live)
        assert during.status_code == 503, describe(during)
        assert int(during.headers.get("Retry-After", "0")) >= 1, dict(during.headers)
        assert json_of(during).get("error") == "temporarily_unavailable", during.text

        standby.run("pg_ctl", "-D", standby.data, "-w", "-t", "60", "promote")
        after = poll(lambda: refresh(server, live), lambda r: r.status_code != 503, within=60)
        recovered = time.monotonic() - killed
        # What was answered before is as committed: the live token works once, the code stays spent.
        assert isinstance(after, requests.Response) and after.status_code == 200, describe(after) + server_log(workdir)
        assert is_refused(redeem(server, code, REDIRECT, verifier)), "a code redeemed before the failover was accepted again"
        assert sign_in(server)["refresh_token"]
        ready = requests.get(server.base + "/ready", timeout=TIMEOUT)
        assert ready.status_code == 200, ready.text
        assert standby.latchkey_connections() >= 1
        print(f"\nfailover: the first success {recovered:.1f} s after the primary was killed (promotion included)")
    finally:
        server.stop()
        shutil.rmtree(workdir, ignore_errors=True)


def server_log(workdir):
    try:
        with open(os.path.join(workdir, "server.log"), errors="replace") as f:
            return "\n--- server log ---\n" + f.read()[-3000:]
    except OSError:
        return ""
