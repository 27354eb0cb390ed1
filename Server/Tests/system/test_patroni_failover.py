"""Two `latchkey serve` instances on a Patroni cluster (three PostgreSQL nodes, `synchronous_mode`, etcd), under a
steady load of code flows and refresh grants:

1. the primary dies (Patroni and PostgreSQL SIGKILLed): Patroni promotes the synchronous standby, the instances find it
   by themselves (the database URL names the three nodes), the old primary rejoins as a standby;
2. one instance is cut from the database (every byte between them held, nothing closed) while the other keeps working;
   the cut heals;
3. the primary is cut from etcd: Patroni demotes it and promotes another node; the cut heals and it rejoins.

Throughout, every answer is a success or `503 temporarily_unavailable` with `Retry-After` (no 500, no hang), `/ready`
says 503 while an instance cannot write and 200 after, and everything answered before is as committed afterwards
(`failover_load.Load.verify`). The times the tests print (kill to first success, cut to the isolated instance's 503)
go into docs/testing.md; they are reported, not asserted. Skipped without Debian's PostgreSQL, patroni and etcd.
"""
import base64
import contextlib
import os
import secrets
import shutil
import tempfile
import time

import pytest
import requests

from conftest import Server, free_port, poll
from failover_load import Load, refresh, strict_rotation_config
from patroni_cluster import TTL, PatroniCluster, available

reason = available()
if reason:
    pytest.skip(reason, allow_module_level=True)

# How long the load runs before and after each fault (seconds of traffic, not a rule under test).
# Every instance seals and opens the signing keys with this one key-encryption key.
KEK_ENV = {"LATCHKEY_KEY_ENCRYPTION_KEY": base64.b64encode(secrets.token_bytes(32)).decode()}
STEADY = float(os.environ.get("LATCHKEY_FAILOVER_LOAD_SECONDS", "3"))


@pytest.fixture
def cluster():
    started = PatroniCluster().start()
    yield started
    started.stop()


class Instances:
    """Instances on one database URL each (a node list, or proxies in front of it), answering as one issuer."""

    def __init__(self, urls):
        self.servers = []
        port = free_port()
        issuer = f"http://localhost:{port}"
        try:
            for index, url in enumerate(urls):
                workdir = tempfile.mkdtemp(prefix="latchkey-patroni-server-")
                server = Server(workdir, port=port if index == 0 else None, database=url, issuer=issuer, env=KEK_ENV,
                                args=["--config", strict_rotation_config(workdir)])
                self.servers.append(server.start())
        except Exception:
            self.stop()
            raise

    @property
    def bases(self):
        return [server.base for server in self.servers]

    def logs(self, chars=2500):
        text = ""
        for server in self.servers:
            try:
                with open(os.path.join(server.workdir, "server.log"), errors="replace") as f:
                    whole = f.read()
                    text += f"\n--- {server.base} ---\n" + (whole[-chars:] if chars else whole)
            except OSError:
                pass
        return text

    def stop(self):
        for server in self.servers:
            server.stop()
            shutil.rmtree(server.workdir, ignore_errors=True)


def ready(base):
    return requests.get(base + "/ready", timeout=30).status_code


def steady(load, seconds, base=None):
    """Lets the load run until each instance (or `base`) has answered successes for `seconds` more."""
    since = time.monotonic()
    time.sleep(seconds)
    got = poll(lambda: load.successes_since(since, base=base), lambda s: len(s) >= 3, within=120)
    assert isinstance(got, list) and len(got) >= 3, f"the load made no progress: {load.summary()} {load.failures[:3]}"


@contextlib.contextmanager
def loaded(urls):
    """Instances on `urls` under a running load; both stopped however the test ends."""
    instances = Instances(urls)
    load = Load(instances.bases).start()
    try:
        yield instances, load
    finally:
        load.stopping.set()
        instances.stop()


def finish(load, instances, at):
    load.stop()
    broken = load.verify(at)
    summary = load.summary()
    # A statement that outlived its deadline had its connection closed by the pool (`PostgresPool.abandon`).
    summary["leases abandoned at the deadline"] = instances.logs(chars=None).count("outlived its deadline")
    print(f"\nload: {summary}")
    assert not load.failures, f"{len(load.failures)} answers neither a success nor a 503: {load.failures[:5]}" + instances.logs()
    assert not broken, f"{len(broken)} answered grants not as committed: {broken[:5]}"
    assert summary["refresh grants answered"] > 0 and summary["chains"] > 0, summary
    return summary


def test_the_primary_dies_patroni_promotes_and_the_old_primary_rejoins(cluster):
    with loaded([cluster.url(), cluster.url()]) as (instances, load):
        steady(load, STEADY)
        old = cluster.leader()
        assert all(node.latchkey_connections() == 0 for node in cluster.nodes if node is not old), "a standby holds connections"
        old.kill()
        # No writable node until Patroni's leader key expires: every instance says so.
        for base in instances.bases:
            status = poll(lambda: ready(base), lambda s: s == 503, within=60)
            assert status == 503, f"/ready at {base} while no primary: {status!r}"
        members = cluster.wait_until(lambda m: cluster.leader_of(m) not in (None, old.name), 120, "a new leader")
        new = cluster.node(cluster.leader_of(members))
        promoted = time.monotonic()
        first = poll(lambda: load.successes_since(promoted, step="refresh"), lambda s: len(s) > 0, within=120)
        assert first, f"no refresh succeeded after the failover: {load.summary()}" + instances.logs()
        for base in instances.bases:
            assert poll(lambda: ready(base), lambda s: s == 200, within=60) == 200, f"/ready at {base} after the failover"
        steady(load, STEADY)

        # The old primary comes back (pg_rewind if its timeline forked) and follows the new one.
        old.start()
        cluster.wait_until(cluster.healthy, 180, "the old primary rejoined as a standby")
        steady(load, STEADY)
        assert old.latchkey_connections() == 0, "an instance writes to, or kept, the rejoined standby"
        assert new.latchkey_connections() >= 1
        summary = finish(load, instances, instances.bases[1])
        print(f"failover: refreshes stopped for at most {summary['longest refresh gap (s)']} s (Patroni ttl {TTL} s); "
              f"503 answers {summary['503 answers']}; old primary {old.name} rejoined as "
              f"{[m['role'] for m in cluster.members() if m['name'] == old.name]}")


def test_an_instance_cut_from_the_database_answers_503_and_recovers_by_itself(cluster):
    from faultproxy import FaultProxy
    proxies = [FaultProxy(node.port) for node in cluster.nodes]
    try:
        with loaded([cluster.url(ports=[proxy.port for proxy in proxies]), cluster.url()]) as (instances, load):
            cut_and_heal(proxies, instances, load)
    finally:
        for proxy in proxies:
            proxy.close()


def cut_and_heal(proxies, instances, load):
    """The first instance, behind `proxies`, cut from the database and healed while the second serves."""
    isolated, other = instances.bases
    steady(load, STEADY)
    cut = time.monotonic()
    for proxy in proxies:
        proxy.cut()
    status = poll(lambda: ready(isolated), lambda s: s == 503, within=60)
    assert status == 503, f"/ready of the isolated instance: {status!r}"
    seen = time.monotonic() - cut
    answer = refresh(isolated, "never-issued-but-the-store-is-asked")
    assert answer.status_code == 503 and answer.headers.get("Retry-After"), f"{answer.status_code} {answer.text[:200]}"
    # The other instance serves all along.
    steady(load, STEADY, base=other)
    assert ready(other) == 200

    for proxy in proxies:
        proxy.heal()
    healed = time.monotonic()
    assert poll(lambda: ready(isolated), lambda s: s == 200, within=120) == 200, "/ready after the cut healed"
    back = poll(lambda: load.successes_since(healed, base=isolated, step="refresh"), lambda s: len(s) > 0, within=120)
    assert back, f"the isolated instance did not recover: {load.summary()}" + instances.logs()
    steady(load, STEADY)
    summary = finish(load, instances, other)
    print(f"partition: the isolated instance's /ready 503 {seen:.1f} s after the cut; first success "
          f"{back[0][0] - healed:.1f} s after the heal; 503 answers {summary['503 answers']}")


def test_a_primary_cut_from_etcd_is_demoted_and_another_node_takes_over(cluster):
    with loaded([cluster.url(), cluster.url()]) as (instances, load):
        steady(load, STEADY)
        old = cluster.leader()
        old.etcd_link.cut()
        old.etcd_link.reset_all()  # its watch and lease calls fail now instead of at their own timeouts
        members = cluster.wait_until(lambda m: cluster.leader_of(m) not in (None, old.name), 120, "a leader other than the cut one")
        # The cut node stops accepting writes by itself (Patroni demotes a leader that cannot renew its key).
        demoted = poll(lambda: old.sql("SELECT pg_is_in_recovery()"), lambda r: r == "t", within=120)
        assert demoted == "t", f"the cut primary still writes: {demoted!r}" + old.log_tail()
        since = time.monotonic()
        first = poll(lambda: load.successes_since(since, step="refresh"), lambda s: len(s) > 0, within=120)
        assert first, f"no refresh succeeded after the demotion: {load.summary()}" + instances.logs()
        steady(load, STEADY)

        old.etcd_link.heal()
        cluster.wait_until(cluster.healthy, 180, "the demoted node back as a standby")
        steady(load, STEADY)
        summary = finish(load, instances, instances.bases[0])
        print(f"etcd partition: new leader {cluster.leader_of(members)}; refreshes stopped for at most "
              f"{summary['longest refresh gap (s)']} s; 503 answers {summary['503 answers']}")
