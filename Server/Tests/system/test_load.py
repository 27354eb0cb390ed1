"""Load and faults on one server (SQLite, the real binary, loopback only, bounded in time and count).

Workers sign in through the hosted page, refresh again and again (each new access token used at userinfo), run the
app-native sign-in flow and create accounts through the registration flow, for `LATCHKEY_LOAD_SECONDS` (default 8).
Then nothing issued may be lost: every refresh token the load received works exactly once, or was revoked for a
reason the protocol gives; every account confirmed signs in. A second run kills the server with SIGKILL mid-load and
checks the same after a restart. Latency percentiles and throughput go to stdout and, when `LATCHKEY_LOAD_REPORT`
names a file, into it as JSON.
"""
import json
import os
import re
import secrets
import tempfile
import threading
import time
import urllib.parse

import requests
import urllib3

from conftest import DEMO_PASSWORD, DEMO_USER, Server, free_port, past_passkey_offer, pkce_pair

LOAD_SECONDS = float(os.environ.get("LATCHKEY_LOAD_SECONDS", "8"))
REDIRECT = "http://127.0.0.1:9/callback"
CLIENT = "latchkey-demo"
TIMEOUT = 30


def load_server(workdir, port=None):
    """`latchkey serve --config` with limits raised for the load (every request comes from 127.0.0.1), the production
    bcrypt cost floor (10) and strict refresh rotation; the same file and port again for a restart."""
    port = port or free_port()
    config = os.path.join(workdir, "latchkey.json")
    with open(config, "w") as f:
        # Strict rotation (no reuse interval): the checks below count every second use of a token as a replay.
        json.dump({"development": True, "bcrypt_cost": 10, "issuer": f"http://localhost:{port}", "refresh_token_reuse_seconds": 0,
                   "login_policy": {"max_starts_per_address": 1_000_000, "max_registrations_per_address": 1_000_000,
                                    "max_failures_per_address": 1_000_000, "max_queued_hashes": 1000}}, f)
    return Server(workdir, port=port, args=["--config", config, "--log-level", "warning"])


def log_tail(server):
    with open(os.path.join(server.workdir, "server.log"), errors="replace") as f:
        return f.read()[-3000:]


class Record:
    """What the load saw: latencies per operation, failures, and everything the server confirmed."""

    def __init__(self):
        self.lock = threading.Lock()
        self.latencies = {}
        self.failures = []
        self.chains = []  # Chain
        self.accounts = []  # (username, password) of confirmed registrations

    def timed(self, operation, send):
        started = time.perf_counter()
        response = send()
        elapsed = time.perf_counter() - started
        with self.lock:
            self.latencies.setdefault(operation, []).append(elapsed)
        if response.status_code >= 500:
            self.fail(f"{operation}: {response.status_code} {response.text[:200]}")
        return response

    def fail(self, what):
        with self.lock:
            self.failures.append((time.time(), what))


class Chain:
    """One sign-in and the refresh tokens of its 200 answers, in order."""

    def __init__(self):
        self.tokens = []
        self.access_tokens = []
        self.in_flight = False  # a refresh was sent and not answered: its token may be spent without our knowing


def never_sent(error):
    reason = getattr(error.args[0], "reason", None) if error.args else None
    return isinstance(reason, urllib3.exceptions.NewConnectionError)


def sign_in(http, server, record):
    verifier, challenge = pkce_pair()
    params = {"response_type": "code", "client_id": CLIENT, "redirect_uri": REDIRECT, "scope": "openid profile email offline_access",
              "state": secrets.token_urlsafe(8), "nonce": secrets.token_urlsafe(8), "code_challenge": challenge,
              "code_challenge_method": "S256"}
    page_session = requests.Session()  # the hosted page's cookies belong to this sign-in only
    r = record.timed("authorize", lambda: page_session.get(server.base + "/oauth2/authorize?" + urllib.parse.urlencode(params),
                                                           allow_redirects=False, timeout=TIMEOUT))
    assert r.status_code == 302, r.text
    page = record.timed("login page", lambda: page_session.get(server.base + r.headers["Location"], timeout=TIMEOUT))
    fields = dict(re.findall(r'name="(request|csrf)" value="([^"]+)"', page.text))
    done = record.timed("login (bcrypt)", lambda: page_session.post(server.base + "/login", data={**fields, "username": DEMO_USER, "password": DEMO_PASSWORD},
                                                                    allow_redirects=False, timeout=TIMEOUT))
    done = past_passkey_offer(page_session, server.base, done, timeout=TIMEOUT)  # not timed: a page, not the sign-in
    assert done.status_code == 303, done.text
    code = urllib.parse.parse_qs(urllib.parse.urlparse(done.headers["Location"]).query)["code"][0]
    tokens = record.timed("code grant", lambda: http.post(server.base + "/oauth2/token", data={
        "grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT, "client_id": CLIENT, "code_verifier": verifier},
        timeout=TIMEOUT))
    assert tokens.status_code == 200, tokens.text
    return tokens.json()


def refresh(http, server, token):
    return http.post(server.base + "/oauth2/token", data={"grant_type": "refresh_token", "refresh_token": token, "client_id": CLIENT},
                     timeout=TIMEOUT)


def session_worker(server, record, stop):
    """Sign in, then refresh (and call userinfo with each new access token) 20 times; again, until `stop`."""
    http = requests.Session()
    while not stop.is_set():
        chain = Chain()
        with record.lock:
            record.chains.append(chain)
        try:
            tokens = sign_in(http, server, record)
            chain.tokens.append(tokens["refresh_token"])
            for _ in range(20):
                if stop.is_set():
                    return
                chain.in_flight = True
                r = record.timed("refresh grant", lambda: refresh(http, server, chain.tokens[-1]))
                if r.status_code != 200:
                    chain.in_flight = False
                    record.fail(f"refresh: {r.status_code} {r.text[:200]}")
                    return
                answer = r.json()
                chain.tokens.append(answer["refresh_token"])
                chain.access_tokens.append(answer["access_token"])
                chain.in_flight = False
                u = record.timed("userinfo", lambda: http.get(server.base + "/oauth2/userinfo",
                                                              headers={"Authorization": "Bearer " + answer["access_token"]}, timeout=TIMEOUT))
                if u.status_code != 200:
                    record.fail(f"userinfo: {u.status_code} {u.text[:200]}")
        except requests.ConnectionError as error:
            if not never_sent(error):
                record.fail(f"connection: {error!r}")
            return
        except Exception as error:  # noqa: BLE001 - reported as a failure of the load
            record.fail(repr(error))
            return


def flow(http, server, record, body, operation):
    return record.timed(operation, lambda: http.post(server.base + "/flow/execute", json=body, timeout=TIMEOUT))


def flow_worker(server, record, stop, register):
    """The app-native sign-in flow of the demo user, or (`register`) a registration flow creating a new account."""
    http = requests.Session()
    while not stop.is_set():
        try:
            username = f"load-{secrets.token_hex(6)}@example.com"
            password = "load " + secrets.token_urlsafe(12)
            start = flow(http, server, record, {"applicationId": CLIENT, "flowType": "REGISTRATION" if register else "AUTHENTICATION"},
                         "flow start")
            body = start.json()
            action = "action_credentials" if register else "action_001"
            inputs = {"username": username, "password": password} if register else {"username": DEMO_USER, "password": DEMO_PASSWORD}
            for _ in range(4):
                step = flow(http, server, record, {"executionId": body["executionId"], "challengeToken": body.get("challengeToken"),
                                                   "action": action, "inputs": inputs}, "flow step")
                body = step.json()
                if body.get("flowStatus") != "INCOMPLETE":
                    break
                # Attributes the registration asks for next: an email is the username; anything else a plain value.
                asked = [i["identifier"] for i in body.get("data", {}).get("inputs", [])]
                inputs = {name: (username if name == "email" else "Load") for name in asked}
                action = body["data"]["actions"][0]["ref"]
            if body.get("flowStatus") != "COMPLETE" or not body.get("assertion"):
                record.fail(f"flow ended {body.get('flowStatus')}: {json.dumps(body)[:300]}")
                return
            if register:
                with record.lock:
                    record.accounts.append((username, password))
        except requests.ConnectionError as error:
            if not never_sent(error):
                record.fail(f"connection: {error!r}")
            return
        except Exception as error:  # noqa: BLE001
            record.fail(repr(error))
            return


def run_load(server, seconds, kill_at=None):
    record, stop = Record(), threading.Event()
    workers = [threading.Thread(target=session_worker, args=(server, record, stop), daemon=True) for _ in range(4)]
    workers.append(threading.Thread(target=flow_worker, args=(server, record, stop, False), daemon=True))
    workers.append(threading.Thread(target=flow_worker, args=(server, record, stop, True), daemon=True))
    started = time.time()
    for worker in workers:
        worker.start()
    killed_at = None
    if kill_at is not None:
        time.sleep(kill_at)
        killed_at = time.time()
        server.kill()
    time.sleep(max(0.0, started + seconds - time.time()))
    stop.set()
    for worker in workers:
        worker.join(timeout=3 * TIMEOUT)
    assert not any(worker.is_alive() for worker in workers), "a load worker hung"
    return record, time.time() - started, killed_at


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def report(record, elapsed, name):
    lines, data = [f"load ({name}): {elapsed:.1f} s, 6 workers"], {}
    for operation, values in sorted(record.latencies.items()):
        entry = {"count": len(values), "per_second": len(values) / elapsed, "p50_ms": 1000 * percentile(values, 50),
                 "p99_ms": 1000 * percentile(values, 99)}
        data[operation] = entry
        lines.append(f"  {operation:15} {entry['count']:6d}  {entry['per_second']:8.1f}/s  p50 {entry['p50_ms']:7.2f} ms  p99 {entry['p99_ms']:7.2f} ms")
    print("\n".join(lines))
    target = os.environ.get("LATCHKEY_LOAD_REPORT")
    if target:
        existing = json.load(open(target)) if os.path.exists(target) else {}
        existing[name] = {"seconds": elapsed, "operations": data}
        with open(target, "w") as f:
            json.dump(existing, f, indent=2)


def token_state(server, token):
    r = refresh(requests, server, token)
    if r.status_code == 200:
        return "works", r.json()["refresh_token"]
    assert r.status_code == 400 and r.json().get("error") == "invalid_grant", r.text
    return "refused", None


def assert_accounts_sign_in(server, accounts):
    http = requests.Session()
    for username, password in accounts[:8]:  # each costs a bcrypt hash
        start = http.post(server.base + "/flow/execute", json={"applicationId": CLIENT, "flowType": "AUTHENTICATION"}, timeout=TIMEOUT).json()
        done = http.post(server.base + "/flow/execute", json={"executionId": start["executionId"], "challengeToken": start.get("challengeToken"),
                                                             "action": "action_001", "inputs": {"username": username, "password": password}},
                         timeout=TIMEOUT).json()
        assert done.get("flowStatus") == "COMPLETE", f"{username}: {done}"


def test_load_loses_nothing_issued():
    workdir = tempfile.mkdtemp(prefix="latchkey-load-")
    server = load_server(workdir).start()
    try:
        record, elapsed, _ = run_load(server, LOAD_SECONDS)
        report(record, elapsed, "steady")
        assert not record.failures, f"{len(record.failures)} failures, first: {record.failures[:3]}\n" + log_tail(server)
        chains = [c for c in record.chains if c.tokens]
        assert len(chains) >= 4 and sum(len(c.tokens) for c in chains) >= 20, "too little load to prove anything"
        assert record.accounts, "no account was registered under load"
        # The operator's view agrees with the clients': every rotation they saw, and not one more, is counted.
        metrics = requests.get(server.base + "/metrics", timeout=TIMEOUT).text
        rotated = re.search(r'^latchkey_refresh_tokens_total\{result="rotated"\} (\d+)', metrics, re.M)
        assert rotated and int(rotated.group(1)) == sum(len(c.tokens) - 1 for c in chains), metrics[:500]

        # Every chain's newest token works exactly once; a second use is a replay that revokes the family, so the
        # token that first use produced is refused too. One chain in three instead replays an older token first: the
        # whole family is then refused, newest included.
        for index, chain in enumerate(chains):
            if index % 3 == 2 and len(chain.tokens) >= 2:
                assert token_state(server, chain.tokens[-2])[0] == "refused", "a rotated token works again"
                assert token_state(server, chain.tokens[-1])[0] == "refused", "the family survived a replay"
                continue
            state, successor = token_state(server, chain.tokens[-1])
            assert state == "works", "a refresh token the load received was lost"
            assert token_state(server, chain.tokens[-1])[0] == "refused", "a refresh token worked twice"
            assert token_state(server, successor)[0] == "refused", "the family survived a replay"
        assert_accounts_sign_in(server, record.accounts)
    finally:
        server.stop()


def test_sigkill_mid_load_keeps_everything_confirmed():
    workdir = tempfile.mkdtemp(prefix="latchkey-load-kill-")
    server = load_server(workdir).start()
    record, elapsed, killed_at = run_load(server, max(4.0, LOAD_SECONDS / 2), kill_at=max(2.0, LOAD_SECONDS / 4))
    report(record, elapsed, "sigkill")
    early = [f for f in record.failures if f[0] < killed_at - 0.2]
    assert not early, f"failures before the kill: {early[:3]}"
    chains = [c for c in record.chains if c.tokens]
    assert len(chains) >= 4, "too little load to prove anything"
    restarted = load_server(workdir, port=server.port).start()
    try:
        lost, working = [], 0
        for chain in chains:
            state, _ = token_state(restarted, chain.tokens[-1])
            # A refresh in flight at the kill may have been committed without its answer arriving: then the newest
            # token the load holds was rotated, and using it is a replay (refused, family revoked). Anything else
            # confirmed must work, and so must the newest access token of a family that lives on.
            if state != "works":
                if not chain.in_flight:
                    lost.append(chain.tokens[-1][:8])
                continue
            working += 1
            if chain.access_tokens:
                r = requests.get(restarted.base + "/oauth2/userinfo", headers={"Authorization": "Bearer " + chain.access_tokens[-1]},
                                 timeout=TIMEOUT)
                assert r.status_code == 200, "a confirmed access token was lost: " + r.text
        assert not lost, f"{len(lost)} confirmed refresh tokens lost by the kill"
        assert working >= len(chains) - 6, "more families refused than requests could have been in flight"
        assert_accounts_sign_in(restarted, record.accounts)
    finally:
        restarted.stop()
