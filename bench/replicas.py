"""Replicas behind a real load balancer: `recloop serve` processes on their own ports behind Debian's
HAProxy, one PostgreSQL; one replica SIGKILLed under load.

    nice -n 10 python -m bench.replicas                          # 1, 2 and 4 replicas, 20 s each
    python -m bench.replicas --replicas 2 --duration 10 --kill --json

For each replica count: a private database, `recloop prepare` once, the replicas (`recloop serve
--no-migrate --no-prepare`, one worker each), HAProxy in front (round robin, health checks on
/readyz, retries only on connection failures: a POST that reached a replica is never sent twice),
and ``--concurrency`` clients each running loops on its own session for ``--duration`` seconds.
With ``--kill`` one replica is SIGKILLed halfway. Then every acknowledged answer (201 session,
200 loop) is looked up in PostgreSQL: ``lost`` counts those missing or different. The
same-session check sends ``--same-session`` concurrent loops (human judge) on one session
through the balancer: one must run, every other must get 409. ``--json``: one JSON object on the last line.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import psycopg

from app.services.bootstrap import new_key
from app.settings import Settings
from bench.ports import http_ready, reserved_port, spawn_logged, wait_ready
from bench.scale_common import DEFAULT_SERVER, HISTORY, bench_data_dir, create_database, drop_database, echo
from bench.service import prepare_calibration


def haproxy_binary() -> str | None:
    for candidate in (shutil.which("haproxy"), "/usr/sbin/haproxy"):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


@contextmanager
def replicas(n: int, database_url: str, data_dir: Path, *, ready_timeout_s: float = 300):
    """``n`` `recloop serve` processes; yields [(port, process)]."""
    env = {
        **os.environ,
        "RECLOOP_DATABASE_URL": database_url,
        "RECLOOP_DATA_DIR": str(data_dir),
        "RECLOOP_WORKERS": "1",
        "RECLOOP_RATE_LIMIT_PER_MINUTE": "0",
        "RECLOOP_STEERING_WARMUP": "false",
        "RECLOOP_HOST": "127.0.0.1",
    }
    # Prepared once, as `recloop serve` would before its workers: replicas only read it, and
    # several preparing the same data directory at once would race.
    prepare_calibration(env)
    started: list[tuple[int, subprocess.Popen]] = []
    recloop = str(Path(sys.executable).parent / "recloop")
    logs = Path(tempfile.mkdtemp(prefix="recloop-replicas-"))
    try:
        with ExitStack() as ports:  # each port held until its replica listens (bench/ports.py)
            for i in range(n):
                port = ports.enter_context(reserved_port())
                command = [recloop, "serve", "--no-migrate", "--no-prepare", "--port", str(port)]
                started.append((port, spawn_logged(command, logs / f"replica-{i}.log", env=env)))
            for i, (port, process) in enumerate(started):
                ready = http_ready(f"http://127.0.0.1:{port}/readyz")
                what, log_path = f"replica {i} (recloop serve on port {port})", logs / f"replica-{i}.log"
                wait_ready(process, ready, what=what, timeout_s=ready_timeout_s, log_path=log_path)
        yield started
    finally:
        for _, process in started:
            if process.poll() is None:
                process.terminate()
        for _, process in started:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
        shutil.rmtree(logs, ignore_errors=True)


@contextmanager
def haproxy(backends: list[int]):
    """HAProxy on a free port in front of ``backends``; yields its base URL."""
    binary = haproxy_binary()
    if binary is None:
        raise RuntimeError("needs HAProxy (Debian: apt-get install haproxy)")
    with ExitStack() as stack:
        workdir = Path(tempfile.mkdtemp(prefix="recloop-haproxy-"))
        stack.callback(shutil.rmtree, workdir, ignore_errors=True)
        port = stack.enter_context(reserved_port())  # held until haproxy listens (bench/ports.py)
        servers = "\n".join(
            f"  server r{i} 127.0.0.1:{p} check inter 500ms fall 3 rise 2" for i, p in enumerate(backends)
        )
        config = f"""
global
  maxconn 1024
defaults
  mode http
  timeout connect 1s
  timeout client 120s
  timeout server 120s
  # A replica busy with loops may answer /readyz slowly; only a dead one (refused) fails at once.
  timeout check 5s
  # Only a connection that never reached a replica is retried elsewhere: a POST that did is not
  # replayed (its answer may be lost, its work is not run twice).
  retries 3
  retry-on conn-failure
  option redispatch
frontend recloop
  bind 127.0.0.1:{port}
  default_backend replicas
backend replicas
  balance roundrobin
  option httpchk GET /readyz
  http-check expect status 200
{servers}
"""
        (workdir / "haproxy.cfg").write_text(config)
        log_path = workdir / "haproxy.log"
        process = spawn_logged([binary, "-db", "-f", str(workdir / "haproxy.cfg")], log_path)
        url = f"http://127.0.0.1:{port}"
        try:
            wait_ready(process, http_ready(f"{url}/readyz"), what="haproxy", timeout_s=30, log_path=log_path)
            yield url
        finally:
            process.terminate()
            process.wait(timeout=10)


@dataclass
class Load:
    acknowledged_loops: list[tuple[str, int, int]] = field(default_factory=list)  # session, index, item
    acknowledged_sessions: list[str] = field(default_factory=list)
    failed: dict[str, int] = field(default_factory=dict)
    waited: int = 0  # 409 + Retry-After: the session's loop is unresolved (it ran on the killed replica)
    seconds: float = 0.0


async def run_load(url: str, key: str, concurrency: int, duration_s: float, on_half=None) -> Load:
    load = Load()
    deadline = time.monotonic() + duration_s
    half = asyncio.Event()

    def fail(cause: str) -> None:
        load.failed[cause] = load.failed.get(cause, 0) + 1

    async def client_loop(client: httpx.AsyncClient, c: int) -> None:
        session = None
        while time.monotonic() < deadline:
            try:
                if session is None:
                    created = await client.post("/v1/sessions", json={"user_id": f"c{c}", "history": HISTORY})
                    if created.status_code != 201:
                        fail(str(created.status_code))
                        continue
                    session = created.json()["id"]
                    load.acknowledged_sessions.append(session)
                ran = await client.post(f"/v1/sessions/{session}/recommendations", json={})
                if ran.status_code == 200:
                    body = ran.json()
                    load.acknowledged_loops.append((session, body["loop_index"], body["item"]["id"]))
                elif ran.status_code == 409 and "retry-after" in ran.headers:
                    # The loop ran on the killed replica: shown running until recovery resolves it
                    # (app/services/recovery.py); a client waits as told instead of hammering.
                    load.waited += 1
                    pause = float(ran.headers["retry-after"])
                    await asyncio.sleep(max(0.0, min(pause, deadline - time.monotonic())))
                else:
                    fail(str(ran.status_code))
            except httpx.HTTPError as exc:
                fail(type(exc).__name__)

    async def killer() -> None:
        await asyncio.sleep(duration_s / 2)
        half.set()
        if on_half is not None:
            on_half()

    headers = {"Authorization": f"Bearer {key}"}
    limits = httpx.Limits(max_connections=concurrency + 4)
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=60, limits=limits) as client:
        started = time.monotonic()
        await asyncio.gather(killer(), *(client_loop(client, c) for c in range(concurrency)))
        load.seconds = time.monotonic() - started
    return load


def lost_work(database_url: str, load: Load) -> int:
    """Acknowledged answers PostgreSQL does not hold as answered."""
    lost = 0
    with psycopg.connect(database_url) as conn:
        for session in set(load.acknowledged_sessions):
            if conn.execute("SELECT 1 FROM sessions WHERE id = %s", (session,)).fetchone() is None:
                lost += 1
        for session, index, item in load.acknowledged_loops:
            row = conn.execute(
                "SELECT status, final_item FROM loops WHERE session_id = %s AND loop_index = %s",
                (session, index),
            ).fetchone()
            if row is None or row[0] != "completed" or row[1] != item:
                lost += 1
    return lost


async def same_session(url: str, key: str, n: int) -> dict[int, int]:
    """``n`` concurrent loops on one new session, human judge: status code -> count."""
    headers = {"Authorization": f"Bearer {key}"}
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=60) as client:
        for _ in range(10):  # right after a kill the balancer may still pick the dead replica once
            created = await client.post("/v1/sessions", json={"user_id": "same", "history": HISTORY})
            if created.status_code == 201:
                break
            await asyncio.sleep(0.5)
        created.raise_for_status()
        session = created.json()["id"]
        answers = await asyncio.gather(
            *(
                client.post(f"/v1/sessions/{session}/recommendations", json={"judge_mode": "human"})
                for _ in range(n)
            )
        )
    codes: dict[int, int] = {}
    for answer in answers:
        codes[answer.status_code] = codes.get(answer.status_code, 0) + 1
    return codes


def run_once(args: argparse.Namespace, n: int, data_dir: Path, *, kill: bool) -> dict:
    url = create_database(args.database_url)
    try:
        settings = Settings(data_dir=data_dir, database_url=url, _env_file=None)
        key = new_key(url, settings, owner="bench").secret
        with ExitStack() as stack:
            started = stack.enter_context(replicas(n, url, data_dir))
            balancer = stack.enter_context(haproxy([port for port, _ in started]))
            victim = started[-1][1]
            on_half = (lambda: victim.send_signal(signal.SIGKILL)) if kill and n > 1 else None
            load = asyncio.run(run_load(balancer, key, args.concurrency, args.duration, on_half))
            codes = asyncio.run(same_session(balancer, key, args.same_session))
        lost = lost_work(url, load)
    finally:
        drop_database(args.database_url, url)
    return {
        "replicas": n,
        "killed_one": bool(kill and n > 1),
        "concurrency": args.concurrency,
        "seconds": round(load.seconds, 1),
        "loops_acknowledged": len(load.acknowledged_loops),
        "loops_per_s": round(len(load.acknowledged_loops) / load.seconds, 2),
        "failed": load.failed,
        "waited_retry_after": load.waited,
        "lost_acknowledged": lost,
        "same_session_codes": {str(k): v for k, v in sorted(codes.items())},
        "same_session_ok": codes.get(200) == 1 and codes.get(409) == args.same_session - 1,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database-url", default=DEFAULT_SERVER, help="A server to create databases on.")
    parser.add_argument("--replicas", nargs="+", type=int, default=[1, 2, 4])
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--duration", type=float, default=20.0, help="Seconds of load per replica count.")
    parser.add_argument("--kill", action="store_true", help="SIGKILL one replica halfway (2+ replicas).")
    parser.add_argument("--same-session", type=int, default=8, help="Concurrent loops on one session.")
    parser.add_argument("--json", action="store_true", help="Print one JSON object last.")
    args = parser.parse_args()
    settings = Settings(_env_file=None)
    data_dir = bench_data_dir(settings)
    results = []
    for n in args.replicas:
        echo(f"{n} replica(s) behind HAProxy, concurrency {args.concurrency}, {args.duration:g} s ...")
        result = run_once(args, n, data_dir, kill=args.kill)
        echo(
            f"  {result['loops_per_s']} loops/s, lost {result['lost_acknowledged']}, "
            f"failed {result['failed']}, same session {result['same_session_codes']}"
        )
        results.append(result)
    base = results[0]["loops_per_s"] or float("nan")
    summary = {
        "results": results,
        "speedup": {str(r["replicas"]): round(r["loops_per_s"] / base, 2) for r in results},
    }
    if args.json:
        print(json.dumps(summary))


if __name__ == "__main__":
    main()
