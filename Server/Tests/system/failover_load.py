"""A steady load of code flows and refresh grants on `latchkey serve` instances, every answer recorded, and the check
that what was answered is what was committed — for the failover and partition tests.

Each worker signs in with the hosted form and PKCE, redeems the code, then refreshes the token a few times, and starts
again. An answer is one of: the step's success; `503 temporarily_unavailable` with `Retry-After` (the database is not
there: nothing was promised); anything else, a hang past the request timeout or a dropped connection — a failure the
test reports. The instances run with `refresh_token_reuse_seconds: 0`, so "spent" means refused: a token or code
answered once must be refused when presented again, across the failover.

A 503 on a refresh or a redemption leaves that token or code *in doubt*: the commit may have reached the database
just before it was lost (that is what the reuse interval is for in production). The worker drops an in-doubt chain
instead of retrying it, and the check skips it: the promise under test is about answered requests.
"""
import json
import os
import re
import threading
import time
import urllib.parse

import requests

from conftest import DEMO_PASSWORD, DEMO_USER, authorize_url, past_passkey_offer, pkce_pair

CLIENT = "latchkey-demo"
REDIRECT = "http://127.0.0.1:9/callback"
REQUEST_TIMEOUT = 60  # a hang, not a slow answer: the server's own deadline is database_timeout_seconds (10 s)
REFRESHES_PER_CHAIN = 4


def strict_rotation_config(workdir):
    """A configuration file for `latchkey serve --config`: no reuse interval (a second use is refused at once), development
    mode (the demo account and application), no login limits in the way."""
    path = os.path.join(workdir, "latchkey.json")
    with open(path, "w") as f:
        # Every worker signs in as the demo account from 127.0.0.1: the login limits are raised out of the way (a
        # reservation whose settling met the outage stays counted until the next success; see docs/operating.md).
        json.dump({"development": True, "refresh_token_reuse_seconds": 0,
                   "login_policy": {"max_failures_per_account": 10000, "max_failures_per_account_all_addresses": 10000,
                                    "max_failures_per_address": 10000, "max_challenges_per_address": 100000}}, f)
    return path


class Unavailable(Exception):
    """A 503 with Retry-After: the step was not done and nothing was promised."""


class Failure(Exception):
    pass


def check(response, expected, step):
    if response.status_code == expected:
        return response
    if response.status_code == 503 and response.headers.get("Retry-After", "").isdigit():
        if step in ("refresh", "redeem"):
            try:
                error = response.json().get("error")
            except ValueError:
                error = None
            if error != "temporarily_unavailable":
                raise Failure(f"{step}: 503 without temporarily_unavailable: {response.text[:200]}")
        raise Unavailable(step)
    raise Failure(f"{step}: {response.status_code} {response.text[:200]} (expected {expected})")


def refresh(base, token):
    return requests.post(base + "/oauth2/token", data={"grant_type": "refresh_token", "refresh_token": token,
                                                      "client_id": CLIENT}, timeout=REQUEST_TIMEOUT)


def redeem(base, code, verifier):
    return requests.post(base + "/oauth2/token", data={"grant_type": "authorization_code", "code": code,
                                                      "redirect_uri": REDIRECT, "client_id": CLIENT,
                                                      "code_verifier": verifier}, timeout=REQUEST_TIMEOUT)


def refused(response):
    try:
        return response.status_code == 400 and response.json().get("error") == "invalid_grant"
    except ValueError:
        return False


class Chain:
    """One sign-in's refresh tokens as answered: `rotations` holds (presented, answered) pairs."""

    def __init__(self, instance, code, verifier, first):
        self.instance, self.code, self.verifier = instance, code, verifier
        self.rotations, self.live, self.in_doubt = [], first, False


class Load:
    def __init__(self, bases, workers_per_instance=2):
        self.bases = bases
        self.workers_per_instance = workers_per_instance
        self.stopping = threading.Event()
        self.lock = threading.Lock()
        self.chains, self.failures = [], []
        self.successes = []  # (monotonic time, base, step)
        self.unavailable = []  # (monotonic time, base, step)
        self.codes_in_doubt = 0
        self.slowest = 0.0
        self.threads = []

    def start(self):
        for base in self.bases:
            for index in range(self.workers_per_instance):
                thread = threading.Thread(target=self._work, args=(base,), daemon=True, name=f"load-{base}-{index}")
                thread.start()
                self.threads.append(thread)
        return self

    def stop(self):
        self.stopping.set()
        for thread in self.threads:
            thread.join(3 * REQUEST_TIMEOUT)
        assert not any(thread.is_alive() for thread in self.threads), "a load worker hangs"

    def successes_since(self, moment, base=None, step=None):
        with self.lock:
            return [s for s in self.successes if s[0] >= moment and (base is None or s[1] == base) and (step is None or s[2] == step)]

    def unavailable_since(self, moment, base=None):
        with self.lock:
            return [u for u in self.unavailable if u[0] >= moment and (base is None or u[1] == base)]

    def _record(self, base, step, started):
        with self.lock:
            self.successes.append((time.monotonic(), base, step))
            self.slowest = max(self.slowest, time.monotonic() - started)

    def _send(self, base, step, expected, send):
        started = time.monotonic()
        try:
            response = send()
        except requests.RequestException as error:
            raise Failure(f"{step}: no answer ({type(error).__name__}: {error})") from error
        with self.lock:
            self.slowest = max(self.slowest, time.monotonic() - started)
        try:
            check(response, expected, step)
        except Unavailable:
            with self.lock:
                self.unavailable.append((time.monotonic(), base, step))
            raise
        self._record(base, step, started)
        return response

    def _work(self, base):
        while not self.stopping.is_set():
            try:
                self._one_sign_in(base)
            except Unavailable:
                # The client's side of Retry-After, shortened: the test wants to see the recovery, not wait for it.
                self.stopping.wait(0.2)
            except Failure as failure:
                with self.lock:
                    self.failures.append(f"{base}: {failure}")
                self.stopping.wait(0.2)

    def _one_sign_in(self, base):
        session = requests.Session()
        verifier, challenge = pkce_pair()
        r = self._send(base, "authorize", 302, lambda: session.get(
            authorize_url(_Base(base), REDIRECT, challenge, "st"), allow_redirects=False, timeout=REQUEST_TIMEOUT))
        page = self._send(base, "login page", 200, lambda: session.get(base + r.headers["Location"], timeout=REQUEST_TIMEOUT))
        fields = dict(re.findall(r'name="(request|csrf)" value="([^"]+)"', page.text))
        done = self._send(base, "login", 303, lambda: session.post(
            base + "/login", data={**fields, "username": DEMO_USER, "password": DEMO_PASSWORD}, allow_redirects=False,
            timeout=REQUEST_TIMEOUT))
        done = self._send(base, "passkey offer", 303, lambda: past_passkey_offer(session, base, done, timeout=REQUEST_TIMEOUT))
        code = urllib.parse.parse_qs(urllib.parse.urlparse(done.headers["Location"]).query)["code"][0]
        try:
            tokens = self._send(base, "redeem", 200, lambda: redeem(base, code, verifier)).json()
        except Unavailable:
            with self.lock:
                self.codes_in_doubt += 1
            raise
        chain = Chain(base, code, verifier, tokens["refresh_token"])
        with self.lock:
            self.chains.append(chain)
        for _ in range(REFRESHES_PER_CHAIN):
            if self.stopping.is_set():
                return
            try:
                answered = self._send(base, "refresh", 200, lambda: refresh(base, chain.live)).json()["refresh_token"]
            except (Unavailable, Failure):
                chain.in_doubt = True
                raise
            chain.rotations.append((chain.live, answered))
            chain.live = answered

    def verify(self, base):
        """Everything answered behaves as committed, checked at `base` after the episode: each answered code is refused
        a second time; each chain's live token works once, and the token it replaced is refused. Returns what broke."""
        broken = []
        for chain in self.chains:
            # The tokens first: a code presented again revokes what it was exchanged for (RFC 6749 §4.1.2).
            if not chain.in_doubt:
                live = refresh(base, chain.live)
                if live.status_code != 200:
                    broken.append(f"an answered refresh token does not work: {live.status_code} {live.text[:160]}")
                elif chain.rotations and not refused(again := refresh(base, chain.rotations[-1][0])):
                    broken.append(f"a rotated refresh token was accepted again: {again.status_code} {again.text[:120]}")
            if not refused(again := redeem(base, chain.code, chain.verifier)):
                broken.append(f"a code answered before was accepted again: {again.status_code} {again.text[:120]}")
        return broken

    def longest_gap(self, step="refresh"):
        """The longest time (seconds) between two successes of `step` on any instance: how long writes stopped."""
        with self.lock:
            times = sorted(s[0] for s in self.successes if s[2] == step)
        return round(max((b - a for a, b in zip(times, times[1:])), default=0.0), 1)

    def summary(self):
        gap = self.longest_gap()  # takes the lock itself (not reentrant)
        with self.lock:
            chains = len(self.chains)
            return {"successes": len(self.successes), "503 answers": len(self.unavailable), "failures": len(self.failures),
                    "chains": chains, "chains in doubt": sum(1 for c in self.chains if c.in_doubt),
                    "refresh grants answered": sum(len(c.rotations) for c in self.chains),
                    "codes in doubt": self.codes_in_doubt, "slowest answer (s)": round(self.slowest, 2),
                    "longest refresh gap (s)": gap}


class _Base:
    """What `authorize_url` reads of a server."""

    def __init__(self, base):
        self.base = base
