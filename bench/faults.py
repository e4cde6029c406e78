"""Fault benchmark: keyed clients against real uvicorn workers while PostgreSQL restarts and workers die.

A private PostgreSQL cluster (bench/slow_disk.py) and a slow OpenAI-compatible LLM stub
(tests/fake_openai.py: every call waits ``--llm-delay-s``, so loops are in flight when a fault
strikes) back ``--workers`` uvicorn workers. ``--clients`` clients create sessions and ask for
recommendations (LLM agents), each request with its own ``Idempotency-Key``, retried with the
same key after a 503 or 409 (as ``Retry-After`` says) or a transport error. Every
``--restart-every`` seconds the cluster is stopped fast (connections cut) and started again;
``--kill-worker-at`` SIGKILLs a worker (uvicorn starts a new one). Afterwards the database is
compared with what the clients were told:

- ``lost``: acknowledged work (a 2xx loop or session) that is not in the database;
- ``duplicate_loops``: extra completed loops of one keyed request (a retry that ran it again);
- ``false_errors``: keyed requests answered 5xx although their work was committed (a later
  retry replayed it), by an attempt that may have carried the work (before any 409 "still
  running": :func:`said_error_for_its_own_work`);
- ``stale_running``: loops and sessions still ``running`` once the service had time to recover;
- ``unhandled_exceptions``: tracebacks in the server log;
- ``other_5xx``: 5xx answers other than 503 with Retry-After;
- ``abandoned_resumable``: loops failed because their worker stopped, which could have been
  resumed from their last committed checkpoint (app/services/resume.py);
- ``judgements_lost``: acknowledged human judgements (keyed ``/feedback``, every other client judges
  its loops itself) that are not in the loop's rounds as answered;
- ``retries_diverged``: acknowledged keyed requests whose replay (sent once more after the load)
  answers another loop, status, item or rounds than the first answer.

``outage_503_p99_ms`` is the p99 latency of the 503 answers (the database down: they should come
in about a second, postgres/outage.py); ``--restart-down-s`` sets how long each outage lasts. Runs
in flight wait out a short outage (``Settings.run_outage_wait_s``): ``outage_effects`` counts
what the server log shows of one that no client saw.

    python -m bench.faults                          # 5 min, a restart every 30 s, 2 workers
    python -m bench.faults --duration 60 --kill-worker-at 20 --json
    python -m bench.faults --duration 40 --restart-every 15 --restart-down-s 6 --json   # outages
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import psycopg

from app.db.migrate import migrate_all
from app.services.bootstrap import new_key
from app.settings import Settings
from bench.fault_counts import Attempt, KeyedRequest, Tally, judge, judge_log, outage_effects, stale_running
from bench.ports import reserved_port
from bench.service import start_server
from bench.slow_disk import PrivatePostgres, private_postgres

COUNTS = (
    "lost",
    "duplicate_loops",
    "false_errors",
    "stale_running",
    "unhandled_exceptions",
    "other_5xx",
    "abandoned_resumable",
    "judgements_lost",
    "retries_diverged",
)
"""The counts a run reports (a contract: every one is 0 when faults never lie)."""
N_CANDIDATES = 20


@dataclass(frozen=True)
class FaultPlan:
    duration_s: float = 300.0
    restart_every_s: float | None = 30.0
    restart_down_s: float = 1.0
    """How long the cluster stays stopped per restart (plus its own stop and start time)."""
    kill_worker_at_s: tuple[float, ...] = ()
    kill_agent_run_at_s: tuple[float, ...] = ()
    """SIGKILL the worker of an agent-judged loop running then (any busy worker if none runs)."""
    kill_judgement_at_s: tuple[float, ...] = ()
    """SIGKILL the worker applying a human judgement then (a keyed /feedback's run)."""
    stale_grace_s: float = 3.0
    """How soon a killed worker's loops are resumed (``RECLOOP_STALE_GRACE_S``)."""
    workers: int = 2
    clients: int = 6
    llm_delay_s: float = 0.3
    loops_per_session: int = 10
    settle_s: float = 60.0
    """Longest wait after the load for nothing to be ``running`` any more."""


async def _send(
    client: httpx.AsyncClient, tally: Tally, request: KeyedRequest, url: str, body: dict, give_up_at: float
) -> None:
    """Send until a final answer: retry with the same key after 503/409/429 (their Retry-After) and
    after transport errors, until ``give_up_at``."""
    tally.requests.append(request)
    request.url, request.body = url, body
    while True:
        tally.http_requests += 1
        sent = time.perf_counter()
        try:
            response = await client.post(url, json=body, headers={"Idempotency-Key": request.key})
        except httpx.TransportError as exc:
            request.attempts.append(Attempt(None))
            tally.statuses[f"transport:{type(exc).__name__}"] += 1
            if time.monotonic() > give_up_at:
                return
            await asyncio.sleep(0.5)
            continue
        retry_after = response.headers.get("retry-after")
        request.attempts.append(
            Attempt(
                response.status_code, response.headers.get("idempotent-replayed") == "true", bool(retry_after)
            )
        )
        tally.statuses[str(response.status_code)] += 1
        if response.status_code == 503:
            tally.latencies_503_ms.append((time.perf_counter() - sent) * 1000)
        if 200 <= response.status_code < 300:
            request.answer = response.json()
            return
        if response.status_code in (409, 429, 503) and retry_after and time.monotonic() < give_up_at:
            await asyncio.sleep(min(float(retry_after), 5.0))
            continue
        return


async def _client(
    client: httpx.AsyncClient, tally: Tally, index: int, n_items: int, plan: FaultPlan, stop_at: float
) -> None:
    rng = random.Random(index)
    give_up_at = stop_at + plan.settle_s / 2  # requests in flight at the end still get their retries
    while time.monotonic() < stop_at:
        history = rng.sample(range(n_items), 8)
        created = KeyedRequest("session", str(uuid.uuid4()), None)
        await _send(
            client,
            tally,
            created,
            "/v1/sessions",
            {"user_id": f"fault-{index}", "history": history},
            give_up_at,
        )
        if created.answer is None:
            await asyncio.sleep(1.0)
            continue
        session_id = created.answer["id"]
        human = index % 2 == 1  # every other client judges its loops itself
        for _ in range(plan.loops_per_session):
            if time.monotonic() >= stop_at:
                return
            candidates = tuple(rng.sample(range(n_items), N_CANDIDATES))
            body = {"agents": "llm", "max_rounds": 2, "candidates": list(candidates)}
            if human:
                body["judge_mode"] = "human"
            loop = KeyedRequest("loop", str(uuid.uuid4()), session_id, candidates)
            await _send(client, tally, loop, f"/v1/sessions/{session_id}/recommendations", body, give_up_at)
            answer = loop.answer
            while answer is not None and answer["status"] == "awaiting_feedback":
                judged = len(answer["rounds"]) + 1
                decision = "reject" if judged == 1 else "accept"
                feedback = KeyedRequest("feedback", str(uuid.uuid4()), session_id, candidates, round=judged)
                judgement = {"decision": decision, "reason": "not tonight" if decision == "reject" else "yes"}
                await _send(
                    client, tally, feedback, f"/v1/sessions/{session_id}/feedback", judgement, give_up_at
                )
                answer = feedback.answer


def _gist(kind: str, answer: dict[str, Any]) -> Any:
    """What two answers to one keyed request must agree on (timings aside)."""
    if kind == "session":
        return answer["id"]
    rounds = [(r["round"], r["item"], r["decision"]) for r in answer["rounds"]]
    return answer["loop_index"], answer["status"], (answer.get("item") or {}).get("id"), rounds


async def _replays_diverged(client: httpx.AsyncClient, tally: Tally) -> int:
    """Send every acknowledged keyed request once more: its replay must give the same answer (the
    first few that do not are kept in ``tally.diverged_examples``, to tell why)."""
    diverged = 0
    for request in [r for r in tally.requests if r.answer is not None]:
        response = await client.post(request.url, json=request.body, headers={"Idempotency-Key": request.key})
        replayed = 200 <= response.status_code < 300 and response.headers.get("idempotent-replayed") == "true"
        same = replayed and _gist(request.kind, response.json()) == _gist(request.kind, request.answer)
        diverged += not same
        if not same and len(tally.diverged_examples) < 5:
            ok = 200 <= response.status_code < 300
            tally.diverged_examples.append({
                "kind": request.kind,
                "statuses": [a.status for a in request.attempts],
                "first": _gist(request.kind, request.answer),
                "replay_status": response.status_code,
                "replayed": response.headers.get("idempotent-replayed"),
                "replay": _gist(request.kind, response.json()) if ok else response.text[:300],
            })  # fmt: skip
    return diverged


def _p99(values: list[float]) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))], 1)


def _worker_pids(parent: int) -> list[int]:
    """uvicorn's worker processes (spawned children of its supervisor; not the resource tracker)."""
    children = Path(f"/proc/{parent}/task/{parent}/children").read_text().split()
    pids = []
    for pid in children:
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except FileNotFoundError:
            continue
        if "resource_tracker" not in cmdline:
            pids.append(int(pid))
    return pids


async def _faults(
    pg: PrivatePostgres, url: str, server: subprocess.Popen, plan: FaultPlan, started: float, log: list
) -> None:
    events: list[tuple[float, str]] = [(t, "kill") for t in plan.kill_worker_at_s]
    events += [(t, "kill-agent") for t in plan.kill_agent_run_at_s]
    events += [(t, "kill-judgement") for t in plan.kill_judgement_at_s]
    if plan.restart_every_s:
        t = plan.restart_every_s
        while t < plan.duration_s:
            events.append((t, "restart"))
            t += plan.restart_every_s
    for at, kind in sorted(events):
        await asyncio.sleep(max(0.0, started + at - time.monotonic()))
        if kind == "restart":
            down = await asyncio.to_thread(pg.restart, down_s=plan.restart_down_s)
            log.append({"at_s": round(at, 1), "fault": "restart", "unreachable_s": round(down, 2)})
        else:
            running = _RUNNING[kind.removeprefix("kill").removeprefix("-") or "any"]
            victim, found = await asyncio.to_thread(_busy_worker, url, _worker_pids(server.pid), running)
            os.kill(victim, signal.SIGKILL)
            log.append({"at_s": round(at, 1), "fault": "sigkill", "pid": victim, "mid": found})


_RUNNING = {
    "any": "status = 'running'",
    "agent": "status = 'running' AND params->>'judge_mode' = 'agent'",
    # A human-judged loop running again after its first run recorded it paused: a judgement's run.
    "judgement": "status = 'running' AND params->>'judge_mode' = 'human' AND duration_ms IS NOT NULL",
}
"""Which running loops a kill looks for (SQL on ``loops``)."""


def _busy_worker(url: str, pids: list[int], running: str = _RUNNING["any"], wait_s: float = 10.0):
    """A worker that runs such a loop right now (loops name their worker "pid:..."), so that the
    kill strikes mid-loop, and what it runs (``running``, or None: any worker, none did within
    ``wait_s``)."""
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        with psycopg.connect(url, connect_timeout=3) as conn:
            rows = conn.execute(f"SELECT worker_id FROM loops WHERE {running}").fetchall()
        busy = [int(worker.split(":")[0]) for (worker,) in rows if worker and ":" in worker]
        if candidates := [pid for pid in pids if pid in busy]:
            time.sleep(random.uniform(0.2, 1.2))  # somewhere in the run, not at its start
            return random.choice(candidates), True
        time.sleep(0.05)
    return random.choice(pids), False


def _wait_for_recovery(url: str, settle_s: float) -> tuple[int, float]:
    """Wait until nothing is ``running`` (at most ``settle_s``); (what still is, seconds waited)."""
    started = time.monotonic()
    while True:
        try:
            stale = stale_running(url)
        except psycopg.OperationalError:
            stale = -1
        waited = time.monotonic() - started
        if stale == 0 or waited > settle_s:
            return stale, waited
        time.sleep(0.5)


def run(plan: FaultPlan, data_dir: Path, echo=lambda message: None) -> dict[str, Any]:
    """One fault run on a private cluster; the result dict (COUNTS and what was done)."""
    from tests.fake_openai import FakeOpenAI, loop_autoresponder

    def slow(request):
        return loop_autoresponder(request).delayed(plan.llm_delay_s)

    settings = Settings(data_dir=data_dir, _env_file=None)
    from recmodels.dataset import Dataset

    n_items = Dataset.open(settings.datasets_dir, settings.dataset).n_items
    with private_postgres(prefix="recloop-faults-") as pg, FakeOpenAI(default=slow, keep_alive=True) as llm:
        with psycopg.connect(pg.url, autocommit=True) as conn:
            conn.execute("CREATE DATABASE recloop_faults")
        url = pg.url.rsplit("/", 1)[0] + "/recloop_faults"
        migrate_all(url, settings.checkpoint_schema)
        key = new_key(url, settings, owner="faults").secret
        env = {
            "RECLOOP_DATA_DIR": str(data_dir),
            "RECLOOP_DATABASE_URL": url,
            "RECLOOP_LLM_BASE_URL": llm.base_url,
            "RECLOOP_LLM_MAX_RETRIES": "0",
            "RECLOOP_LLM_TOKEN_BUDGET_PER_DAY": "0",
            "RECLOOP_RATE_LIMIT_PER_MINUTE": "0",
            "RECLOOP_STEERING_WARMUP": "false",
            "RECLOOP_TORCH_THREADS": "1",
            "RECLOOP_STALE_GRACE_S": str(plan.stale_grace_s),
        }
        log_path = Path(tempfile.mkdtemp(prefix="recloop-faults-log-")) / "server.log"
        echo(f"starting {plan.workers} workers ...")
        with reserved_port() as port:
            server = start_server(
                env, port, plan.workers, log_path=log_path, ready_s=600
            )  # a busy box: minutes
        tally = Tally()
        faults: list[dict] = []
        try:
            started = time.monotonic()
            stop_at = started + plan.duration_s

            async def load() -> None:
                limits = httpx.Limits(max_connections=plan.clients, max_keepalive_connections=plan.clients)
                headers = {"Authorization": f"Bearer {key}"}
                async with httpx.AsyncClient(
                    base_url=f"http://127.0.0.1:{port}", headers=headers, limits=limits, timeout=60
                ) as client:
                    injector = asyncio.create_task(_faults(pg, url, server, plan, started, faults))
                    await asyncio.gather(
                        *(_client(client, tally, i, n_items, plan, stop_at) for i in range(plan.clients))
                    )
                    # Every fault falls within the load; one still looking for its victim strikes.
                    await injector
                    await asyncio.to_thread(_wait_for_recovery, url, plan.settle_s)
                    tally.diverged = await _replays_diverged(client, tally)

            echo(f"load for {plan.duration_s:.0f} s: {plan.clients} clients, faults {plan}")
            asyncio.run(load())
            load_s = time.monotonic() - started
            stale, recovery_s = _wait_for_recovery(url, plan.settle_s)
            echo(f"after the load: {stale} running, {recovery_s:.1f} s waited")
            result = judge(url, tally)
            result["retries_diverged"] = tally.diverged
            result["diverged_examples"] = tally.diverged_examples
        finally:
            server.send_signal(signal.SIGINT)
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()
        server_log = log_path.read_text(errors="replace")
        result["unhandled_exceptions"] = judge_log(server_log)
        result["outage_effects"] = outage_effects(server_log)
    return {
        **{name: result[name] for name in COUNTS},  # the contract's keys first
        "requests": tally.http_requests,
        "keyed_requests": len(tally.requests),
        "acknowledged": sum(r.answer is not None for r in tally.requests),
        "unanswered": sum(r.answer is None for r in tally.requests),
        "statuses": dict(sorted(tally.statuses.items())),
        "faults": faults,
        "outage_503_p99_ms": _p99(tally.latencies_503_ms),
        "n_503": len(tally.latencies_503_ms),
        "load_s": round(load_s, 1),
        "recovery_s": round(recovery_s, 1),
        **{k: v for k, v in result.items() if k not in COUNTS},
        "server_log_tail": server_log[-2000:] if result["unhandled_exceptions"] else "",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=300.0, help="Seconds of load.")
    parser.add_argument(
        "--restart-every", type=float, default=30.0, help="Seconds between restarts; 0: none."
    )
    parser.add_argument("--restart-down-s", type=float, default=1.0)
    parser.add_argument(
        "--kill-worker-at", type=float, nargs="*", default=[], help="SIGKILL a worker at these s."
    )
    parser.add_argument(
        "--kill-agent-run-at",
        type=float,
        nargs="*",
        default=[],
        help="SIGKILL the worker of an agent-judged loop at these s.",
    )
    parser.add_argument(
        "--kill-judgement-at",
        type=float,
        nargs="*",
        default=[],
        help="SIGKILL the worker applying a keyed human judgement at these s.",
    )
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--clients", type=int, default=6)
    parser.add_argument(
        "--llm-delay-s", type=float, default=0.3, help="Each LLM call of the stub takes this."
    )
    parser.add_argument("--json", action="store_true", help="Print one JSON object as the last line.")
    args = parser.parse_args()
    plan = FaultPlan(
        duration_s=args.duration,
        restart_every_s=args.restart_every or None,
        restart_down_s=args.restart_down_s,
        kill_worker_at_s=tuple(args.kill_worker_at),
        kill_agent_run_at_s=tuple(args.kill_agent_run_at),
        kill_judgement_at_s=tuple(args.kill_judgement_at),
        workers=args.workers,
        clients=args.clients,
        llm_delay_s=args.llm_delay_s,
    )

    def echo(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    from bench.service import _bench_data_dir

    settings = Settings()
    result = run(plan, _bench_data_dir(settings, (settings.rec_model, settings.reward_model), echo), echo)
    if args.json:
        print(json.dumps(result))
        return
    for name in COUNTS:
        print(f"{name:>22}: {result[name]}")
    for name in (
        "requests",
        "keyed_requests",
        "acknowledged",
        "unanswered",
        "outage_503_p99_ms",
        "n_503",
        "loops_resumed",
        "load_s",
        "recovery_s",
    ):
        print(f"{name:>22}: {result[name]}")
    print(f"{'statuses':>22}: {result['statuses']}")
    print(f"{'faults':>22}: {result['faults']}")


if __name__ == "__main__":
    main()
