"""The service benchmark's CPU readings (/proc): a process tree, each worker process, PostgreSQL."""

from __future__ import annotations

import subprocess
import sys
import time

import psycopg
import pytest

from bench.service_loadgen import postgres_cpu_s, process_tree_cpu_s, worker_cpu_s

# Each child burns CPU, then waits on the shared stdin, so it is still there when it is read.
_BURN = (
    "import sys, time\nend = time.process_time() + {seconds}\n"
    "while time.process_time() < end: pass\nsys.stdin.read()\n"
)
_PARENT = (
    "import subprocess, sys\n"
    "kids = [subprocess.Popen([sys.executable, '-c', {burn!r}]) for _ in range(2)]\n"
    "[k.wait() for k in kids]\n"
)


def test_each_worker_process_and_the_tree_are_charged_their_own_cpu():
    """A parent that only waits and two children that each burn ~0.3 s: each child is counted on
    its own (the per-worker split) and the tree counts them all."""
    burn = _BURN.format(seconds=0.3)
    parent = subprocess.Popen(
        [sys.executable, "-c", _PARENT.format(burn=burn)], stdin=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + 30
        workers: dict[int, float] = {}
        while time.monotonic() < deadline:
            workers = worker_cpu_s(parent.pid)
            if len(workers) == 2 and min(workers.values()) >= 0.25:
                break
            time.sleep(0.05)
        assert len(workers) == 2, workers
        assert all(0.25 <= cpu < 2.0 for cpu in workers.values()), workers
        assert process_tree_cpu_s(parent.pid) >= sum(workers.values())
    finally:
        parent.communicate("", timeout=30)


@pytest.mark.integration
def test_postgres_cpu_grows_with_the_work_sent_to_it(pg_server_url: str):
    with psycopg.connect(pg_server_url, autocommit=True) as conn:
        before = postgres_cpu_s()
        for _ in range(20):
            conn.execute("SELECT sum(i) FROM generate_series(1, 200000) AS i").fetchone()
        assert postgres_cpu_s() - before >= 0.02  # 4M rows summed: well above one clock tick
