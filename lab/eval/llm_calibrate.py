"""Fitting the LLM weights of one endpoint (``recloop calibrate --agents llm``), also run by the
LLM evaluations and ``bench.llm_loops`` when the configured endpoint has none yet.

The questions and the fit are :mod:`lab.calibration.llm`; this adds what a long job on a slow
endpoint needs: an estimate before starting, a progress bar, a call budget, and resuming (every
answer is appended to ``<weights file>.answers.jsonl`` as it arrives, so a rerun asks only what
is missing).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from graph.agents.llm_evidence import PROMPT_FORMS, LLMWeights, PromptForm
from graph.caches import LoopCaches
from graph.config import LoopConfig
from graph.context import build_deps
from graph.item_vectors import available_backends
from graph.llm_calibration import llm_weights_key, llm_weights_path, read_llm_weights
from lab.calibration.llm import (
    DEFAULT_ROWS,
    AnswerLog,
    BudgetExhausted,
    estimate,
    fit_llm_weights,
    val_rows,
    write_llm_weights,
)
from lab.calibration.offline import ensure_loop_calibration
from llm.client import endpoint_model
from recmodels.dataset import Dataset
from recmodels.progress import progress_bar
from recmodels.scorer import Scorer


@dataclass(frozen=True)
class CalibrationRun:
    weights: LLMWeights | None
    """None: the budget ran out before every question was answered (the answers are kept)."""
    key: dict[str, Any]
    path: Path | None
    reused: bool
    estimate: dict[str, Any]
    calls_made: int
    usage: dict[str, float]
    seconds: float

    def summary(self) -> dict[str, Any]:
        return {
            "complete": self.weights is not None,
            "reused": self.reused,
            "weights": self.weights.summary() if self.weights else None,
            "status": self.weights.status if self.weights else "incomplete: rerun to resume",
            "key": self.key,
            "path": str(self.path) if self.path else None,
            "estimate": self.estimate,
            "calls_made": self.calls_made,
            "usage": self.usage,
            "seconds": round(self.seconds, 2),
            "validation": (self.weights.provenance if self.weights else None),
        }


async def calibrate_llm(
    config: LoopConfig,
    catalog: Dataset,
    rec: Scorer,
    reward: Scorer,
    *,
    n_rows: int = DEFAULT_ROWS,
    budget_calls: int | None = None,
    forms: Sequence[PromptForm] = PROMPT_FORMS,
    items: bool = True,
    refit: bool = False,
    progress: bool = True,
    echo: Callable[[str], None] = print,
    caches: LoopCaches | None = None,
    concurrency: int = 1,
    items_rows: int | None = None,
) -> CalibrationRun:
    """The stored weights for this endpoint, or fit them now (and store them)."""
    started = time.monotonic()
    key = llm_weights_key(config, catalog, rec, reward, endpoint_model(config.llm))
    path = llm_weights_path(rec, reward, key)
    found = None if refit else read_llm_weights(path, key, caches)
    rows = val_rows(catalog, rec, reward, n_rows, config.n_candidates)
    calibration = await ensure_loop_calibration(
        config, catalog, rec, reward, available_backends(catalog), caches
    )
    deps = build_deps(config, catalog, rec, reward, "llm", calibration=calibration, caches=caches)
    planned = estimate(deps, rows, forms, items, items_rows)
    if found is not None:
        return CalibrationRun(found, key, path, True, planned, 0, {}, time.monotonic() - started)
    answers_path = path.with_suffix(".answers.jsonl") if path else None
    answers = AnswerLog.open(answers_path, budget_calls)
    echo(
        f"calibrating the LLM weights of {key['endpoint_model']} on {len(rows)} {catalog.name} "
        "validation rows: "
        f"about {planned['calls']} calls, {planned['prompt_tokens']} prompt tokens and at most "
        f"{planned['completion_tokens_max']} completion tokens (retries extra); "
        f"{len(answers.answers)} answers already cached"
        + (f"; budget {budget_calls} calls" if budget_calls is not None else "")
    )
    steps = len(rows) + (min(len(rows), items_rows or len(rows)) if items else 0)
    bar = progress_bar(total=steps, desc="calibrate llm", disable=not progress)
    timing = {"first": None}

    def step() -> None:
        bar.update(1)
        if timing["first"] is None and answers.calls:
            per_call = answers.usage["seconds"] / answers.calls
            timing["first"] = per_call
            left = per_call * max(0, planned["calls"] - answers.calls) / max(1, concurrency)
            echo(f"time: about {left:.0f} s more at {per_call:.1f} s per call, {concurrency} at once")

    weights: LLMWeights | None
    try:
        weights = await fit_llm_weights(
            deps,
            rows,
            answers,
            forms=forms,
            items=items,
            on_step=step,
            concurrency=concurrency,
            items_rows=items_rows,
        )
    except BudgetExhausted as exc:
        echo(f"stopped: {exc}; {len(answers.answers)} answers are kept, rerun to resume")
        weights = None
    finally:
        bar.close()
    if weights is not None:
        write_llm_weights(path, key, weights, caches)
    return CalibrationRun(
        weights, key, path, False, planned, answers.calls, dict(answers.usage), time.monotonic() - started
    )
