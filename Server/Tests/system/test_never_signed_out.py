"""Never signed out by mistake, under faults.

Several `latchkey token --repeat` processes share one signed-in CLI home (the file storage, whose per-session lock
lets one process refresh while the others adopt its result) and ask for tokens as fast as they can, on 10-second access
tokens: under the SDK's 30-second refresh margin every token they are handed is due, so every attempt refreshes or
adopts another process's refresh. They reach two `latchkey serve` instances on one PostgreSQL database through a proxy
written here that loses answers after the server committed them (the connection reset as the answer starts, or after
part of it), resets requests before they reach a server, and delays answers; meanwhile processes are killed with
SIGKILL at random, mid-refresh. Nobody signs out and no grant is revoked, so the count of sign-outs must be 0, and the
server must see no replayed refresh token: a refresh whose answer was lost is retried within the reuse interval
(`refresh_token_reuse_seconds`, 60 s, the default) and handed the successor again.

The figures are printed (pytest -s shows them). `LATCHKEY_SOAK_REFRESHES` sets the size (CI: a short run;
`scripts/soak-refresh.sh` runs 100,000 and the figures are in docs/testing.md), `LATCHKEY_SOAK_SEED` replays a run's
faults, `LATCHKEY_SOAK_TRACE=1` prints what the proxy did to every request.

This test found that on Linux a refresh whose answer was lost could end the session: libcurl resent the POST on a new
connection without its body, the server waited 30 s for it, and the retry after that came later than the reuse interval
(`URLSessionHTTPClient` now sends a request with a body on a connection of its own there).
"""
import asyncio
import json
import os
import random
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import urllib.parse

import requests

from conftest import BINARY, DEMO_PASSWORD, DEMO_USER, Server, free_port, past_passkey_offer
from test_postgres_instances import KEK_ENV, create_database, drop_database

REFRESHES = int(os.environ.get("LATCHKEY_SOAK_REFRESHES", "600"))
PROCESSES = int(os.environ.get("LATCHKEY_SOAK_PROCESSES", "4"))
SEED = int(os.environ.get("LATCHKEY_SOAK_SEED", str(random.SystemRandom().randrange(1 << 30))))
# Only a guard against a hang (a server that stopped answering would otherwise keep the workers starting processes for
# ever): at the measured 20–30 tokens/s a run needs a small fraction of it.
GIVE_UP_SECONDS = max(600, REFRESHES // 2)
# Of the token requests while faults are on: reset before a server sees it, answer lost after the server committed,
# answer delayed. The rest pass.
P_RESET_BEFORE, P_LOSE, P_DELAY = 0.03, 0.05, 0.05
TIMEOUT = 20


class FaultProxy:
    """A TCP proxy on 127.0.0.1 in front of several backends (round-robin per connection) that injects faults into
    token requests (`POST /oauth2/token`) once `faults` is set. Runs an asyncio loop on a thread of its own."""

    def __init__(self, backends, seed):
        self.backends = backends
        self.port = free_port()
        self.rng = random.Random(seed)
        self.faults = False
        self.counts = {"token_requests": 0, "reset_before": 0, "lost": 0, "lost_midway": 0, "delayed": 0}
        self.turn = 0
        self.loop = asyncio.new_event_loop()
        ready = threading.Event()
        self.thread = threading.Thread(target=self._run, args=(ready,), daemon=True)
        self.thread.start()
        assert ready.wait(10), "the proxy did not start"

    @property
    def base(self):
        return f"http://127.0.0.1:{self.port}"

    def _run(self, ready):
        asyncio.set_event_loop(self.loop)
        self.server = self.loop.run_until_complete(asyncio.start_server(self._handle, "127.0.0.1", self.port))
        ready.set()
        self.loop.run_forever()

    def stop(self):
        async def close():
            self.server.close()
            # Connections a killed process left half-open are ended here, not reported at exit as destroyed tasks.
            tasks = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        asyncio.run_coroutine_threadsafe(close(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)

    def _decide(self):
        roll = self.rng.random()
        if roll < P_RESET_BEFORE:
            return "reset_before"
        if roll < P_RESET_BEFORE + P_LOSE:
            return "lose"
        if roll < P_RESET_BEFORE + P_LOSE + P_DELAY:
            return "delay"
        return None

    def trace(self, *words):
        if os.environ.get("LATCHKEY_SOAK_TRACE"):
            print(f"{time.monotonic():.3f}", *words, flush=True)

    async def _handle(self, client_reader, client_writer):
        host, port = self.backends[self.turn % len(self.backends)]
        self.turn += 1
        connection = self.turn
        self.trace(connection, "open", port)
        try:
            server_reader, server_writer = await asyncio.open_connection(host, port)
        except OSError:
            client_writer.transport.abort()
            return
        pending = []  # the fault for the answer to the request forwarded last, if any

        def abort():
            client_writer.transport.abort()
            server_writer.transport.abort()

        async def upstream():
            try:
                while data := await client_reader.read(65536):
                    fault = None
                    self.trace(connection, "request", data[:30], len(data))
                    if data.startswith(b"POST /oauth2/token"):
                        self.counts["token_requests"] += 1
                        fault = self._decide() if self.faults else None
                        self.trace(connection, "fault", fault)
                    if fault == "reset_before":
                        self.counts["reset_before"] += 1
                        abort()
                        return
                    if fault:
                        pending.append(fault)
                    server_writer.write(data)
                    await server_writer.drain()
                server_writer.write_eof()
            except (ConnectionError, OSError):
                abort()

        async def downstream():
            try:
                while data := await server_reader.read(65536):
                    fault = pending.pop(0) if pending else None
                    self.trace(connection, "answer", data[:15], len(data), fault)
                    if fault == "lose":
                        # The server has answered (its rotation is committed); the client never gets the answer, or
                        # only its first bytes.
                        if self.rng.random() < 0.5:
                            self.counts["lost_midway"] += 1
                            client_writer.write(data[: max(1, len(data) // 3)])
                            await client_writer.drain()
                        else:
                            self.counts["lost"] += 1
                        abort()
                        return
                    if fault == "delay":
                        self.counts["delayed"] += 1
                        await asyncio.sleep(self.rng.uniform(0.1, 1.0))
                    client_writer.write(data)
                    await client_writer.drain()
                client_writer.close()
            except (ConnectionError, OSError):
                abort()

        await asyncio.gather(upstream(), downstream())


def instance(database, issuer, workdir):
    """`latchkey serve` on the shared database, answering as the proxy's URL, with 10-second access tokens."""
    config = os.path.join(workdir, "latchkey.json")
    with open(config, "w") as f:
        json.dump({"development": True, "issuer": issuer, "lifetimes": {"access_token": 10}}, f)
    return Server(workdir, database=database, env=KEK_ENV, args=["--config", config, "--log-level", "warning"])


def cli_login(home, issuer):
    """`latchkey login --no-browser` completed by the hosted form (as a browser would, through the proxy)."""
    env = {**os.environ, "LATCHKEY_HOME": home}
    login = subprocess.Popen([BINARY, "login", "--no-browser", "--issuer", issuer], env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    try:
        url = login.stdout.readline().strip()
        assert url.startswith(issuer + "/oauth2/authorize?"), url + login.stderr.read()
        session = requests.Session()
        r = session.get(url, allow_redirects=False, timeout=TIMEOUT)
        assert r.status_code == 302, r.text
        page = session.get(urllib.parse.urljoin(issuer, r.headers["Location"]), timeout=TIMEOUT)
        fields = dict(re.findall(r'name="(request|csrf)" value="([^"]+)"', page.text))
        done = session.post(issuer + "/login", data={**fields, "username": DEMO_USER, "password": DEMO_PASSWORD},
                            allow_redirects=False, timeout=TIMEOUT)
        done = past_passkey_offer(session, issuer, done, timeout=TIMEOUT)
        assert done.status_code == 303, done.text
        callback = done.headers["Location"]
        assert callback.startswith("http://127.0.0.1:"), callback
        requests.get(callback, timeout=TIMEOUT)  # the CLI's loopback listener
        out, err = login.communicate(timeout=60)
        assert login.returncode == 0, err
    finally:
        if login.poll() is None:
            login.kill()


class Soak:
    """The worker processes, the killer, and what they saw."""

    def __init__(self, home, target, seed):
        self.home = home
        self.target = target
        self.rng = random.Random(seed)
        self.lock = threading.Lock()
        self.running = {}  # worker index -> Popen
        self.tokens = 0
        self.distinct = set()
        self.attempts_failed = 0
        self.failure_kinds = {}
        self.process_failures = []  # (exit status, stderr) of processes that ended by themselves with a failure
        self.sign_outs = []
        self.killed = 0
        self.processes = 0
        self.done = threading.Event()

    def worker(self, index):
        env = {**os.environ, "LATCHKEY_HOME": self.home}
        give_up = time.monotonic() + GIVE_UP_SECONDS
        while not self.done.is_set() and time.monotonic() < give_up:
            with self.lock:
                left = self.target - self.tokens
            if left <= 0:
                break
            process = subprocess.Popen([BINARY, "token", "--repeat", str(max(2, min(200, left)))], env=env,
                                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            with self.lock:
                self.running[index] = process
                self.processes += 1
            hung = False
            try:
                out, err = process.communicate(timeout=GIVE_UP_SECONDS)
            except subprocess.TimeoutExpired:
                process.kill()
                out, err = process.communicate()
                hung = True
            with self.lock:
                self.running.pop(index, None)
                lines = [line for line in out.splitlines() if line]
                self.tokens += len(lines)
                self.distinct.update(lines)
                for line in err.splitlines():
                    kind = re.search(r"session is kept \((\w+)\)", line)
                    if kind:
                        self.attempts_failed += 1
                        self.failure_kinds[kind.group(1)] = self.failure_kinds.get(kind.group(1), 0) + 1
                if hung:
                    self.process_failures.append(("hung", err.strip()[-300:]))
                elif "session has ended" in err or "Not signed in" in err:
                    self.sign_outs.append(err.strip()[-400:])
                    self.done.set()
                elif process.returncode not in (0, -signal.SIGKILL):
                    # A start that could not reach the server (discovery lost) ends the process; the next one goes on.
                    self.process_failures.append((process.returncode, err.strip()[-300:]))

    def killer(self):
        while not self.done.wait(self.rng.uniform(0.2, 1.0)):
            with self.lock:
                victims = list(self.running.values())
            if victims:
                victim = self.rng.choice(victims)
                try:
                    victim.send_signal(signal.SIGKILL)
                    with self.lock:
                        self.killed += 1
                except ProcessLookupError:
                    pass


def metric(server, result):
    text = requests.get(f"http://127.0.0.1:{server.port}/metrics", timeout=TIMEOUT).text
    found = re.search(r'^latchkey_refresh_tokens_total\{result="%s"\} (\d+)' % result, text, re.M)
    assert found, text[:500]
    return int(found.group(1))


def test_no_sign_out_under_lost_answers_resets_delays_and_sigkill():
    name, database = create_database()
    workdirs = [tempfile.mkdtemp(prefix="latchkey-soak-") for _ in range(3)]
    home = workdirs[2]
    servers = []
    proxy = None
    try:
        # The instances must know the proxy's address (their issuer) before it knows theirs: the proxy is made first
        # with their ports chosen in advance.
        ports = [free_port(), free_port()]
        proxy = FaultProxy([("127.0.0.1", ports[0]), ("127.0.0.1", ports[1])], SEED)
        for index in range(2):
            server = instance(database, proxy.base, workdirs[index])
            server.port = ports[index]
            servers.append(server.start())
        cli_login(home, proxy.base)

        proxy.faults = True
        soak = Soak(home, REFRESHES, SEED)
        started = time.monotonic()
        workers = [threading.Thread(target=soak.worker, args=(index,)) for index in range(PROCESSES)]
        killer = threading.Thread(target=soak.killer)
        for thread in workers + [killer]:
            thread.start()
        for thread in workers:
            thread.join()
        soak.done.set()
        killer.join()
        elapsed = time.monotonic() - started
        proxy.faults = False

        # The session is still there and works.
        after = subprocess.run([BINARY, "token"], env={**os.environ, "LATCHKEY_HOME": home}, capture_output=True, text=True,
                               timeout=60)
        rotated = sum(metric(server, "rotated") for server in servers)
        reissued = sum(metric(server, "reissued") for server in servers)
        replayed = sum(metric(server, "replayed") for server in servers)
        lost = proxy.counts["lost"] + proxy.counts["lost_midway"]
        figures = {
            "seed": SEED, "processes at once": PROCESSES, "seconds": round(elapsed, 1),
            "tokens handed out": soak.tokens, "distinct tokens": len(soak.distinct),
            "refresh grants (rotated)": rotated, "reissued within the reuse interval": reissued,
            "replayed (family revoked)": replayed, "token requests through the proxy": proxy.counts["token_requests"],
            "answers lost after the server committed": lost,
            "of which cut midway": proxy.counts["lost_midway"],
            "requests reset before a server saw them": proxy.counts["reset_before"],
            "answers delayed": proxy.counts["delayed"], "processes started": soak.processes,
            "processes killed (SIGKILL)": soak.killed, "attempts failed, session kept": soak.attempts_failed,
            "failures by kind": soak.failure_kinds, "process starts that failed": len(soak.process_failures),
            "sign-outs": len(soak.sign_outs),
            "refreshes per expiry beyond lost answers and kills": max(0, reissued - lost - soak.killed),
        }
        print("\nnever-signed-out soak: " + json.dumps(figures, indent=1))

        assert not soak.sign_outs, f"signed out: {soak.sign_outs[:3]}\n{figures}"
        assert after.returncode == 0 and after.stdout.strip(), after.stderr
        assert replayed == 0, f"a refresh token was replayed (its family revoked): {figures}"
        assert soak.tokens >= REFRESHES, figures
        # Faults really happened: answers were lost after commit, and processes died mid-run.
        assert lost >= 1 and soak.killed >= 1, figures
        # Across processes one refresh per expiry: a second grant for one refresh token (a reissue) only follows a
        # lost answer or a killed process, never two processes refreshing the same session at once.
        assert reissued <= lost + soak.killed, figures
        for status, err in soak.process_failures:
            assert "cannot reach the server" in err or "timed out" in err, f"exit {status}: {err}"
    finally:
        for server in servers:
            server.stop()
        if proxy:
            proxy.stop()
        drop_database(name)
        for workdir in workdirs:
            shutil.rmtree(workdir, ignore_errors=True)
