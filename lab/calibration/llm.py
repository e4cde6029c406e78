"""How much an LLM endpoint's answers count, learned on the validation split only.

The LLM agents weigh the LLM's answers against the offline evidence (:mod:`graph.agents.llm_evidence`);
this module fits those weights for one endpoint, on validation rows:

- every row gets the LLaRA candidates (the target plus 19 uniform negatives, fixed seed), the
  offline recommendation agent's first-round pick and evidence, and the LLM's own pick under each
  prompt form (:data:`graph.agents.llm_evidence.PROMPT_FORMS`);
- the user agent is asked about the offline pick and, when that is not the target, the target;
  the truth of a verdict is whether the proposal is the held-out next item;
- user simulation: the LLM judges the validation users' Table 5 lists (ratios 1:1, 1:3, 1:9).

Each weight is the value of a small grid with the best validation score (round-1 HR@1 of the
combined pick; HR@1 of the loop two rounds deep under the combined verdict; mean micro F1 of the
combined likes),
kept only if its paired 95 % bootstrap interval of the gain over weight 0 lies above zero
(otherwise 0: the LLM has not earned a say). The prompt form with the best combined HR@1 wins
(ties: the first form). Per form the fit also reports the first-attempt valid rate and the LLM's
own hit rate.

The questions are put to the agents in the contexts the loop's own nodes build
(:func:`graph.nodes.rec_context`, :func:`graph.nodes.user_context`), at a validation row's first
round. Every answer is appended to a JSONL file as it arrives, so an interrupted fit resumes where
it stopped and a budget (calls) stops it cleanly; the result is saved where a worker reads it
(:mod:`graph.llm_calibration`: the file and its key). :mod:`lab.eval.llm_calibrate` runs a fit.
"""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import torch

from graph import nodes
from graph.agents.base import JudgeItemsContext, RecContext, UserContext
from graph.agents.llm import LLMRecAgent, LLMUserAgent, combine_likes
from graph.agents.llm_evidence import PROMPT_FORMS, LLMWeights, PromptForm, combine, pick_margin
from graph.caches import LoopCaches
from graph.context import LoopDeps
from graph.llm_calibration import llm_weights_memo
from graph.usersim import RATIOS, cases_from_rows
from lab.calibration.offline import FIT_SEED, N_EVAL, write_keyed
from recmodels.candidates import sample_candidates
from recmodels.dataset import Dataset, Row
from recmodels.scorer import Scorer

T = TypeVar("T")

WEIGHT_GRID = (0.0, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 64.0)
DEFAULT_ROWS = 60
RESAMPLES = 1000
USERSIM_SEED = 0


def write_llm_weights(
    path: Path | None, key: dict[str, Any], weights: LLMWeights, caches: LoopCaches | None = None
) -> None:
    """Save the weights where a worker reads them (:func:`graph.llm_calibration.read_llm_weights`)."""
    if caches is not None:
        with caches.lock:
            caches.calibrations[llm_weights_memo(key)] = weights  # type: ignore[assignment]
    if path is None:
        return
    write_keyed(path, key, "weights", weights.to_json())


# --------------------------------------------------------------------------- the answers


class BudgetExhausted(Exception):
    """The call budget ran out; what was answered so far is on disk."""


@dataclass
class AnswerLog:
    """Every LLM answer of the fit, by a key naming the row and the question; appended to a JSONL
    file as it arrives (None: in memory only)."""

    path: Path | None
    answers: dict[str, dict[str, Any]] = field(default_factory=dict)
    budget_calls: int | None = None
    calls: int = 0
    """Calls made by this process (cached answers cost none)."""
    usage: dict[str, float] = field(
        default_factory=lambda: {"prompt_tokens": 0, "completion_tokens": 0, "seconds": 0.0}
    )

    @classmethod
    def open(cls, path: Path | None, budget_calls: int | None = None) -> AnswerLog:
        log_ = cls(path, budget_calls=budget_calls)
        if path is not None and path.is_file():
            for line in path.read_text().splitlines():
                try:
                    entry = json.loads(line)
                    log_.answers[entry["key"]] = entry["answer"]
                except (ValueError, KeyError, TypeError):
                    continue  # a line cut by an interruption
        return log_

    async def get(self, key: str, ask: Callable[[], Any]) -> dict[str, Any]:
        if key in self.answers:
            return self.answers[key]
        if self.budget_calls is not None and self.calls >= self.budget_calls:
            raise BudgetExhausted(f"the budget of {self.budget_calls} calls is spent")
        answer = await ask()
        usage = answer.pop("usage", {})
        self.calls += int(usage.get("calls", 1))
        for name in self.usage:
            self.usage[name] += usage.get(name, 0)
        self.answers[key] = answer
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a") as sink:
                sink.write(json.dumps({"key": key, "answer": answer}) + "\n")
        return answer


def _outcome_record(outcome: Any, value: Any) -> dict[str, Any]:
    return {
        "value": value,
        "first_ok": bool(outcome.attempts and outcome.attempts[0]["ok"]),
        "usage": dict(outcome.usage),
    }


# --------------------------------------------------------------------------- fitting


async def gather_limited(jobs: Sequence[Callable[[], Awaitable[T]]], concurrency: int) -> list[T]:
    """The jobs' results in order, at most ``concurrency`` running at once (1: one after the
    other, in order); the first failure cancels the rest and propagates as is."""
    if concurrency <= 1:
        return [await job() for job in jobs]
    slots = asyncio.Semaphore(concurrency)

    async def one(job: Callable[[], Awaitable[T]]) -> T:
        async with slots:
            return await job()

    tasks = [asyncio.ensure_future(one(job)) for job in jobs]
    try:
        return list(await asyncio.gather(*tasks))
    finally:
        for task in tasks:
            task.cancel()


@dataclass(frozen=True)
class ValRow:
    row: Row
    candidates: list[int]
    rec_scores: list[float]
    reward_scores: list[float]


def val_rows(catalog: Dataset, rec: Scorer, reward: Scorer, n_rows: int, n_candidates: int) -> list[ValRow]:
    rows, _dropped = catalog.eval_rows("val")
    out = []
    for index, row in enumerate(rows[:n_rows]):
        rng = random.Random(FIT_SEED + index)
        candidates = sample_candidates(
            row.history, row.next, catalog.n_items, rng, n=min(n_candidates, catalog.n_items)
        )
        rec_scores = rec.score(list(row.history), candidates)
        reward_scores = rec_scores if reward is rec else reward.score(list(row.history), candidates)
        out.append(ValRow(row, candidates, rec_scores, reward_scores))
    return out


def estimate(
    deps: LoopDeps,
    rows: Sequence[ValRow],
    forms: Sequence[PromptForm],
    items: bool,
    items_rows: int | None = None,
) -> dict[str, Any]:
    """Calls and prompt tokens of a fit from the rendered prompts of its first row (upper bound
    on completion tokens: the output caps); retries come on top."""
    if not rows:
        return {"calls": 0, "prompt_tokens": 0, "completion_tokens_max": 0}
    rec_agent, user_agent = deps.rec_agent, deps.user_agent
    assert isinstance(rec_agent, LLMRecAgent) and isinstance(user_agent, LLMUserAgent)
    ctx = _rec_context(deps, rows[0])
    words = sum(len(str(m.content).split()) for m in rec_agent.messages(ctx))
    rec_tokens = int(words * 1.5)  # ~1.5 BPE tokens per word of these prompts
    per_row_calls = len(forms) + 1.5
    llm = deps.config.llm
    calls = int(len(rows) * per_row_calls)
    completion = int(len(rows) * (len(forms) * llm.max_tokens_rec + 1.5 * llm.max_tokens_user))
    if items:
        n_items = min(len(rows), items_rows or len(rows))
        calls += n_items * 3
        completion += n_items * 3 * llm.max_tokens_items
    return {"calls": calls, "prompt_tokens": int(calls * rec_tokens), "completion_tokens_max": completion}


def _first_round(v: ValRow) -> dict[str, Any]:
    """A validation row as the loop's state at its first round: the candidates scored, nothing
    rejected yet, no memory."""
    return {
        "history": list(v.row.history),
        "candidates": list(v.candidates),
        "rec_scores": list(v.rec_scores),
        "reward_scores": list(v.reward_scores),
        "prior_item": nodes.rec_prior_item(v.candidates, v.rec_scores),
    }


# The fit asks without a loop's time budget (llm_budget_s None): a budget would cut the answers
# the weights are fitted on.


def _rec_context(deps: LoopDeps, v: ValRow) -> RecContext:
    return replace(nodes.rec_context(deps, _first_round(v), rounds=[]), llm_budget_s=None)


def _user_context(deps: LoopDeps, v: ValRow, item: int, rec_reason: str) -> UserContext:
    state = _first_round(v) | {
        "proposal": {"item": item, "reason": rec_reason, "usage": {}},
        "verdict": nodes.reward_verdict(v.candidates, v.reward_scores, item),
    }
    return replace(nodes.user_context(deps, state), llm_budget_s=None)


def _paired_gain(hits: torch.Tensor, base: torch.Tensor) -> tuple[float, float, float]:
    """Mean of (hits - base) per unit and its 95 % bootstrap interval (fixed seed)."""
    diff = (hits - base).double()
    n = len(diff)
    if n == 0:
        return 0.0, 0.0, 0.0
    generator = torch.Generator().manual_seed(FIT_SEED)
    picks = torch.randint(0, n, (RESAMPLES, n), generator=generator)
    means = diff[picks].mean(dim=1)
    low, high = torch.quantile(means, torch.tensor([0.025, 0.975], dtype=torch.float64)).tolist()
    return float(diff.mean()), low, high


def choose_weight(
    score_at: Callable[[float], torch.Tensor], grid: Sequence[float] = WEIGHT_GRID
) -> tuple[float, dict[str, Any]]:
    """The grid weight with the best mean validation score per unit (ties: the smaller), kept only
    if its paired gain over weight 0 lies above zero at 95 %; and the curve behind it."""
    base = score_at(0.0)
    curve = {f"{w:g}": float(score_at(w).double().mean()) for w in grid}
    best = max(grid, key=lambda w: (round(curve[f"{w:g}"], 12), -w))
    gain = _paired_gain(score_at(best), base)
    chosen = best if best > 0 and gain[1] > 0 else 0.0
    return chosen, {
        "curve": curve,
        "best": best,
        "gain_over_0": {"mean": gain[0], "low": gain[1], "high": gain[2]},
    }


async def fit_llm_weights(
    deps: LoopDeps,
    rows: Sequence[ValRow],
    answers: AnswerLog,
    *,
    forms: Sequence[PromptForm] = PROMPT_FORMS,
    items: bool = True,
    on_step: Callable[[], None] | None = None,
    concurrency: int = 1,
    items_rows: int | None = None,
) -> LLMWeights:
    """Ask the endpoint every validation question (cached in ``answers``; ``concurrency`` rows at
    a time, for a server with as many slots) and fit the weights; raises :class:`BudgetExhausted`
    when the call budget runs out first (the answers stay). The fit does not depend on the
    concurrency: every answer is keyed by its row and question. ``items_rows``: fit the
    user-simulation weight on the first that many rows only (its 3 long lists per row are most of
    a fit's tokens)."""
    rec_agent, user_agent = deps.rec_agent, deps.user_agent
    assert isinstance(rec_agent, LLMRecAgent) and isinstance(user_agent, LLMUserAgent)
    offline_rec, offline_user = rec_agent.fallback, user_agent.fallback
    step = on_step or (lambda: None)

    async def ask_row(r: int, v: ValRow) -> tuple[dict[str, Any], dict[str, Any], list[Any]]:
        """One row's questions: its offline pick and evidence, the LLM's pick per form, and the
        user agent's verdicts on the offline pick and on the target."""
        ctx = _rec_context(deps, v)
        offline = await offline_rec.propose(ctx)
        picks: dict[str, dict[str, Any]] = {}
        for form in forms:

            async def ask_rec(ctx: RecContext = ctx, form: PromptForm = form) -> dict[str, Any]:
                rec_agent.weights = LLMWeights(prompt_form=form)  # read before ask's first await
                outcome = await rec_agent.ask(ctx)
                pick = int(outcome.answer.item_id) if outcome.answer is not None else None
                return _outcome_record(outcome, pick)

            picks[form] = await answers.get(f"rec/{form}/{r}", ask_rec)
        judged_row = []
        for item in dict.fromkeys([offline["item"], v.row.next]):
            uctx = _user_context(deps, v, item, offline["reason"])
            judged = await offline_user.judge(uctx)

            async def ask_user(uctx: UserContext = uctx) -> dict[str, Any]:
                outcome = await user_agent.ask(uctx)
                return _outcome_record(
                    outcome, outcome.answer.decision if outcome.answer is not None else None
                )

            got = await answers.get(f"user/{r}/{item}", ask_user)
            judged_row.append(
                (r, judged["decision"], user_agent.verdict_margin(uctx), got["value"], item == v.row.next)
            )
        step()
        return offline, picks, judged_row

    asked = await gather_limited([partial(ask_row, r, v) for r, v in enumerate(rows)], concurrency)
    per_form: dict[str, dict[str, list[Any]]] = {f: {"pick": [], "first_ok": []} for f in forms}
    offline_items, evidences, targets = [], [], []
    verdicts: list[tuple[int, str, float, str | None, bool]] = []  # row, offline, margin, llm, truth
    llm_verdicts: list[dict[int, str | None]] = []  # per row: the LLM's verdict on each item asked about
    for v, (offline, picks, judged_row) in zip(rows, asked, strict=True):
        asked_about = dict.fromkeys([offline["item"], v.row.next])
        llm_verdicts.append({item: llm for item, (*_, llm, _) in zip(asked_about, judged_row, strict=True)})
        offline_items.append(offline["item"])
        evidences.append(offline_rec.evidence(_rec_context(deps, v)))
        targets.append(v.row.next)
        for form in forms:
            per_form[form]["pick"].append(picks[form]["value"])
            per_form[form]["first_ok"].append(picks[form]["first_ok"])
        verdicts += judged_row
    report: dict[str, Any] = {"n_rows": len(rows), "forms": {}}
    best_form: tuple[float, PromptForm, float] | None = None
    target_t = torch.tensor(targets)
    for form in forms:
        picks = per_form[form]["pick"]

        def hits_at(w: float, picks: list[int | None] = picks) -> torch.Tensor:
            chosen = [
                _combined_pick(o, e, p, w) for p, o, e in zip(picks, offline_items, evidences, strict=True)
            ]
            return (torch.tensor(chosen) == target_t).double()

        weight, curve = choose_weight(hits_at)
        answered = [p for p in picks if p is not None]
        report["forms"][form] = {
            "rec_weight": weight,
            "val_hr1": float(hits_at(weight).mean()),
            "val_hr1_offline": float(hits_at(0.0).mean()),
            "first_attempt_valid_rate": sum(per_form[form]["first_ok"]) / max(1, len(picks)),
            "answered_rate": len(answered) / max(1, len(picks)),
            "llm_hit_rate": sum(p == t for p, t in zip(picks, targets, strict=True)) / max(1, len(picks)),
            **curve,
        }
        score = report["forms"][form]["val_hr1"]
        if best_form is None or score > best_form[0] + 1e-12:
            best_form = (score, form, weight)
    assert best_form is not None
    _, form, rec_weight = best_form
    cases = [
        await _loop_case(deps, v, offline_item, evidence, per_form[form]["pick"][r], rec_weight, said)
        for r, (v, offline_item, evidence, said) in enumerate(
            zip(rows, offline_items, evidences, llm_verdicts, strict=True)
        )
    ]
    user_weight, user_report = _fit_user(verdicts, cases)
    report["user"] = user_report
    items_weight = 0.0
    if items:
        items_weight, report["items"] = await _fit_items(
            deps, rows[:items_rows] if items_rows else rows, answers, step, concurrency
        )
    return LLMWeights(
        rec_weight=best_form[2],
        user_weight=user_weight,
        items_weight=items_weight,
        prompt_form=best_form[1],
        provenance=report | {"split": "val", "calls_made": answers.calls},
    )


def _combined_pick(offline: int, evidence: dict[int, float], llm: int | None, weight: float) -> int:
    """The recommendation the LLM agent makes from the offline pick and the LLM's (None: no answer)."""
    if llm is None or not combine(pick_margin(evidence, offline, llm), weight, llm == offline).llm_wins:
        return offline
    return llm


@dataclass(frozen=True)
class CombinedVerdict:
    """What one verdict is decided on: the offline decision, the reward model's margin from its
    accept boundary, and the LLM's answer (None: not asked in the fit, or no valid answer)."""

    offline: str
    margin: float
    llm: str | None

    def at(self, weight: float) -> str:
        if self.llm is None or not combine(self.margin, weight, self.llm == self.offline).llm_wins:
            return self.offline
        return self.llm


@dataclass(frozen=True)
class LoopCase:
    """One validation row's loop, two rounds deep, as the user weight would play it.

    Round 1 proposes the combined pick (at the fitted rec weight) and the combined verdict judges it.
    A rejection leads to round 2, whose pick depends on whether the rejection named the items the
    reward model prefers (the offline verdict was a rejection) or not (the LLM's rejection won). A
    loop that reaches round 2 with another item than the target counts as a miss: the continuation
    past round 2 is not modelled, which undervalues rejections and so errs toward weight 0.
    """

    target: int
    first: int
    first_verdict: CombinedVerdict
    second: dict[bool, int]
    """The round-2 pick, by whether the rejection named preferred items."""
    second_verdict: dict[bool, CombinedVerdict]
    """The verdict on the target in round 2, by the same key (where the round-2 pick is the target)."""

    def hit(self, weight: float) -> bool:
        if self.first_verdict.at(weight) == "accept":
            return self.first == self.target
        named = self.first_verdict.offline == "reject"
        verdict = self.second_verdict.get(named)
        return self.second[named] == self.target and verdict is not None and verdict.at(weight) == "accept"


async def _loop_case(
    deps: LoopDeps,
    v: ValRow,
    offline_item: int,
    evidence: dict[int, float],
    llm_pick: int | None,
    rec_weight: float,
    llm_said: dict[int, str | None],
) -> LoopCase:
    """The offline parts of :class:`LoopCase` for one row (no LLM call: the LLM's answers are the
    recorded ones; its round-2 pick is taken to be its round-1 pick unless that was turned down)."""
    rec_agent, user_agent = deps.rec_agent, deps.user_agent
    assert isinstance(rec_agent, LLMRecAgent) and isinstance(user_agent, LLMUserAgent)
    offline_rec, offline_user = rec_agent.fallback, user_agent.fallback

    first = _combined_pick(offline_item, evidence, llm_pick, rec_weight)
    uctx = _user_context(deps, v, first, "")
    judged = await offline_user.judge(uctx)
    first_verdict = CombinedVerdict(judged["decision"], user_agent.verdict_margin(uctx), llm_said.get(first))
    ctx = _rec_context(deps, v)
    target_ctx = _user_context(deps, v, v.row.next, "")
    second: dict[bool, int] = {}
    second_verdict: dict[bool, CombinedVerdict] = {}
    for named in (True, False):
        preferred = list(judged["preferred_items"]) if named else []
        ctx2 = replace(ctx, rejected_this_loop=[first], last_preferred=preferred, round=2)
        proposal = await offline_rec.propose(ctx2)
        later = llm_pick if llm_pick != first else None
        second[named] = _combined_pick(proposal["item"], offline_rec.evidence(ctx2), later, rec_weight)
        if second[named] == v.row.next:
            uctx2 = replace(target_ctx, rejected_this_loop=[first], asked_for_this_loop=preferred, round=2)
            decided = await offline_user.judge(uctx2)
            second_verdict[named] = CombinedVerdict(
                decided["decision"], user_agent.verdict_margin(target_ctx), llm_said.get(v.row.next)
            )
    return LoopCase(v.row.next, first, first_verdict, second, second_verdict)


def _fit_user(
    verdicts: Sequence[tuple[int, str, float, str | None, bool]], cases: Sequence[LoopCase]
) -> tuple[float, dict[str, Any]]:
    """The weight for the best HR@1 of the loop (:class:`LoopCase`), per validation row. The
    verdicts' balanced accuracy is reported beside it: a weight can judge more verdicts right and
    still lose hits (a rejected target costs a hit; a rejected miss gains one only when the next
    round finds the target), which is what a fit on accuracy alone did on LastFM."""
    n_rows = len(cases)
    truth = torch.tensor([t for *_, t in verdicts])
    rows = torch.tensor([r for r, *_ in verdicts])
    n_pos, n_neg = max(1, int(truth.sum())), max(1, int((~truth).sum()))

    def balanced_at(w: float) -> torch.Tensor:
        accept = torch.tensor(
            [CombinedVerdict(off, m, llm).at(w) == "accept" for _, off, m, llm, _ in verdicts]
        )
        right = (accept == truth).double()
        unit = torch.where(truth, right / n_pos, right / n_neg) / 2  # sums to the balanced accuracy
        return torch.zeros(n_rows, dtype=torch.float64).index_add_(0, rows, unit) * n_rows

    def hits_at(w: float) -> torch.Tensor:
        return torch.tensor([float(case.hit(w)) for case in cases], dtype=torch.float64)

    weight, curve = choose_weight(hits_at)
    answered = [llm for *_, llm, _ in verdicts if llm is not None]
    right = sum((llm == "accept") == t for _, _, _, llm, t in verdicts if llm is not None)
    report = {
        "user_weight": weight,
        "objective": "loop_hr1",
        "n_verdicts": len(verdicts),
        "answered_rate": len(answered) / max(1, len(verdicts)),
        "llm_accuracy": right / max(1, len(verdicts)),
        "val_loop_hr1": float(hits_at(weight).mean()),
        "val_loop_hr1_offline": float(hits_at(0.0).mean()),
        "val_balanced_accuracy": float(balanced_at(weight).mean()),
        "val_balanced_accuracy_offline": float(balanced_at(0.0).mean()),
        **curve,
    }
    return weight, report


async def _fit_items(
    deps: LoopDeps,
    rows: Sequence[ValRow],
    answers: AnswerLog,
    step: Callable[[], None],
    concurrency: int = 1,
) -> tuple[float, dict[str, Any]]:
    """User simulation: the weight of the LLM's likes for the best mean per-user F1 over the ratios,
    on the validation users' Table 5 lists (Agent setting: empty memory)."""
    user_agent = deps.user_agent
    assert isinstance(user_agent, LLMUserAgent)
    offline_user = user_agent.fallback
    cases = cases_from_rows(
        [v.row for v in rows], deps.catalog.n_items, RATIOS, USERSIM_SEED, N_EVAL, deps.config.n_candidates
    )

    async def ask_case(c: int, case: Any) -> list[tuple[Any, ...]]:
        out = []
        for ratio in RATIOS:
            listed = case.eval_lists[ratio]
            items = list(listed.items)
            history = list(case.init_history)
            scores = deps.reward_scorer.score(history, items)
            ctx = JudgeItemsContext(
                history, items, scores, reward_log_probs=deps.reward_scorer.log_probs(history, items)
            )

            async def ask_items(ctx: JudgeItemsContext = ctx) -> dict[str, Any]:
                verdict = await user_agent.ask_items(ctx)
                first_ok = bool(verdict.attempts and verdict.attempts[0]["ok"])
                usage = dict(verdict.usage)
                return {
                    "value": None if verdict.fallback else verdict.likes,
                    "first_ok": first_ok,
                    "usage": usage,
                }

            got = await answers.get(f"items/{case.case_id}/{ratio}", ask_items)
            offline = offline_user.judge_items(ctx)
            llm = got["value"] if got["value"] is not None else offline
            evidence, threshold = offline_user.items_evidence(ctx)
            out.append((c, ratio, offline, llm, evidence, threshold, list(listed.labels), got))
        step()
        return out

    per_case = await gather_limited([partial(ask_case, c, case) for c, case in enumerate(cases)], concurrency)
    judged = [entry[:-1] for found in per_case for entry in found]
    asked = [entry[-1] for found in per_case for entry in found]
    n_cases = len(cases)

    def score_at(w: float) -> torch.Tensor:
        """Per case: its F1, averaged over the ratios (per-user F1s: the bootstrap resamples users)."""
        per_case = torch.zeros(n_cases, dtype=torch.float64)
        for c, _ratio, offline, llm, evidence, threshold, labels in judged:
            likes = combine_likes(offline, llm, evidence, threshold, w)
            tp = sum(like and label for like, label in zip(likes, labels, strict=True))
            errors = sum(like != label for like, label in zip(likes, labels, strict=True))
            per_case[c] += (2 * tp / (2 * tp + errors) if tp else 0.0) / len(RATIOS)
        return per_case

    weight, curve = choose_weight(score_at)
    report = {
        "items_weight": weight,
        "n_cases": n_cases,
        "val_mean_f1": float(score_at(weight).mean()),
        "val_mean_f1_offline": float(score_at(0.0).mean()),
        "first_attempt_valid_rate": sum(bool(a["first_ok"]) for a in asked) / max(1, len(asked)),
        "answered_rate": sum(a["value"] is not None for a in asked) / max(1, len(asked)),
        "llm_item_accuracy": _item_accuracy(judged),
        **curve,
    }
    return weight, report


def _item_accuracy(judged: Sequence[tuple[Any, ...]]) -> float:
    """Share of listed items whose like/dislike the LLM got right (offline where it did not answer)."""
    pairs = [
        (like, label) for *_, llm, _e, _t, labels in judged for like, label in zip(llm, labels, strict=True)
    ]
    return sum(like == label for like, label in pairs) / max(1, len(pairs))
