"""A throwaway PostgreSQL server whose disk flushes are slow, for benchmarks.

Commit latency is dominated by the WAL flush (fsync), which differs a lot between machines:
0.3 ms on one box here, 5 ms on another. To measure how the service behaves where flushes are
slow, on any machine, this starts a private cluster (Debian's PostgreSQL binaries) with
``bench/slow_fsync.c`` preloaded, which adds a fixed delay to every fsync/fdatasync.

    with slow_fsync_server(delay_ms=4.0) as url: ...   # postgresql://postgres@127.0.0.1:PORT/postgres
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg

SHIM_SOURCE = Path(__file__).with_name("slow_fsync.c")


def postgres_bindir() -> Path:
    if pg_config := shutil.which("pg_config"):
        bindir = Path(subprocess.run([pg_config, "--bindir"], capture_output=True, text=True).stdout.strip())
        if (bindir / "initdb").exists():
            return bindir
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not found:
        raise RuntimeError("no PostgreSQL server binaries (initdb) found: install Debian's postgresql")
    return Path(found[-1]).parent


def _as_server_user(command: list[str]) -> list[str]:
    # PostgreSQL refuses to run as root.
    return ["runuser", "-u", "postgres", "--", *command] if os.geteuid() == 0 else command


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def slow_fsync_server(delay_ms: float) -> Iterator[str]:
    bindir = postgres_bindir()
    workdir = Path(tempfile.mkdtemp(prefix="recloop-slowpg-"))
    workdir.chmod(0o755)
    shim = workdir / "slow_fsync.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-O2", "-o", str(shim), str(SHIM_SOURCE), "-ldl"], check=True)
    pgdata = workdir / "data"
    pgdata.mkdir()
    if os.geteuid() == 0:
        shutil.chown(pgdata, "postgres")
    subprocess.run(
        _as_server_user([str(bindir / "initdb"), "-D", str(pgdata), "--auth=trust", "-U", "postgres"]),
        check=True,
        stdout=subprocess.DEVNULL,
    )
    port = free_port()
    env = {**os.environ, "LD_PRELOAD": str(shim), "SLOW_FSYNC_US": str(int(delay_ms * 1000))}
    server = subprocess.Popen(
        _as_server_user(
            [
                str(bindir / "postgres"),
                "-D",
                str(pgdata),
                "-p",
                str(port),
                "-k",
                str(pgdata),
                "-c",
                "listen_addresses=127.0.0.1",
                "-c",
                "max_connections=300",  # the benchmark keeps several servers' pools open at once
            ]
        ),  # fmt: skip
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"postgresql://postgres@127.0.0.1:{port}/postgres"
    try:
        deadline = time.time() + 30
        while True:
            try:
                psycopg.connect(url, connect_timeout=2).close()
                break
            except psycopg.OperationalError:
                if time.time() > deadline or server.poll() is not None:
                    raise RuntimeError("the slow-disk PostgreSQL did not start") from None
                time.sleep(0.3)
        yield url
    finally:
        server.terminate()
        server.wait(timeout=30)
        shutil.rmtree(workdir, ignore_errors=True)


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
