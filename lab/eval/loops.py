"""Recommendation-side experiments share one unit of work: one feedback loop on one candidate row.

Table 4, rounds (Fig. 3), ablation (Table 6), position (Fig. 5) and bias only differ in which
loops they run (rec model, candidate source, round limit, candidate order, ablation variant)
and how they aggregate. Each loop is one resumable row of ``rows.jsonl``.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from app.settings import Settings
from graph.agents.llm_evidence import LLMWeights
from graph.caches import LoopCaches
from graph.config import AgentMode
from lab.eval.adapters import ModelBank, baseline_picks, loop_runner, make_loop_deps, model_picks, run_flow
from lab.eval.common import CandidateRow, RunDir, Unit, candidate_sets, run_units
from recmodels.dataset import Dataset

Arrangement = Literal["as_sampled", "first", "random", "last"]
ARRANGEMENTS_FOR_POSITION: tuple[Arrangement, ...] = ("first", "random", "last")


@dataclass(frozen=True)
class Variant:
    """An agent configuration: ``knobs`` go to ``graph.deps.make_deps`` (ablation switches)."""

    name: str
    knobs: Mapping[str, Any] = field(default_factory=dict)


FLOW = Variant("flow")


@dataclass
class EvalContext:
    """Everything an experiment needs, built once by the command and passed down."""

    settings: Settings
    dataset: Dataset
    models: ModelBank
    run: RunDir
    agents: AgentMode = "offline"
    concurrency: int = 1
    progress: bool = True
    llm_weights: str = "fitted"
    """With LLM agents: "fitted" (the endpoint's weights, fitted first when missing) or "obey"."""
    runner: Any = field(default_factory=loop_runner, repr=False)
    """The loop graph, compiled once for the whole evaluation (``graph.runner.LoopRunner``)."""
    aio: asyncio.Runner = field(default_factory=asyncio.Runner, repr=False)
    """The evaluation's one event loop: every batch of loops runs on it (LLM clients keep their
    connections across batches). Close it when done: ``with ctx.aio: ...``."""
    caches: LoopCaches = field(default_factory=LoopCaches, repr=False)
    """What the evaluation's loops compute once (calibrations, text item vectors)."""
    _deps: dict[tuple[str, str], Any] = field(default_factory=dict, repr=False)

    def deps(self, rec_model: str, variant: Variant) -> Any:
        """Loop dependencies per (rec model, variant), built once (the graph's context for their loops).

        Synchronous, for use between batches: it may fit the calibration, which runs loops itself.
        """
        key = (rec_model, variant.name)
        if key not in self._deps:
            knobs = dict(variant.knobs)
            if self.agents == "llm" and self.llm_weights == "obey":
                knobs.setdefault("llm_weights", LLMWeights.obey())
            self._deps[key] = self.aio.run(
                make_loop_deps(
                    self.settings,
                    self.dataset,
                    self.models.get(self.dataset, rec_model),
                    self.models.get(self.dataset, self.settings.reward_model),
                    self.agents,
                    self.caches,
                    **knobs,
                )
            )
        return self._deps[key]


@dataclass(frozen=True)
class LoopJob:
    rec_model: str
    source: str
    row: CandidateRow
    max_rounds: int
    arrangement: Arrangement = "as_sampled"
    variant: Variant = FLOW

    @property
    def key(self) -> str:
        return "/".join(
            (
                self.variant.name,
                self.rec_model,
                self.source,
                str(self.row.row_id),
                f"r{self.max_rounds}",
                self.arrangement,
            )
        )


def arrange(row: CandidateRow, arrangement: Arrangement, salt: str) -> tuple[int, ...]:
    """The candidate order shown to the agents, with the target first, last, or at a random slot."""
    if arrangement == "as_sampled":
        return row.candidates
    others = [c for c in row.candidates if c != row.target]
    if arrangement == "first":
        return (row.target, *others)
    if arrangement == "last":
        return (*others, row.target)
    slot = random.Random(f"{salt}/{row.row_id}").randrange(len(row.candidates))
    return (*others[:slot], row.target, *others[slot:])


def eval_candidate_rows(
    dataset: Dataset, seeds: Sequence[int], candidates_file: Any, max_rows: int | None, n_candidates: int
) -> dict[str, list[CandidateRow]]:
    """Candidate rows per source for the test split (len_seq >= 3, as upstream), first ``max_rows``."""
    rows, _dropped = dataset.eval_rows("test")
    sets = candidate_sets(dataset, rows, seeds, candidates_file, n_candidates)
    return {source: rows_[:max_rows] if max_rows else rows_ for source, rows_ in sets.items()}


def flow_jobs(
    rec_models: Sequence[str], sources: Mapping[str, Sequence[CandidateRow]], max_rounds: int
) -> list[LoopJob]:
    """One full-loop job per rec model x candidate source x row (Table 4 and the bias study)."""
    return [
        LoopJob(rec_model, source, row, max_rounds)
        for rec_model in rec_models
        for source, rows in sources.items()
        for row in rows
    ]


def run_loop_jobs(ctx: EvalContext, jobs: Sequence[LoopJob], desc: str) -> list[dict[str, Any]]:
    """Run (or resume) the loops; each record has the target, the model's, agent's and FLOW's picks,
    and the baselines' (reward model alone, plain and trust-weighted ensembles of both models)."""
    picks = _model_picks_by_job(ctx, jobs)
    by_key = {job.key: job for job in jobs}
    deps = {
        (job.rec_model, job.variant.name): ctx.deps(job.rec_model, job.variant)
        for job in jobs
        if job.key not in ctx.run.rows
    }

    async def work(unit: Unit) -> dict[str, Any]:
        job = by_key[unit.key]
        candidates = arrange(job.row, job.arrangement, job.source)
        outcome = await run_flow(
            ctx.runner, deps[job.rec_model, job.variant.name], job.row.history, candidates, job.max_rounds
        )
        return {
            "variant": job.variant.name,
            "rec_model": job.rec_model,
            "source": job.source,
            "row_id": job.row.row_id,
            "max_rounds": job.max_rounds,
            "arrangement": job.arrangement,
            "target": job.row.target,
            **picks[job.key],
            "agent_pick": outcome.first_item,
            "flow_pick": outcome.final_item,
            "n_rounds": outcome.n_rounds,
            "stop_reason": outcome.stop_reason,
            "usage": outcome.usage,
        }

    units = [Unit(job.key, {}) for job in jobs]
    return run_units(
        units,
        work,
        ctx.run.rows,
        concurrency=_concurrency(ctx),
        desc=desc,
        progress=ctx.progress,
        aio=ctx.aio,
    )


def _concurrency(ctx: EvalContext) -> int:
    # Offline loops are CPU-bound on a shared box: threads would only contend for the GIL.
    return ctx.concurrency if ctx.agents == "llm" else 1


def _model_picks_by_job(ctx: EvalContext, jobs: Sequence[LoopJob]) -> dict[str, dict[str, int]]:
    """Per job: the rec model's own pick (``model_pick``) and the baselines' (``reward_pick``,
    ``ensemble_pick``, ``weighted_pick``), scored in batches per rec model (order-independent)."""
    picks: dict[str, dict[str, int]] = {}
    reward = ctx.models.get(ctx.dataset, ctx.settings.reward_model)
    for rec_model in sorted({job.rec_model for job in jobs}):
        mine = [job for job in jobs if job.rec_model == rec_model and job.key not in ctx.run.rows]
        if not mine:
            continue
        scorer = ctx.models.get(ctx.dataset, rec_model)
        histories, candidates = [j.row.history for j in mine], [j.row.candidates for j in mine]
        found = model_picks(scorer, histories, candidates)
        others = baseline_picks(ctx.deps(rec_model, FLOW), scorer, reward, histories, candidates)
        for job, pick, more in zip(mine, found, others, strict=True):
            picks[job.key] = {"model_pick": pick, **more}
    return picks


def hr(records: Sequence[Mapping[str, Any]], pick: str) -> float:
    """HR@1 of one pick field (``model_pick``, ``agent_pick``, ``flow_pick``) over records."""
    return sum(r[pick] == r["target"] for r in records) / len(records) if records else 0.0
