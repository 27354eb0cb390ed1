"""Several `latchkey serve` instances sharing one PostgreSQL database, as behind a load balancer: a sign-in, a refresh,
an app-native flow or a code may go to any instance; single-use things (refresh tokens, codes, flow steps) are spent
once across all of them; an instance killed under load loses nothing it confirmed; a database outage is answered 503
and recovered from without a restart; `latchkey keys rotate` reaches every instance; a database migrated by a newer
release is refused.

Needs `LATCHKEY_TEST_POSTGRES_URL` (a superuser URL; scripts/test.sh starts a throwaway cluster with
Server/Tests/postgres/start.sh), else the module is skipped. Each run works in a database of its own, dropped at the end.
"""
import base64
import json
import os
import signal
import pwd
import re
import secrets
import shlex
import shutil
import subprocess
import tempfile
import threading
import time
import urllib.parse

import pytest
import requests
import urllib3

from conftest import BINARY, DEMO_PASSWORD, DEMO_USER, Server, free_port, poll, redeem, sign_in_code

ADMIN_URL = os.environ.get("LATCHKEY_TEST_POSTGRES_URL")
if not ADMIN_URL:
    pytest.skip("LATCHKEY_TEST_POSTGRES_URL is not set (scripts/test.sh starts PostgreSQL with Server/Tests/postgres/start.sh)",
                allow_module_level=True)

PG_BIN = os.environ.get("LATCHKEY_TEST_POSTGRES_BIN", "")
PG_DATA = os.environ.get("LATCHKEY_TEST_POSTGRES_DATA", "")
PG_PORT = os.environ.get("LATCHKEY_TEST_POSTGRES_PORT", "")
PG_WORKDIR = os.environ.get("LATCHKEY_TEST_POSTGRES_WORKDIR", "") or (os.path.dirname(PG_DATA) if PG_DATA else "")

CLIENT = "latchkey-demo"
REDIRECT = "http://127.0.0.1:9/callback"
TIMEOUT = 20  # every request: a server that hangs on a lost database fails the test instead of stalling it
# Every instance and every CLI run seals and opens the signing keys with this one key-encryption key.
KEK_ENV = {"LATCHKEY_KEY_ENCRYPTION_KEY": base64.b64encode(secrets.token_bytes(32)).decode()}
TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
JWT_TYPE = "urn:ietf:params:oauth:token-type:jwt"


# PostgreSQL: databases of our own, and the cluster stopped and started as its owner.

def psql(url, sql):
    candidate = os.path.join(PG_BIN, "psql") if PG_BIN else ""
    binary = candidate if candidate and os.access(candidate, os.X_OK) else (shutil.which("psql") or "psql")
    done = subprocess.run([binary, url, "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-c", sql],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, f"psql {sql!r}: {done.stderr}"
    return done.stdout.strip()


def create_database():
    name = "latchkey_sys_" + secrets.token_hex(6)
    psql(ADMIN_URL, f"CREATE DATABASE {name}")
    return name, urllib.parse.urlsplit(ADMIN_URL)._replace(path="/" + name).geturl()


def drop_database(name):
    psql(ADMIN_URL, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def pg_ctl(*args):
    command = [os.path.join(PG_BIN, "pg_ctl"), "-D", PG_DATA, *args]
    if os.geteuid() == 0:  # the cluster belongs to the data directory's owner (start.sh: postgres, or nobody)
        command = ["runuser", "-u", pwd.getpwuid(os.stat(PG_DATA).st_uid).pw_name, "--", *command]
    return subprocess.run(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=90)


def postgres_options():
    """The options the cluster runs with (start.sh's), read back from `postmaster.opts`, for `pg_ctl start -o`."""
    words = []
    try:
        with open(os.path.join(PG_DATA, "postmaster.opts")) as f:
            words = shlex.split(f.read())[1:]  # without the postgres binary
    except (OSError, ValueError):
        pass
    options, index = [], 0
    while index < len(words):
        if words[index] == "-D":
            index += 2
            continue
        options.append(words[index])
        index += 1
    if not options:
        options = ["-c", "listen_addresses=127.0.0.1", "-p", PG_PORT, "-c", f"unix_socket_directories={PG_WORKDIR}",
                   "-c", "max_connections=200"]
    return " ".join(shlex.quote(word) for word in options)


def postgres_running():
    return bool(PG_BIN and PG_DATA) and pg_ctl("status").returncode == 0


def start_postgres(options):
    started = pg_ctl("-l", os.path.join(PG_WORKDIR, "postgres.log"), "-w", "-t", "60", "-o", options, "start")
    assert started.returncode == 0, started.stdout


def ensure_postgres_running():
    """A failed outage test must not leave the cluster down for the tests after it."""
    if PG_BIN and PG_DATA and not postgres_running():
        start_postgres(postgres_options())


# Instances.

class Instance(Server):
    """`latchkey serve` on the shared database with the shared key-encryption key; `issuer` is the name every
    instance answers as (instance A's URL)."""

    def __init__(self, database, issuer=None, port=None, workdir=None):
        port = port or free_port()
        super().__init__(workdir or tempfile.mkdtemp(prefix="latchkey-pg-"), port=port, database=database,
                         issuer=issuer or f"http://localhost:{port}", env=KEK_ENV)

    @property
    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def restarted(self):
        return Instance(self.database, issuer=self.issuer, port=self.port, workdir=self.workdir).start()

    def log_tail(self, chars=3000):
        try:
            with open(os.path.join(self.workdir, "server.log"), errors="replace") as f:
                return f.read()[-chars:]
        except OSError:
            return ""


class Pair:
    """Instances A and B; B answers as A's issuer."""

    def __init__(self, database):
        self.a = Instance(database).start()
        try:
            self.b = Instance(database, issuer=self.a.issuer).start()
        except Exception:
            self.a.stop()
            raise

    def ensure_running(self):
        if not self.a.alive:
            self.a = self.a.restarted()
        if not self.b.alive:
            self.b = self.b.restarted()

    def logs(self):
        return f"\n--- A log ---\n{self.a.log_tail()}\n--- B log ---\n{self.b.log_tail()}"

    def stop(self):
        for server in (self.a, self.b):
            server.stop()
            shutil.rmtree(server.workdir, ignore_errors=True)


@pytest.fixture(scope="module")
def shared_database():
    name, url = create_database()
    yield url
    ensure_postgres_running()
    drop_database(name)


@pytest.fixture(scope="module")
def cluster(shared_database):
    pair = Pair(shared_database)
    yield pair
    pair.stop()


@pytest.fixture
def pair(cluster):
    ensure_postgres_running()
    cluster.ensure_running()  # the SIGKILL test leaves A dead
    return cluster


# HTTP.

def sign_in(server):
    """The hosted sign-in with PKCE against `server`, the code redeemed there: the token response."""
    code, verifier = sign_in_code(server, REDIRECT)
    tokens = redeem(server, code, REDIRECT, verifier)
    assert tokens.status_code == 200, tokens.text
    return tokens.json()


def refresh(server, refresh_token):
    return requests.post(server.base + "/oauth2/token", data={
        "grant_type": "refresh_token", "refresh_token": refresh_token, "client_id": CLIENT}, timeout=TIMEOUT)


def userinfo(server, access_token):
    return requests.get(server.base + "/oauth2/userinfo", headers={"Authorization": "Bearer " + access_token}, timeout=TIMEOUT)


def flow(server, body):
    return requests.post(server.base + "/flow/execute", json=body, timeout=TIMEOUT)


def jwks_kids(server):
    r = requests.get(server.base + "/oauth2/jwks", timeout=TIMEOUT)
    assert r.status_code == 200, r.text
    return {key["kid"] for key in r.json()["keys"]}


def jwt_part(token, index):
    """The decoded header (0) or claims (1) of a compact JWS."""
    part = token.split(".")[index]
    return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))


def json_of(response):
    try:
        body = response.json()
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


def is_refused(response):
    """400 invalid_grant: a spent, revoked or unknown grant."""
    return response.status_code == 400 and json_of(response).get("error") == "invalid_grant"


def describe(result):
    if isinstance(result, requests.Response):
        return f"{result.status_code} {result.text[:300]}"
    return repr(result)


def race(*sends):
    """Runs each `send()` in its own thread, all released together by one barrier; the responses (or exceptions) in order."""
    barrier = threading.Barrier(len(sends))
    results = [None] * len(sends)

    def run(index, send):
        try:
            barrier.wait(timeout=TIMEOUT)
            results[index] = send()
        except Exception as error:  # noqa: BLE001 - reported by the caller's assertion
            results[index] = error

    threads = [threading.Thread(target=run, args=(index, send), daemon=True) for index, send in enumerate(sends)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=2 * TIMEOUT)
    return results


def latchkey(*args, timeout=60):
    """The CLI with the instances' key-encryption key, in a scratch directory (nothing lands in the checkout)."""
    return subprocess.run([BINARY, *args], env={**os.environ, **KEK_ENV}, capture_output=True, text=True, timeout=timeout,
                          cwd=tempfile.gettempdir())


# 1. Any instance continues what another began.

def test_sign_in_on_a_refresh_on_b_userinfo_on_a(pair):
    a, b = pair.a, pair.b
    discovery = requests.get(b.base + "/.well-known/openid-configuration", timeout=TIMEOUT).json()
    assert discovery["issuer"] == a.issuer, "both instances answer as one issuer"

    tokens = sign_in(a)
    refreshed = refresh(b, tokens["refresh_token"])
    assert refreshed.status_code == 200, refreshed.text + pair.logs()
    new = refreshed.json()
    assert new["refresh_token"] != tokens["refresh_token"], "rotated"
    assert jwt_part(new["access_token"], 1)["iss"] == a.issuer

    info = userinfo(a, new["access_token"])
    assert info.status_code == 200, info.text
    assert info.json()["email"] == DEMO_USER
    assert info.json()["sub"] == jwt_part(tokens["id_token"], 1)["sub"]

    # B's rotation is A's too: B's new token works at A, and the token B spent, presented at A within the reuse
    # interval, is handed the family's live token, the one A itself issued (never a second live token).
    again = refresh(a, new["refresh_token"])
    assert again.status_code == 200, again.text
    late = refresh(a, tokens["refresh_token"])
    assert late.status_code == 200 and late.json()["refresh_token"] == again.json()["refresh_token"], describe(late)


# 2. A refresh token raced on both instances is spent once: within the reuse interval (`refresh_token_reuse_seconds`,
# default 60 s) the second request, on the other instance, is handed the same successor (an app and its extension, or a
# retry of a lost answer, landing on another instance); the successor is then the family's one live token, and the raced
# token presented again after the successor was used (a late request) is handed the newest token, at either instance.
# (A replay after the interval revokes the family: RefreshTokenReuseTests and the store contract, on PostgreSQL too,
# with the server's clock advanced; test_load.py with the interval off.)

def test_refresh_token_raced_on_a_and_b_is_spent_once(pair):
    a, b = pair.a, pair.b
    for round_ in range(5):
        token = sign_in(a if round_ % 2 == 0 else b)["refresh_token"]
        results = race(lambda: refresh(a, token), lambda: refresh(b, token))
        described = f"round {round_}: A {describe(results[0])} | B {describe(results[1])}"
        assert all(isinstance(r, requests.Response) for r in results), described
        assert all(r.status_code == 200 for r in results), described
        successors = {r.json()["refresh_token"] for r in results}
        assert len(successors) == 1, f"the family forked: {described}"
        assert all(r.json().get("access_token") for r in results), described
        successor = successors.pop()
        assert successor != token, described
        # The successor rotates once; the raced token, late, is handed that newest token at the other instance, and
        # the family goes on with it: one live token, never two.
        first, second = (b, a) if round_ % 2 == 0 else (a, b)
        newest = refresh(first, successor)
        assert newest.status_code == 200, f"round {round_}: {describe(newest)}"
        late = refresh(second, token)
        assert late.status_code == 200, f"round {round_}: a late request two rotations back: {describe(late)}"
        assert late.json()["refresh_token"] == newest.json()["refresh_token"], f"round {round_}: the family forked"
        later = refresh(first, newest.json()["refresh_token"])
        assert later.status_code == 200, f"round {round_}: the family's live token: {describe(later)}"


# 3. An authorization code raced on both instances is redeemed once.

def test_authorization_code_raced_on_a_and_b_is_redeemed_once(pair):
    a, b = pair.a, pair.b
    for round_ in range(5):
        code, verifier = sign_in_code(a, REDIRECT)
        results = race(lambda: redeem(a, code, REDIRECT, verifier), lambda: redeem(b, code, REDIRECT, verifier))
        described = f"round {round_}: A {describe(results[0])} | B {describe(results[1])}"
        assert all(isinstance(r, requests.Response) for r in results), described
        winners = [r for r in results if r.status_code == 200]
        assert len(winners) == 1, described
        assert winners[0].json().get("access_token") and winners[0].json().get("refresh_token"), described
        loser = results[1] if winners[0] is results[0] else results[0]
        assert is_refused(loser), described


# 4. An app-native flow started on A continues on B.

def test_native_flow_started_on_a_completes_on_b(pair):
    a, b = pair.a, pair.b
    start = flow(a, {"applicationId": CLIENT, "flowType": "AUTHENTICATION"})
    assert start.status_code == 200, start.text
    started = start.json()
    assert started["flowStatus"] == "INCOMPLETE" and started.get("executionId") and started.get("challengeToken"), started
    identifiers = {field.get("identifier") for field in started.get("data", {}).get("inputs") or []}
    assert {"username", "password"} <= identifiers, started

    step = {"executionId": started["executionId"], "challengeToken": started["challengeToken"], "action": "action_001",
            "inputs": {"username": DEMO_USER, "password": DEMO_PASSWORD}}
    done = flow(b, step)
    assert done.status_code == 200, done.text + pair.logs()
    completed = done.json()
    assert completed["flowStatus"] == "COMPLETE" and completed.get("assertion"), completed

    # The step B took is taken for A too: the same challenge token does not complete the flow again there.
    replay = flow(a, step)
    assert replay.status_code != 200 or (json_of(replay).get("flowStatus") != "COMPLETE" and not json_of(replay).get("assertion")), replay.text

    # The assertion is exchanged once, whichever instance is asked (A here, then B).
    exchange = {"grant_type": TOKEN_EXCHANGE, "subject_token": completed["assertion"], "subject_token_type": JWT_TYPE,
                "client_id": CLIENT}
    tokens = requests.post(a.base + "/oauth2/token", data=exchange, timeout=TIMEOUT)
    assert tokens.status_code == 200, tokens.text
    assert tokens.json().get("access_token") and tokens.json().get("refresh_token"), tokens.text
    second = requests.post(b.base + "/oauth2/token", data=exchange, timeout=TIMEOUT)
    assert second.status_code == 400, f"the assertion was exchanged twice: {second.text}"
    assert userinfo(b, tokens.json()["access_token"]).status_code == 200
    assert refresh(b, tokens.json()["refresh_token"]).status_code == 200


# 6. SIGKILL of one instance under load.

class Chain:
    """One sign-in and the refreshes that followed, on one instance: the refresh token of each 200 answer, in order."""

    def __init__(self, name):
        self.name = name
        self.tokens = []
        self.confirmed_at = []
        self.failures = []  # (time, description)
        self.unanswered = False  # a request reached the instance but got no answer: its token may have been spent

    def confirm(self, refresh_token):
        self.tokens.append(refresh_token)
        self.confirmed_at.append(time.time())


def never_sent(error):
    """The connection was refused: the request never reached the server (so it spent nothing)."""
    reason = getattr(error.args[0], "reason", None) if error.args else None
    return isinstance(reason, urllib3.exceptions.NewConnectionError)


# Password checks of one account from one address that may be in flight at once: the server refuses more (as a wrong
# password, without a hash) so parallel guesses get no more hashes than the lockout allows (max_failures_per_account, 5).
SIGN_INS_AT_ONCE = threading.Semaphore(3)


def load(server, name, chains, stop, hold=None, held=None, length=15):
    """Sign in, refresh `length` times, sign in again… until `stop`. With `hold`: stops between two requests once
    `hold` is set, and sets `held` (so nothing of this worker is in flight when its instance is killed)."""
    while not stop.is_set():
        chain = Chain(name)
        chains.append(chain)
        try:
            with SIGN_INS_AT_ONCE:
                tokens = sign_in(server)
            chain.confirm(tokens["refresh_token"])
            for _ in range(length):
                if stop.is_set():
                    return
                if hold is not None and hold.is_set():
                    held.set()
                    return
                r = refresh(server, chain.tokens[-1])
                if r.status_code != 200:
                    chain.failures.append((time.time(), describe(r)))
                    return
                chain.confirm(r.json()["refresh_token"])
        except requests.ConnectionError as error:
            chain.unanswered = not never_sent(error)
            chain.failures.append((time.time(), repr(error)))
            return
        except Exception as error:  # noqa: BLE001 - an assertion in sign_in, a timeout: reported below
            chain.unanswered = True
            chain.failures.append((time.time(), repr(error)))
            return
        if hold is not None and hold.is_set():
            held.set()
            return


def test_sigkill_of_one_instance_under_load_loses_nothing_confirmed(pair):
    a, b = pair.a, pair.b
    chains, stop, hold, held = [], threading.Event(), threading.Event(), threading.Event()
    workers = [threading.Thread(target=load, args=(b, "B", chains, stop), daemon=True) for _ in range(3)]
    workers += [threading.Thread(target=load, args=(a, "A", chains, stop), daemon=True) for _ in range(2)]
    # One worker on A pauses before the kill: its last confirmed token is certainly unspent.
    workers.append(threading.Thread(target=load, args=(a, "A-held", chains, stop, hold, held), daemon=True))
    started = time.time()
    for worker in workers:
        worker.start()
    time.sleep(2.5)
    hold.set()
    assert held.wait(timeout=10), "the held worker did not pause"
    killed_at = time.time()
    a.kill()  # SIGKILL while the other two workers on A have requests in flight
    time.sleep(max(0.0, started + 5.0 - time.time()))
    stop.set()
    for worker in workers:
        worker.join(timeout=3 * TIMEOUT)
    assert not any(worker.is_alive() for worker in workers), "a load worker hung"

    on_b = [c for c in chains if c.name == "B"]
    on_a = [c for c in chains if c.name != "B"]
    b_failures = [f for c in on_b for f in c.failures]
    assert not b_failures, f"B failed under load / when A died: {b_failures[:5]}" + pair.logs()
    assert any(t > killed_at for c in on_b for t in c.confirmed_at), "B confirmed nothing after A was killed"
    assert sum(len(c.tokens) for c in on_b) >= 10 and sum(len(c.tokens) for c in on_a) >= 3, "too little load to prove anything"
    early = [f for c in on_a for f in c.failures if f[0] < killed_at]
    assert not early, f"A failed before it was killed: {early[:5]}" + pair.logs()

    # Nothing a server confirmed is lost: the last token of each chain refreshes once at B (a second use is a replay),
    # unless a request with it was in flight on A when A died and spent it (then it is refused as a replay).
    lost = []
    for chain in chains:
        if not chain.tokens:
            continue
        first = refresh(b, chain.tokens[-1])
        if first.status_code == 200:
            # Used twice within the reuse interval it is handed the same successor; once that successor is used, the
            # newest token: the family's one live token each time.
            again = refresh(b, chain.tokens[-1])
            if again.status_code != 200 or again.json()["refresh_token"] != first.json()["refresh_token"]:
                lost.append((chain.name, "a retry within the reuse interval was not given the same successor", describe(again)))
            else:
                newest = refresh(b, first.json()["refresh_token"])
                late = refresh(b, chain.tokens[-1])
                if newest.status_code != 200 or late.status_code != 200 \
                        or late.json()["refresh_token"] != newest.json()["refresh_token"]:
                    lost.append((chain.name, "a token rotated within the interval was not handed the live token", describe(late)))
        elif not (chain.unanswered and is_refused(first)):
            lost.append((chain.name, len(chain.tokens), chain.unanswered, describe(first)))
    assert not lost, f"confirmed refresh tokens lost: {lost[:5]} of {len(chains)} chains" + pair.logs()
    assert any(c.name == "A-held" and c.tokens for c in chains), "the held worker confirmed nothing"


# 7. A database outage: 503 with Retry-After, no hang, and recovery without a restart.

def test_postgres_outage_answers_503_and_recovers_without_restart(pair):
    if not (PG_BIN and PG_DATA):
        pytest.skip("LATCHKEY_TEST_POSTGRES_BIN / LATCHKEY_TEST_POSTGRES_DATA not set: cannot stop the cluster")
    a, b = pair.a, pair.b
    before = sign_in(a)
    options = postgres_options()
    stopped = pg_ctl("-m", "fast", "stop")
    assert stopped.returncode == 0, stopped.stdout
    try:
        ready = poll(lambda: requests.get(a.base + "/ready", timeout=TIMEOUT), lambda r: r.status_code == 503, within=15)
        assert isinstance(ready, requests.Response) and ready.status_code == 503, \
            f"/ready with the database down: {describe(ready)}" + pair.logs()
        health = requests.get(a.base + "/health", timeout=TIMEOUT)
        assert health.status_code == 200, "liveness does not depend on the database"

        asked = time.time()
        token = refresh(a, before["refresh_token"])
        assert time.time() - asked < 15, f"the token request took {time.time() - asked:.1f} s with the database down"
        assert token.status_code == 503, token.text + pair.logs()
        assert int(token.headers.get("Retry-After", "0")) >= 1, dict(token.headers)
        body = json_of(token)
        assert body.get("error") == "temporarily_unavailable" or body.get("code") == "SRV-503", token.text

        started = flow(a, {"applicationId": CLIENT, "flowType": "AUTHENTICATION"})
        assert started.status_code == 503 and json_of(started).get("code") == "SRV-503", started.text
        assert int(started.headers.get("Retry-After", "0")) >= 1, dict(started.headers)
    finally:
        start_postgres(options)

    for server in (a, b):
        ready = poll(lambda: requests.get(server.base + "/ready", timeout=TIMEOUT), lambda r: r.status_code == 200, within=20)
        assert isinstance(ready, requests.Response) and ready.status_code == 200, \
            f"{server.base}/ready after the database came back: {describe(ready)}" + pair.logs()
    assert a.alive and b.alive, "no restart"
    # The 503 spent nothing: the token from before the outage still refreshes; and a new sign-in works.
    resumed = refresh(a, before["refresh_token"])
    assert resumed.status_code == 200, resumed.text + pair.logs()
    again = refresh(a, sign_in(a)["refresh_token"])
    assert again.status_code == 200, again.text


# 7b. A database that stops answering without closing its connections (frozen with SIGSTOP, as a hung host or a
# network partition looks): the request deadline still answers 503 in seconds, and service resumes on SIGCONT.

def postgres_pids():
    """The test cluster's processes: the postmaster (first line of postmaster.pid) and its children."""
    with open(os.path.join(PG_DATA, "postmaster.pid")) as f:
        postmaster = int(f.readline())
    children = subprocess.run(["pgrep", "-P", str(postmaster)], capture_output=True, text=True).stdout.split()
    return [postmaster] + [int(pid) for pid in children]


def test_a_frozen_database_answers_503_within_the_deadline(pair):
    if not PG_DATA:
        pytest.skip("LATCHKEY_TEST_POSTGRES_DATA not set")
    a = pair.a
    before = sign_in(a)
    pids = postgres_pids()
    assert pids, "no PostgreSQL processes found"
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    try:
        asked = time.time()
        token = refresh(a, before["refresh_token"])
        took = time.time() - asked
        # database_timeout_seconds is 10: the deadline (plus two seconds) ends the wait, never TCP's minutes.
        assert took < 16, f"the token request took {took:.1f} s with the database frozen"
        assert token.status_code == 503, token.text + pair.logs()
        assert int(token.headers.get("Retry-After", "0")) >= 1, dict(token.headers)
    finally:
        for pid in pids:
            try:
                os.kill(pid, signal.SIGCONT)
            except ProcessLookupError:
                pass
    ready = poll(lambda: requests.get(a.base + "/ready", timeout=TIMEOUT), lambda r: r.status_code == 200, within=30)
    assert isinstance(ready, requests.Response) and ready.status_code == 200, f"/ready after SIGCONT: {describe(ready)}" + pair.logs()
    # Nothing of the frozen request ran (not even its BEGIN was answered): the token is still unspent.
    resumed = refresh(a, before["refresh_token"])
    assert resumed.status_code == 200, resumed.text + pair.logs()
    again = refresh(a, sign_in(a)["refresh_token"])
    assert again.status_code == 200, again.text + pair.logs()


# 8. `latchkey migrate --status`, and a database migrated by a newer release.

def test_migrate_status_and_a_database_from_a_newer_release(shared_database):
    ensure_postgres_running()
    status = latchkey("migrate", "--status", "--database", shared_database)
    assert status.returncode == 0, status.stdout + status.stderr
    applied = int(psql(shared_database, "SELECT max(version) FROM latchkey_schema_migrations"))
    assert re.search(rf"schema version {applied}\b", status.stdout) and "up to date" in status.stdout, status.stdout

    name, url = create_database()
    try:
        migrated = latchkey("migrate", "--database", url)
        assert migrated.returncode == 0, migrated.stdout + migrated.stderr
        assert re.search(rf"\b{applied}\b", migrated.stdout), migrated.stdout
        assert psql(url, "SELECT max(version) FROM latchkey_schema_migrations") == str(applied)

        psql(url, "INSERT INTO latchkey_schema_migrations (version, name) VALUES (9999, 'from a newer release')")
        ahead = latchkey("migrate", "--status", "--database", url)
        assert ahead.returncode != 0 and "newer" in (ahead.stdout + ahead.stderr).lower(), ahead.stdout + ahead.stderr

        workdir = tempfile.mkdtemp(prefix="latchkey-pg-newer-")
        try:
            serve = subprocess.run([BINARY, "serve", "--port", str(free_port()), "--database", url], cwd=workdir,
                                   env={**os.environ, **KEK_ENV}, capture_output=True, text=True, timeout=60)
        except subprocess.TimeoutExpired:
            pytest.fail("latchkey serve kept running on a database migrated by a newer release")
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
        output = serve.stdout + serve.stderr
        assert serve.returncode > 0, f"exit {serve.returncode} (negative: killed by a signal, a crash): {output}"
        assert "newer" in output.lower(), output
        assert psql(url, "SELECT count(*) FROM latchkey_schema_migrations WHERE version > " + str(applied)) == "1", \
            "the refused start changed the schema table"
    finally:
        drop_database(name)


# 5. Key rotation reaches every instance (last: the 30 s reload is then partly waited out already).

def rotate(database):
    rotated = latchkey("keys", "rotate", "--database", database)
    assert rotated.returncode == 0, rotated.stdout + rotated.stderr
    match = re.search(r"New signing keys: ([^.\n]+)\.", rotated.stdout)
    assert match, rotated.stdout
    kids = {kid.strip() for kid in match.group(1).split(",")}
    assert len(kids) == 2, rotated.stdout
    return kids


def test_key_rotation_reaches_both_instances(pair, shared_database):
    a, b = pair.a, pair.b
    before = sign_in(a)  # signed with the keys about to be retired
    old_kids = jwks_kids(a)

    # Each instance re-reads the keys at least every 30 s.
    new = rotate(shared_database)
    rotated_at = time.time()
    seen = {}
    while len(seen) < 2 and time.time() < rotated_at + 35:
        for name, server in (("A", a), ("B", b)):
            if name not in seen and new <= jwks_kids(server):
                seen[name] = time.time()
        time.sleep(0.5)
    assert set(seen) == {"A", "B"}, f"new kids {sorted(new)} published within 35 s only by {sorted(seen)}" + pair.logs()
    assert old_kids <= jwks_kids(b), "retired keys stay published while their tokens live"
    assert userinfo(b, before["access_token"]).status_code == 200, "a token signed before the rotation still verifies"

    refreshed = refresh(a, before["refresh_token"])
    assert refreshed.status_code == 200, refreshed.text
    access = refreshed.json()["access_token"]
    assert jwt_part(access, 0)["kid"] in new, "A signs with the new key"
    info = userinfo(b, access)
    assert info.status_code == 200, info.text + pair.logs()

    # ...and at once when a token is signed by a key it has not loaded: a third instance started after a second
    # rotation signs with keys A and B loaded neither at start nor in the last 30 s.
    second = rotate(shared_database)
    time.sleep(max(0.0, max(seen.values()) + 1.5 - time.time()))  # early reloads happen at most once a second
    c = Instance(shared_database, issuer=a.issuer).start()
    try:
        fresh = sign_in(c)
        assert jwt_part(fresh["access_token"], 0)["kid"] in second
        for name, server in (("A", a), ("B", b)):
            r = userinfo(server, fresh["access_token"])
            assert r.status_code == 200, f"{name} refused a token signed by a sibling's new key: {r.text}" + pair.logs()
            assert second <= jwks_kids(server), f"{name} verified the token but does not publish the new keys"
    finally:
        c.stop()
        shutil.rmtree(c.workdir, ignore_errors=True)
