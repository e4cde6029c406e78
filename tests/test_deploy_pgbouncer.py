"""The service's pools through a real PgBouncer (Debian's): session pooling keeps every guarantee,
transaction pooling breaks the one-loop-per-session lock and the saver's prepared statements.

docs/deploy.md ("PgBouncer") explains why. Needs the `pgbouncer` binary (.ci/run installs it and
sets RECLOOP_REQUIRE_PGBOUNCER=1, which turns a missing binary into a failure instead of a skip).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict

from app.db.engine import checkpoint_pool, lock_pool
from bench.ports import port_listening, reserved_port, spawn_logged, wait_ready
from postgres.locks import AdvisoryLocks

pytestmark = pytest.mark.integration


class Busy(Exception):
    pass


def _pgbouncer_binary() -> str:
    for candidate in (shutil.which("pgbouncer"), "/usr/sbin/pgbouncer"):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    if os.environ.get("RECLOOP_REQUIRE_PGBOUNCER") == "1":
        pytest.fail(
            "RECLOOP_REQUIRE_PGBOUNCER=1 but there is no pgbouncer binary (apt-get install pgbouncer)"
        )
    pytest.skip("needs PgBouncer (Debian: apt-get install pgbouncer)")


@pytest.fixture
def bouncer(make_database) -> Iterator:
    """Factory: a PgBouncer in ``mode`` with ``server_pool`` server connections per database in front
    of a fresh test database; returns the URL of that database through it."""
    binary = _pgbouncer_binary()
    started: list[subprocess.Popen] = []
    # Readable by the unprivileged user PgBouncer switches to when started as root (it refuses to run
    # as root); pytest's tmp_path is private to its user.
    workdir = Path(tempfile.mkdtemp(prefix="recloop-pgbouncer-"))
    workdir.chmod(0o755)
    ports = ExitStack()

    def start(mode: str, server_pool: int) -> str:
        target = make_database()
        backend = conninfo_to_dict(target)
        port = ports.enter_context(reserved_port())  # until PgBouncer listens on it (bench/ports.py)
        ini = workdir / f"{mode}-{port}.ini"
        users = workdir / "users.txt"
        users.write_text(f'"{backend.get("user", "postgres")}" ""\n')
        ini.write_text(
            "[databases]\n"
            f"* = host={backend.get('host', '127.0.0.1')} port={backend.get('port', 5432)}\n"
            "[pgbouncer]\n"
            f"listen_addr = 127.0.0.1\nlisten_port = {port}\nunix_socket_dir =\n"
            f"auth_type = trust\nauth_file = {users}\n"
            f"pool_mode = {mode}\ndefault_pool_size = {server_pool}\nmax_client_conn = 50\n"
        )
        for path in (ini, users):
            path.chmod(0o644)
        command = [binary, *(["-u", "nobody"] if os.geteuid() == 0 else []), str(ini)]
        log_path = workdir / f"{mode}-{port}.log"
        process = spawn_logged(command, log_path)
        started.append(process)
        wait_ready(
            process, port_listening(port), what="pgbouncer", timeout_s=10, log_path=log_path, poll_s=0.05
        )
        return f"postgresql://{backend.get('user', 'postgres')}@127.0.0.1:{port}/{backend['dbname']}"

    yield start
    for process in started:
        process.terminate()
        process.wait(timeout=10)
    ports.close()
    shutil.rmtree(workdir, ignore_errors=True)


def test_pgbouncer_refuses_libpq_startup_options(bouncer):
    """Why the pools set their session parameters after connecting rather than in the startup packet."""
    url = bouncer("session", 2)
    with pytest.raises(psycopg.OperationalError, match="unsupported startup parameter: options"):
        psycopg.connect(url, options="-c search_path=langgraph").close()


async def test_session_pooling_keeps_the_loop_lock_and_the_saver_schema(bouncer, service_settings):
    url = bouncer("session", 4)
    locks_pool = lock_pool(url, service_settings)
    saver_pool = checkpoint_pool(url, service_settings)
    await locks_pool.open(wait=True)
    await saver_pool.open(wait=True)
    try:
        async with saver_pool.connection() as conn:
            row = await (await conn.execute("SHOW search_path")).fetchone()
            assert row["search_path"] == service_settings.checkpoint_schema
            for _ in range(3):  # prepared (prepare_threshold=0) and run again on the same server session
                assert (await (await conn.execute("SELECT %s::int AS n", (7,))).fetchone())["n"] == 7
        async with locks_pool.connection() as conn:
            setting = await (await conn.execute("SHOW synchronous_commit")).fetchone()
            assert setting[0] == "off"
        locks = AdvisoryLocks(locks_pool)
        async with locks.hold("session:abc", busy=Busy()):
            with pytest.raises(Busy):  # a second request for the same session: refused (409)
                async with locks.hold("session:abc", busy=Busy()):
                    pass
        async with locks.hold("session:abc", busy=Busy()):  # freed: the next loop may run
            pass
    finally:
        await locks_pool.close()
        await saver_pool.close()


async def test_transaction_pooling_lets_two_loops_hold_one_session(bouncer, service_settings):
    """One server connection behind two client connections: the second pg_try_advisory_lock lands
    on the backend that already holds the lock and, advisory locks being re-entrant per backend,
    succeeds. Two loops would run on one session."""
    url = bouncer("transaction", 1)
    pool = lock_pool(url, service_settings.model_copy(update={"lock_pool_size": 2}))
    await pool.open(wait=True)
    try:
        locks = AdvisoryLocks(pool)
        async with locks.hold("session:abc", busy=Busy()), locks.hold("session:abc", busy=Busy()):
            held = True
        assert held
    finally:
        await pool.close()


async def test_transaction_pooling_leaks_session_settings_between_clients(bouncer):
    """A SET outlives the client's transaction on the server connection, which the next client gets:
    one client's search_path (or synchronous_commit) becomes another's, and its own may be lost."""
    url = bouncer("transaction", 1)
    first = await psycopg.AsyncConnection.connect(url, autocommit=True)
    second = await psycopg.AsyncConnection.connect(url, autocommit=True)
    try:
        await first.execute("SET search_path TO langgraph")
        row = await (await second.execute("SHOW search_path")).fetchone()
        assert row[0] == "langgraph"  # never set by this client
    finally:
        await first.close()
        await second.close()


async def test_transaction_pooling_breaks_prepared_statements(bouncer):
    """The saver's pool prepares every statement (prepare_threshold=0); psycopg names them per client
    connection (_pg3_0, ...), so two clients on one server connection collide."""
    url = bouncer("transaction", 1)
    first = await psycopg.AsyncConnection.connect(url, autocommit=True, prepare_threshold=0)
    second = await psycopg.AsyncConnection.connect(url, autocommit=True, prepare_threshold=0)
    try:
        assert (await (await first.execute("SELECT 1")).fetchone())[0] == 1
        with pytest.raises(psycopg.errors.DuplicatePreparedStatement):
            await second.execute("SELECT 2")
    finally:
        await first.close()
        await second.close()
