"""The pool-stall defect's trigger, played against the real binary: connects to PostgreSQL that take longer than the
connect timeout (a `FaultProxy` holds every new connection), while the instance holds idle, healthy connections.

PostgresNIO 1.33's own pool, after one such failed connect, queued every request until a connection was released or a
connect succeeded (`docs/operating.md`, known limits; `../shared/reviews/postgres-pool-stall.md`). Latchkey's pool must
serve every request from the connections it has, before and after a connect failed, and never wait for the held ones.
Needs `LATCHKEY_TEST_POSTGRES_URL` (scripts/test.sh), else skipped.
"""
import concurrent.futures
import os
import shutil
import tempfile
import urllib.parse

import pytest

from conftest import Server, poll
from failover_load import refresh, strict_rotation_config
from faultproxy import FaultProxy

ADMIN_URL = os.environ.get("LATCHKEY_TEST_POSTGRES_URL")
if not ADMIN_URL:
    pytest.skip("LATCHKEY_TEST_POSTGRES_URL is not set (scripts/test.sh starts PostgreSQL with Server/Tests/postgres/start.sh)",
                allow_module_level=True)

from test_postgres_instances import KEK_ENV, create_database, drop_database, sign_in  # noqa: E402


def burst(base, tokens):
    """One refresh per token, all at once; the answers in order."""
    with concurrent.futures.ThreadPoolExecutor(len(tokens)) as pool:
        return list(pool.map(lambda token: refresh(base, token), tokens))


def test_connects_slower_than_their_timeout_never_hold_up_the_idle_connections():
    name, url = create_database()
    parts = urllib.parse.urlsplit(url)
    proxy = FaultProxy(parts.port)
    through_proxy = parts._replace(netloc=f"{parts.username}@127.0.0.1:{proxy.port}").geturl()
    workdir = tempfile.mkdtemp(prefix="latchkey-connect-faults-")
    server = Server(workdir, database=through_proxy, env=KEK_ENV, args=["--config", strict_rotation_config(workdir)])
    try:
        server.start()
        # Warm: a few sign-ins at once leave several connections idle in the pool.
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            tokens = [t["refresh_token"] for t in pool.map(lambda _: sign_in(server), range(8))]
        opened = proxy.accepted
        assert opened >= 2, f"the warm-up opened {opened} connections"

        proxy.hold_new_connections()
        # More requests at once than idle connections: the pool tries to open more, and those connects hang.
        first = burst(server.base, tokens)
        assert all(r.status_code == 200 for r in first), [(r.status_code, r.text[:120]) for r in first]
        tokens = [r.json()["refresh_token"] for r in first]
        # A connect fails at its timeout (the proxy still holds it); the defect's state begins here.
        log = os.path.join(workdir, "server.log")
        failed = poll(lambda: open(log, errors="replace").read(), lambda text: "could not be opened" in text, within=120)
        assert "could not be opened" in failed, "no connect failed while the proxy held them"
        second = burst(server.base, tokens)
        assert all(r.status_code == 200 for r in second), [(r.status_code, r.text[:120]) for r in second]
        # Every answer came from the connections opened before the hold: none of the held ones got through.
        assert proxy.waiting_to_connect >= 1, "the held connects were let through"
        print(f"\nconnect faults: {len(first) + len(second)} refreshes answered 200 on {opened} warm connections while "
              f"{proxy.waiting_to_connect} connects were held past their timeout")
    finally:
        proxy.release()
        server.stop()
        proxy.close()
        shutil.rmtree(workdir, ignore_errors=True)
        drop_database(name)
