"""Prometheus metrics of the service (process-wide: registered once at import).

With several worker processes each would count only its own requests, and a scrape would see
whichever worker answered. ``recloop serve`` therefore points ``PROMETHEUS_MULTIPROC_DIR`` at a
fresh directory before it starts the workers (prometheus_client's multiprocess mode: each
process writes its samples there, :func:`exposition` sums them). Counters and histograms only:
they add up across processes.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest, multiprocess

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"

REQUEST_LATENCY = Histogram(
    "recloop_http_request_duration_seconds",
    "HTTP request latency by route template, method and status.",
    ["route", "method", "status"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
)
LOOPS = Counter("recloop_loops_total", "Feedback loops finished, by stop reason.", ["stop_reason"])
LOOP_LATENCY = Histogram(
    "recloop_loop_duration_seconds",
    "Wall time of one loop run (up to its end or a human-judge pause).",
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
)
ROUNDS = Counter("recloop_rounds_total", "Loop rounds, by decision.", ["decision"])
LLM_CALLS = Counter("recloop_llm_calls_total", "LLM call attempts (retries included), by agent.", ["agent"])
LLM_TOKENS = Counter(
    "recloop_llm_tokens_total",
    "LLM tokens by agent and kind: prompt, completion, cached (prompt tokens served from the "
    "server's cache; part of prompt).",
    ["agent", "kind"],
)
LLM_ATTEMPT_LATENCY = Histogram(
    "recloop_llm_attempt_duration_seconds",
    "Wall time of one LLM call attempt, by agent and outcome (ok, failed).",
    ["agent", "outcome"],
    buckets=(0.25, 0.5, 1, 2, 4, 8, 15, 30, 60, 120),
)
FALLBACKS = Counter(
    "recloop_fallbacks_total",
    "Agent steps (rec, user) and commands (parser) answered by the offline fallback, by cause.",
    ["agent", "cause"],
)
BUSY_REJECTIONS = Counter("recloop_busy_rejections_total", "Requests refused with 409: the session was busy.")


def observe_rounds(rounds: list[dict]) -> None:
    for record in rounds:
        ROUNDS.labels(decision=record.get("decision", "unknown")).inc()
        for agent in ("rec", "user"):
            observe_llm(
                agent,
                record.get(f"{agent}_llm_usage") or {},
                record.get(f"{agent}_fallback", False),
                record.get(f"{agent}_fallback_cause"),
            )
        for attempt in record.get("llm_attempts") or []:
            outcome = "ok" if attempt.get("ok") else "failed"
            LLM_ATTEMPT_LATENCY.labels(agent=attempt["agent"], outcome=outcome).observe(attempt["seconds"])


def observe_llm(agent: str, usage: dict, fallback: bool, cause: str | None) -> None:
    """One agent step's (or steering command's) LLM usage and fallback."""
    if usage.get("calls"):
        LLM_CALLS.labels(agent=agent).inc(usage["calls"])
        for kind in ("prompt", "completion", "cached"):
            LLM_TOKENS.labels(agent=agent, kind=kind).inc(usage.get(f"{kind}_tokens", 0))
    if fallback:
        # The cause's kind ("length: ..." -> "length"); a constraint or offline fallback has none.
        FALLBACKS.labels(agent=agent, cause=(cause or "unknown").split(":", 1)[0]).inc()


def share_between_workers(directory: Path) -> dict[str, str]:
    """Before workers start (in the parent): an empty ``directory`` where their metrics add up, from
    zero, and the environment the workers need to write there (the caller hands it to them: the
    parent's environment is what spawned workers inherit)."""
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    return {MULTIPROC_ENV: str(directory)}


def exposition() -> bytes:
    """The Prometheus text of this process, or of all workers in multiprocess mode."""
    if os.environ.get(MULTIPROC_ENV):
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
        return generate_latest(registry)
    return generate_latest()
