"""What bench.faults counts: the clients' keyed requests and their attempts, and the verdict on them
from the database and the server log (the counts' meanings: bench/faults.py's docstring)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import psycopg


@dataclass
class Attempt:
    status: int | None  # None: a transport error
    replayed: bool = False
    retry_after: bool = False


@dataclass
class KeyedRequest:
    kind: str  # "session" | "loop" | "feedback"
    key: str
    session_id: str | None
    candidates: tuple[int, ...] = ()
    url: str = ""
    body: dict[str, Any] = field(default_factory=dict)
    round: int | None = None
    """A judgement's round (feedback)."""
    attempts: list[Attempt] = field(default_factory=list)
    answer: dict[str, Any] | None = None
    """The 2xx body, if one came."""


class Tally:
    def __init__(self) -> None:
        self.requests: list[KeyedRequest] = []
        self.http_requests = 0
        self.statuses: Counter[str] = Counter()
        self.latencies_503_ms: list[float] = []
        self.diverged = 0
        self.diverged_examples: list[dict[str, Any]] = []


def stale_running(url: str) -> int:
    """Loops and sessions still ``running``."""
    with psycopg.connect(url, connect_timeout=3) as conn:
        loops = conn.execute("SELECT count(*) FROM loops WHERE status = 'running'").fetchone()[0]
        sessions = conn.execute("SELECT count(*) FROM sessions WHERE status = 'running'").fetchone()[0]
    return int(loops) + int(sessions)


def judge(url: str, tally: Tally) -> dict[str, Any]:
    """The counts of COUNTS but the log's (and context) from the database and the clients' answers."""
    with psycopg.connect(url) as conn:
        loops = conn.execute(
            "SELECT session_id::text, loop_index, status, final_item, params, error FROM loops"
        ).fetchall()
        decisions = {
            (s, k, r): decision
            for s, k, r, decision in conn.execute(
                "SELECT l.session_id::text, l.loop_index, r.round, r.decision FROM rounds r "
                "JOIN loops l ON l.id = r.loop_id"
            ).fetchall()
        }
        resumed = conn.execute("SELECT count(*) FROM loops WHERE resumed_from IS NOT NULL").fetchone()[0]
        sessions = {row[0] for row in conn.execute("SELECT id::text FROM sessions").fetchall()}
        stale = stale_running(url)
    by_index = {(s, k): (status, item) for s, k, status, item, _, _ in loops}
    errors_of = {(s, k): error for s, k, _, _, _, error in loops}
    completed = Counter(
        (s, tuple(params["candidates"])) for s, _, status, _, params, _ in loops if status == "completed"
    )
    lost = duplicates = false_errors = other_5xx = judgements_lost = 0
    lost_examples: list[dict[str, Any]] = []  # what was lost, to tell why (the first few)
    false_error_examples: list[dict[str, Any]] = []
    for request in tally.requests:
        if request.kind == "feedback" and request.answer is not None:
            judged = (request.session_id, request.answer["loop_index"], request.round)
            if decisions.get(judged) != request.body["decision"]:
                judgements_lost += 1
        answered = request.answer is not None
        if request.kind == "session" and answered and request.answer["id"] not in sessions:
            lost += 1
        if request.kind in ("loop", "feedback") and answered:
            stored = by_index.get((request.session_id, request.answer["loop_index"]))
            item = (request.answer.get("item") or {}).get("id")
            gone = stored is None or stored[0] == "failed"
            other = (
                request.answer["status"] == "completed"
                and stored is not None
                and tuple(stored) != ("completed", item)
            )
            lost += gone or other
            if (gone or other) and len(lost_examples) < 5:
                lost_examples.append({
                    "kind": request.kind,
                    "answer_status": request.answer.get("status"),
                    "stored": list(stored) if stored else None,
                    "error": errors_of.get((request.session_id, request.answer["loop_index"])),
                })  # fmt: skip
        if request.kind == "loop":
            duplicates += max(0, completed[(request.session_id, request.candidates)] - 1)
        errors = [a for a in request.attempts if a.status is not None and a.status >= 500]
        other_5xx += sum(1 for a in errors if not (a.status == 503 and a.retry_after))
        ran_twice = request.kind == "loop" and completed[(request.session_id, request.candidates)] > 1
        if said_error_for_its_own_work(request.attempts) and (
            (answered and request.attempts[-1].replayed) or ran_twice
        ):
            false_errors += 1  # its work was committed (replayed, or redone), yet an answer said error
            if len(false_error_examples) < 5:
                false_error_examples.append({
                    "kind": request.kind,
                    "statuses": [a.status for a in request.attempts],
                    "replayed": request.attempts[-1].replayed,
                    "ran_twice": ran_twice,
                })  # fmt: skip
    failed = [error or "" for _, _, status, _, _, error in loops if status == "failed"]
    return {
        "lost": lost,
        "duplicate_loops": duplicates,
        "false_errors": false_errors,
        "stale_running": stale,
        "other_5xx": other_5xx,
        # A stopped worker's loop failed instead of resumed (what recovery did before issue 42).
        "abandoned_resumable": sum(e.startswith("abandoned") for e in failed),
        "judgements_lost": judgements_lost,
        "lost_examples": lost_examples,
        "false_error_examples": false_error_examples,
        "loops_resumed": int(resumed),
        "loops_failed_not_resumable": sum(e.startswith("not resumable") for e in failed),
        "loops_completed": sum(completed.values()),
        "loops_failed_database_unavailable": sum(e.startswith("database unavailable") for e in failed),
        "loops_failed_abandoned": sum(e.startswith("abandoned") for e in failed),
        "loops_failed_other": sum(
            not e.startswith(("database unavailable", "abandoned", "not resumable")) for e in failed
        ),
    }


def said_error_for_its_own_work(attempts: list[Attempt]) -> bool:
    """Whether an attempt that may have carried the request's work answered 5xx: one before any
    409 "still running". After such a 409 the work belongs to a run already in flight (the
    first attempt's, or its resumption), so a later 503 (a retry that met the database down) says
    "retry" of work that had not committed yet, which is true."""
    for attempt in attempts:
        if attempt.status == 409:
            return False
        if attempt.status is not None and attempt.status >= 500:
            return True
    return False


OUTAGE_EFFECTS = {
    "runs_waited_out": "lost the database (",  # app/services/loops.py: went on in the same request
    "gate_down": "database down: requests wait",  # postgres/outage.py
    "background_commits_failed": "background checkpoint commit of thread",  # postgres/checkpoints.py
}
"""What the server log shows of an outage, by what each effect's line says."""


def outage_effects(server_log: str) -> dict[str, int]:
    """How often the server met an outage, by effect (a restart that strikes nothing shows none)."""
    return {name: server_log.count(marker) for name, marker in OUTAGE_EFFECTS.items()}


def judge_log(server_log: str) -> int:
    """Unhandled exceptions in the server log: its tracebacks, a chain of them counted once."""
    tracebacks = server_log.count("Traceback (most recent call last)")
    chained = server_log.count("The above exception was the direct cause of the following exception")
    chained += server_log.count("During handling of the above exception, another exception occurred")
    return max(tracebacks - chained, server_log.count("Exception in ASGI application"))
