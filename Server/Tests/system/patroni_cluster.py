"""A Patroni cluster on this machine, for the failover and partition tests: one etcd member and three PostgreSQL nodes
run by Patroni with `synchronous_mode` on, every node on its own loopback ports, every node's link to etcd through a
`FaultProxy` (so a node can be cut from the DCS quorum).

Production runs etcd as three members in three zones (`docs/operating.md`); one member is enough here, because the
tests cut a *node* from etcd, not etcd from itself. Debian's packages: `patroni`, `etcd-server`, `postgresql`
(`scripts/test.sh` installs them). The timing is tighter than Patroni's defaults (ttl 30 s, loop_wait 10 s) so a
failover fits in a CI run; the rule `loop_wait + 2 × retry_timeout <= ttl` holds as in production.
"""
import json
import os
import pwd
import shutil
import signal
import subprocess
import tempfile

import requests

from conftest import free_port, poll
from faultproxy import FaultProxy

PG_BIN = os.environ.get("LATCHKEY_TEST_POSTGRES_BIN", "")
TTL, LOOP_WAIT, RETRY_TIMEOUT = 10, 1, 3


def available():
    """Why the cluster cannot run here, or None."""
    if not PG_BIN or not os.access(os.path.join(PG_BIN, "pg_ctl"), os.X_OK):
        return "LATCHKEY_TEST_POSTGRES_BIN is not set (scripts/test.sh sets it with Server/Tests/postgres/start.sh)"
    for binary in ("patroni", "etcd"):
        if not shutil.which(binary):
            return f"`{binary}` is not installed (Debian: patroni, etcd-server; scripts/test.sh installs them)"
    return None


class Node:
    """One Patroni-run PostgreSQL node: its Patroni process, its ports, its link to etcd."""

    def __init__(self, cluster, name):
        self.cluster, self.name = cluster, name
        self.port, self.rest_port = free_port(), free_port()
        self.data = os.path.join(cluster.workdir, name)
        self.etcd_link = FaultProxy(cluster.etcd_port)
        self.proc = None
        self.config_path = os.path.join(cluster.workdir, name + ".yml")
        self.log_path = os.path.join(cluster.workdir, name + ".patroni.log")
        self._write_config()

    def _write_config(self):
        workdir = self.cluster.workdir
        hba = ["local all all trust", "host all all 127.0.0.1/32 trust", "host replication all 127.0.0.1/32 trust"]
        config = {
            "scope": self.cluster.scope, "namespace": "/latchkey-test/", "name": self.name,
            "restapi": {"listen": f"127.0.0.1:{self.rest_port}", "connect_address": f"127.0.0.1:{self.rest_port}"},
            # use_proxies: the host is this node's link (a proxy), not to be bypassed by discovering the members.
            "etcd3": {"hosts": [f"127.0.0.1:{self.etcd_link.port}"], "use_proxies": True},
            "bootstrap": {
                "dcs": {
                    "ttl": TTL, "loop_wait": LOOP_WAIT, "retry_timeout": RETRY_TIMEOUT,
                    "maximum_lag_on_failover": 1048576, "synchronous_mode": True,
                    "postgresql": {"use_pg_rewind": True, "use_slots": True,
                                   "parameters": {"max_connections": 200, "wal_keep_size": "128MB"}},
                },
                "initdb": [{"encoding": "UTF8"}, {"locale": "C.UTF-8"}],
                "pg_hba": hba,
            },
            "postgresql": {
                "listen": f"127.0.0.1:{self.port}", "connect_address": f"127.0.0.1:{self.port}",
                "data_dir": self.data, "bin_dir": PG_BIN, "pgpass": os.path.join(workdir, self.name + ".pgpass"),
                "authentication": {"superuser": {"username": "latchkey", "password": "latchkey"},
                                   "replication": {"username": "replicator", "password": "replicator"},
                                   "rewind": {"username": "latchkey", "password": "latchkey"}},
                "parameters": {"unix_socket_directories": workdir},
                "pg_hba": hba,
            },
        }
        # JSON is YAML: Patroni reads it as it is.
        with open(self.config_path, "w") as f:
            json.dump(config, f, indent=1)
        if os.geteuid() == 0:
            shutil.chown(self.config_path, user=self.cluster.owner)

    def start(self):
        owner = pwd.getpwnam(self.cluster.owner)
        log = open(self.log_path, "ab")
        # As root, Popen's user= execs Patroni itself as the owner (runuser would stay between, and a SIGKILL would miss
        # it); PostgreSQL refuses to run as root.
        as_owner = {"user": owner.pw_uid, "group": owner.pw_gid, "extra_groups": []} if os.geteuid() == 0 else {}
        self.proc = subprocess.Popen(["patroni", self.config_path], stdin=subprocess.DEVNULL, stdout=log,
                                     stderr=subprocess.STDOUT, **as_owner, cwd=self.cluster.workdir,
                                     env={"PATH": os.environ.get("PATH", ""), "HOME": self.cluster.workdir, "LC_ALL": "C.UTF-8"})
        return self

    def kill(self):
        """As a machine that died: Patroni and PostgreSQL with SIGKILL, every backend with them."""
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(30)
        postmaster = self.postmaster_pid()
        assert postmaster or not os.path.exists(os.path.join(self.data, "postmaster.pid")), "unreadable postmaster.pid"
        if postmaster:
            children = subprocess.run(["pgrep", "-P", str(postmaster)], capture_output=True, text=True).stdout.split()
            for pid in [postmaster, *map(int, children)]:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            gone = poll(lambda: self.postmaster_alive(postmaster), lambda alive: not alive, within=30)
            assert gone is False, f"{self.name}: PostgreSQL ({postmaster}) survived SIGKILL"

    def postmaster_pid(self):
        try:
            with open(os.path.join(self.data, "postmaster.pid")) as f:
                return int(f.readline().strip())
        except (OSError, ValueError):
            return None

    @staticmethod
    def postmaster_alive(pid):
        try:
            os.kill(pid, 0)
            return True
        except ProcessLookupError:
            return False

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                pass
        self.kill()
        self.etcd_link.close()

    def status(self):
        """Patroni's view of this node (`GET /patroni`): state and role."""
        return requests.get(f"http://127.0.0.1:{self.rest_port}/patroni", timeout=5).json()

    def sql(self, statement, database="postgres"):
        done = subprocess.run([os.path.join(PG_BIN, "psql"), "-h", "127.0.0.1", "-p", str(self.port), "-U", "latchkey",
                               "-d", database, "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-c", statement],
                              stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, f"{self.name}: {statement}: {done.stderr}"
        return done.stdout.strip()

    def latchkey_connections(self):
        return int(self.sql("SELECT count(*) FROM pg_stat_activity WHERE application_name = 'latchkey'"))

    def log_tail(self, chars=3000):
        try:
            with open(self.log_path, errors="replace") as f:
                return f.read()[-chars:]
        except OSError:
            return ""


class PatroniCluster:
    def __init__(self, size=3):
        self.workdir = tempfile.mkdtemp(prefix="latchkey-patroni-")
        # The nodes run as `postgres` (or `nobody`) when the tests run as root, else as the tests' own user.
        self.owner = pwd.getpwuid(os.geteuid()).pw_name
        if os.geteuid() == 0:
            self.owner = "postgres"
            try:
                pwd.getpwnam(self.owner)
            except KeyError:
                self.owner = "nobody"
            shutil.chown(self.workdir, user=self.owner)
        os.chmod(self.workdir, 0o755)
        self.scope = "latchkey-" + os.path.basename(self.workdir)[-8:].replace("_", "x")
        self.etcd_port, self.etcd_peer_port = free_port(), free_port()
        self.etcd = None
        self.nodes = []
        self.size = size

    def start(self):
        etcd_data = os.path.join(self.workdir, "etcd")
        client, peer = f"http://127.0.0.1:{self.etcd_port}", f"http://127.0.0.1:{self.etcd_peer_port}"
        self.etcd = subprocess.Popen(
            ["etcd", "--name", "e0", "--data-dir", etcd_data, "--listen-client-urls", client, "--advertise-client-urls", client,
             "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer, "--initial-cluster", f"e0={peer}",
             "--initial-cluster-state", "new"],
            stdin=subprocess.DEVNULL, stdout=open(os.path.join(self.workdir, "etcd.log"), "ab"), stderr=subprocess.STDOUT)
        healthy = poll(lambda: requests.get(client + "/health", timeout=2).json(), lambda h: h.get("health") == "true", 60)
        assert isinstance(healthy, dict) and healthy.get("health") == "true", f"etcd: {healthy!r}\n{self.etcd_log()}"
        # The first node bootstraps (initdb) alone; the others clone it with pg_basebackup once it leads.
        self.nodes = [Node(self, f"n{index}") for index in range(1, self.size + 1)]
        self.nodes[0].start()
        self.wait_until(lambda members: self.leader_of(members) is not None, 120, "the first node to lead")
        for node in self.nodes[1:]:
            node.start()
        self.wait_until(self.healthy, 180, "every node streaming, one synchronous")
        self.leader().sql("CREATE DATABASE latchkey")
        return self

    # What the DCS says.

    def members(self):
        """`GET /cluster` from any node that answers: [{name, role, state, ...}]."""
        for node in self.nodes:
            if node.proc is None or node.proc.poll() is not None:
                continue
            try:
                return requests.get(f"http://127.0.0.1:{node.rest_port}/cluster", timeout=3).json().get("members", [])
            except (requests.RequestException, ValueError):
                continue
        return []

    @staticmethod
    def leader_of(members):
        for member in members:
            if member.get("role") == "leader" and member.get("state") == "running":
                return member["name"]
        return None

    def healthy(self, members, size=None):
        """A running leader, a synchronous standby and every other member streaming."""
        if len(members) != (size or self.size) or self.leader_of(members) is None:
            return False
        roles = [m.get("role") for m in members]
        return "sync_standby" in roles and all(m.get("state") in ("running", "streaming") for m in members)

    def wait_until(self, accept, within, what):
        members = poll(self.members, lambda m: bool(m) and accept(m), within)
        assert isinstance(members, list) and members and accept(members), f"{what}: {members!r}\n{self.logs()}"
        return members

    def leader(self):
        name = self.leader_of(self.members())
        return next(node for node in self.nodes if node.name == name)

    def node(self, name):
        return next(node for node in self.nodes if node.name == name)

    # For Latchkey.

    def url(self, ports=None):
        """The database URL naming every node (or `ports`, proxies in front of them), libpq's multi-host form."""
        hosts = ",".join(f"127.0.0.1:{port}" for port in (ports or [node.port for node in self.nodes]))
        return f"postgres://latchkey@{hosts}/latchkey?target_session_attrs=read-write"

    def etcd_log(self):
        try:
            with open(os.path.join(self.workdir, "etcd.log"), errors="replace") as f:
                return f.read()[-1500:]
        except OSError:
            return ""

    def logs(self):
        return "".join(f"\n--- {node.name} (Patroni) ---\n{node.log_tail(2000)}" for node in self.nodes)

    def stop(self):
        for node in self.nodes:
            node.stop()
        if self.etcd and self.etcd.poll() is None:
            self.etcd.kill()
            self.etcd.wait(30)
        shutil.rmtree(self.workdir, ignore_errors=True)
