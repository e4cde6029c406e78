"""What the offline agents learn on the validation split, and where it is kept.

The offline agents weigh evidence (graph/agents/evidence.py); how much each piece counts is
learned here, on the **validation** split only, for one (dataset, rec model, reward model):

- ``rec_temperature`` / ``reward_temperature``: each model's scores become calibrated chances over
  the candidates, softmax(score / T), T maximising the validation log-likelihood of the true next
  item among 20 LLaRA candidates.
- ``rec_similarity`` / ``rec_history_weight``: the recommendation agent's belief is its model's
  calibrated log-probability plus this weight times an item's similarity to the user's recent
  history (recency-weighted; item vectors of the chosen backend, or none).
- ``trust``: how much the recommendation agent trusts the user agent's feedback, the weight of the
  reward model's calibrated log-probability against its own belief. 0 = the prior always stands,
  1 = the feedback always wins.

  Backend, weight and trust are chosen together for the best exact expected validation HR@1-of-20
  of the combination (every candidate draw of the 19 negatives, no sampling noise; every trust of
  the grid counted in one pass, :mod:`lab.calibration.ranking`).
- User simulation (``judge_items``): one verdict threshold on the user agent's evidence for an
  item (the reward model's log-probability over the catalog, plus a weight times its similarity to
  the history), and the weights of its loop memory (similarity to what it liked, and to what it
  turned down, in the loop), chosen on validation users built by the Table 5 protocol: threshold
  and history weight for the best mean micro F1 over the ratios 1:1, 1:3, 1:9 with an empty
  memory, then the memory weights for the best mean F1 with the memory each validation loop left,
  the threshold fixed, kept only if their gain's 95 % bootstrap interval over validation users lies
  above zero (otherwise the memory does not count). One threshold for all ratios.

Every part reads each validation row's scores over the whole catalog. On a large catalog the fit
takes a fixed, seeded sample of the validation rows, at most ``FIT_CELLS`` rows x items
(:func:`fit_rows`: every row of the paper's datasets and all 955 of a 10^5-item, 10^6-interaction
log; 134 of 9,551 at 10^6 items), so its memory and time stay bounded: a [rows, catalog]
tensor of float32 is then at most 512 MB. The MiniLM text backend is offered only up to
:data:`recmodels.text.TEXT_VECTORS_MAX_ITEMS` items (:func:`graph.item_vectors.available_backends`).

The result is saved beside the rec model's artifact, where a worker reads it
(:mod:`graph.calibration`: the file, its key, how the parameters combine scores):
:func:`ensure_loop_calibration` fits it when it is missing or stale, for `recloop prepare`,
`recloop calibrate --agents offline`, `recloop serve` (before any worker starts), ``recloop simulate``
and the evaluation (through :func:`lab.calibration.deps.calibrated_deps`).
"""

from __future__ import annotations

import json
import logging
import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import torch

from graph.agents.evidence import ItemVectors, LoopCalibration, MemoryView, VerdictFeatures
from graph.caches import LoopCaches
from graph.calibration import (
    agent_belief,
    calibration_key,
    calibration_path,
    memo_key,
    stored_loop_calibration,
)
from graph.config import LoopConfig
from graph.context import build_deps
from graph.item_vectors import load_vectors
from graph.runner import LoopRunner
from graph.usersim import RATIOS, UserSimCase, cases_from_rows
from lab.calibration.ranking import outranking_counts
from recmodels.candidates import negative_pool_size, sample_candidates
from recmodels.dataset import Dataset, Row
from recmodels.evaluation import expected_hr_at_1_of, ranking_stats_of_counts, rows_per_block
from recmodels.progress import progress_bar
from recmodels.scorer import Scorer

log = logging.getLogger(__name__)

TEMPERATURES = tuple(round(0.02 * 1.2**i, 5) for i in range(45))  # 0.02 .. ~60, geometric
TRUST_GRID = tuple(i / 20 for i in range(21))
REC_HISTORY_WEIGHTS = (0.0, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0)
USER_HISTORY_WEIGHTS = (0.0, 0.5, 1.0, 2.0, 4.0, 8.0)
MEMORY_WEIGHTS = (0.0, 1.0, 2.0, 4.0, 8.0)
FIT_DRAWS = 20  # candidate draws per validation row for the temperature fits
FIT_SEED = 20_241_027  # fixed: the calibration is deterministic
USERSIM_SEEDS = (0, 1)  # validation user-simulation cases per seed (candidates and negatives)
N_EVAL = 20
THRESHOLD_POINTS = 500  # verdict thresholds tried (quantiles of the validation evidence)
MEMORY_RESAMPLES = 1000  # bootstrap resamples of validation users behind the memory weights
USERSIM_MAX_ROWS = 2000
"""Validation rows the user simulation reads at most (above it a seeded sample): two loops each
(~215 loops/s at 10^4 items, slower on larger catalogs), and their pooled verdicts, grow with the
log, not the catalog. Steam's validation split, the paper's largest, has 1,194 rows."""
FIT_CELLS = 2**27
"""Validation rows x catalog items the fit reads at most (:func:`fit_rows`): a [rows, catalog]
float32 tensor is 512 MB; the fit holds about six of them at once."""
SCORE_CELLS = 2**24
"""Rows x items per model call when the rows' scores are computed in chunks (64 MB a chunk)."""


# --------------------------------------------------------------------------- read, else fit and save


async def ensure_loop_calibration(
    config: LoopConfig,
    catalog: Dataset,
    rec: Scorer,
    reward: Scorer,
    backends: Sequence[str],
    caches: LoopCaches | None = None,
) -> LoopCalibration:
    """The calibration for these models: the stored one (:func:`graph.calibration.stored_loop_calibration`),
    or fitted on validation now (seconds to minutes) and saved where a worker reads it."""
    found = stored_loop_calibration(catalog, rec, reward, backends, caches)
    if found is not None:
        return found
    found = await fit_calibration(config, catalog, rec, reward, backends, caches)
    key = calibration_key(catalog, rec, reward, backends)
    path = calibration_path(rec, reward)
    if path:
        try:
            write_keyed(path, key, "calibration", found.to_json())
        except OSError as exc:  # a read-only models directory: keep it in memory only
            log.warning("could not save the loop calibration to %s (%s)", path, exc)
    if caches is not None:
        with caches.lock:
            caches.calibrations[memo_key(key, path, rec, reward)] = found
    return found


def write_keyed(path: Path, key: Mapping[str, Any], entry: str, payload: Any) -> None:
    """``{"key": key, entry: payload}`` as JSON (what :func:`graph.calibration.read_keyed` reads),
    replaced atomically (a concurrent reader never sees half a file); OSError is the caller's."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial")
    partial.write_text(json.dumps({"key": key, entry: payload}, indent=2, sort_keys=True) + "\n")
    partial.replace(path)


# --------------------------------------------------------------------------- fitting


async def fit_calibration(
    config: LoopConfig,
    catalog: Dataset,
    rec: Scorer,
    reward: Scorer,
    backends: Sequence[str],
    caches: LoopCaches | None = None,
) -> LoopCalibration:
    """Learn every parameter on the validation split (see the module docstring)."""
    every, _dropped = catalog.eval_rows("val")
    rows = fit_rows(every, catalog.n_items)
    if not rows:
        log.warning("%s has no validation rows: the offline agents run uncalibrated", catalog.name)
        return LoopCalibration()
    if len(rows) < len(every):
        log.info(
            "calibration on %d of %d validation rows (a seeded sample: %s items)",
            len(rows),
            len(every),
            f"{catalog.n_items:,}",
        )
    histories = [r.history for r in rows]
    rec_lp = catalog_log_probs(rec, histories)  # [B, N]
    reward_lp = rec_lp if reward is rec else catalog_log_probs(reward, histories)
    base = replace(LoopCalibration(), **_fit_temperatures(rows, rec_lp, reward_lp, catalog.n_items, config))
    choices = [(name, weight) for name in ("none", *backends) for weight in _rec_weights(name)]
    tried: dict[str, Any] = {}
    best: tuple[float, LoopCalibration, dict[str, float]] | None = None
    with progress_bar(
        total=len(choices), desc="calibration: trust", unit="choice", disable=_small(rows, catalog)
    ) as bar:
        for name in ("none", *backends):
            vectors = load_vectors(name, config, catalog, reward, caches)
            similarity = vectors.history_similarity_all(histories) if vectors is not None else None
            for weight in _rec_weights(name):
                candidate = replace(base, rec_similarity=name, rec_history_weight=weight)
                trust, curve = fit_trust_with(candidate, rec_lp, reward_lp, similarity, rows)
                score = curve[f"{trust:.2f}"]
                tried[f"{name}/weight={weight:g}"] = {"trust": trust, "val_expected_hr1": score}
                if best is None or score > best[0] + 1e-12:  # ties: the simpler choice tried first
                    best = (score, replace(candidate, trust=trust), curve)
                bar.update(1)
            del similarity
    assert best is not None
    del rec_lp, reward_lp  # the user simulation reads other histories
    recommendation = replace(
        best[1],
        provenance={
            "split": "val",
            "n_rows": len(rows),
            "temperature_draws": FIT_DRAWS,
            "val_expected_hr1_by_trust": best[2],
            "val_expected_hr1_by_history_evidence": tried,
            **({"n_rows_of": len(every)} if len(rows) < len(every) else {}),
        },
    )
    return await fit_user_simulation(config, catalog, rec, reward, backends, recommendation, caches, rows)


def fit_rows(rows: Sequence[Row], n_items: int) -> list[Row]:
    """The validation rows the fit reads: all of them while rows x items stays within ``FIT_CELLS``
    (every paper dataset, 955 rows of 10^5 items), else a fixed, seeded sample of
    ``FIT_CELLS // n_items`` rows in their order, so that a fit's memory and time stay bounded."""
    return seeded_sample(rows, max(1, FIT_CELLS // n_items))


def seeded_sample(rows: Sequence[Row], keep: int) -> list[Row]:
    """All ``rows`` when they are at most ``keep``, else ``keep`` of them drawn with ``FIT_SEED``,
    in their order: the same rows on every run."""
    if len(rows) <= keep:
        return list(rows)
    picked = sorted(random.Random(FIT_SEED).sample(range(len(rows)), keep))
    return [rows[i] for i in picked]


def catalog_log_probs(scorer: Scorer, histories: Sequence[Sequence[int]]) -> torch.Tensor:
    """[B, N] :meth:`Scorer.catalog_log_probs`, one model call while B x N stays within
    ``SCORE_CELLS`` (every paper dataset: the same numbers as before), else in row chunks (a
    call's temporaries are several [B, N] tensors)."""
    N = scorer.n_items
    step = rows_per_block(N, most=len(histories), cells=SCORE_CELLS)
    if step >= len(histories):
        return scorer.catalog_log_probs(histories)
    out = torch.empty(len(histories), N)
    with progress_bar(total=len(histories), desc="calibration: scores", unit="row") as bar:
        for start in range(0, len(histories), step):
            chunk = histories[start : start + step]
            out[start : start + len(chunk)] = scorer.catalog_log_probs(chunk)
            bar.update(len(chunk))
    return out


def _rec_weights(name: str) -> tuple[float, ...]:
    return (0.0,) if name == "none" else REC_HISTORY_WEIGHTS


def _small(rows: Sequence[Row], catalog: Dataset) -> bool:
    """A fit of seconds (the paper's catalogs): no progress bar."""
    return len(rows) * catalog.n_items < 2**22


def _fit_temperatures(
    rows: Sequence[Row], rec_lp: torch.Tensor, reward_lp: torch.Tensor, n_items: int, config: LoopConfig
) -> dict[str, float]:
    """Both temperatures, on the rows with a full candidate list (a row with fewer items outside
    its history than negatives, possible in a small catalog, has no such list); 1.0 without any."""
    n = min(config.n_candidates, n_items)
    full = [i for i, r in enumerate(rows) if negative_pool_size(r.history, r.next, n_items) >= n - 1]
    if not full:
        return {"rec_temperature": 1.0, "reward_temperature": 1.0}
    kept = [rows[i] for i in full]
    draws = _candidate_draws(kept, n_items, n)
    return {
        "rec_temperature": fit_temperature(rec_lp[full], kept, draws),
        "reward_temperature": fit_temperature(reward_lp[full], kept, draws),
    }


def _candidate_draws(rows: Sequence[Row], n_items: int, n: int) -> torch.Tensor:
    """[B, D, n] LLaRA candidate lists (target + uniform negatives), D per row, fixed seed."""
    rng = random.Random(FIT_SEED)
    return torch.as_tensor(
        [[sample_candidates(r.history, r.next, n_items, rng, n=n) for _ in range(FIT_DRAWS)] for r in rows],
        dtype=torch.long,
    )


def fit_temperature(log_probs: torch.Tensor, rows: Sequence[Row], draws: torch.Tensor) -> float:
    """T maximising the mean log-likelihood of the target under softmax(score / T) over each draw."""
    B, D, C = draws.shape  # rows, draws, candidates
    scores = log_probs.gather(1, draws.reshape(B, D * C)).reshape(B, D, C)  # [B, D, C]
    is_target = draws == torch.as_tensor([r.next for r in rows]).view(B, 1, 1)  # [B, D, C]
    best_t, best_ll = 1.0, -math.inf
    for t in TEMPERATURES:
        ll = torch.log_softmax(scores / t, dim=2)[is_target].mean().item()
        if ll > best_ll:
            best_t, best_ll = t, ll
    return best_t


def fit_trust_with(
    calibration: LoopCalibration,
    rec_log_probs: torch.Tensor,
    reward_log_probs: torch.Tensor,
    similarity: torch.Tensor | None,
    rows: Sequence[Row],
) -> tuple[float, dict[str, float]]:
    """:func:`fit_trust` for the recommendation agent's belief under ``calibration``."""
    belief = agent_belief(calibration, rec_log_probs, similarity)
    return fit_trust(belief, reward_log_probs / calibration.reward_temperature, rows)


def fit_trust(rec: torch.Tensor, reward: torch.Tensor, rows: Sequence[Row]) -> tuple[float, dict[str, float]]:
    """The trust in the feedback with the best exact expected validation HR@1 of
    (1 - trust) * rec + trust * reward (calibrated log-probabilities, [B, N] each).

    Among equally good values the one nearest the middle of the best run is kept: the curve is
    flat at its top on ~100 users, and its middle is the choice least tied to one user's draw."""
    counts = outranking_counts(rec, reward, rows, TRUST_GRID)  # [B, K]: one pass for every trust
    curve: dict[str, float] = {}
    for k, trust in enumerate(TRUST_GRID):
        stats = ranking_stats_of_counts(counts[:, k].tolist(), rows, rec.shape[1])
        curve[f"{trust:.2f}"] = sum(expected_hr_at_1_of(stats)) / len(rows)
    best = max(curve.values())
    runs: list[list[float]] = []  # runs of consecutive grid points at the top
    for trust in TRUST_GRID:
        if curve[f"{trust:.2f}"] < best - 1e-12:
            continue
        if runs and abs(trust - runs[-1][-1] - TRUST_GRID[1]) < 1e-9:
            runs[-1].append(trust)
        else:
            runs.append([trust])
    run = max(runs, key=len)
    return run[len(run) // 2], curve


# --------------------------------------------------------------------------- user simulation


@dataclass(frozen=True)
class _Pooled:
    """One ratio's judged items over every validation user: the verdict features and the truth."""

    log_probs: torch.Tensor  # [n]
    history: torch.Tensor  # [n]
    liked: torch.Tensor  # [n]
    turned_down: torch.Tensor  # [n]
    labels: torch.Tensor  # [n] bool
    users: torch.Tensor  # [n] long: which validation user judged the item

    def evidence(self, history: float, liked: float = 0.0, turned_down: float = 0.0) -> torch.Tensor:
        """The same sum as :meth:`VerdictFeatures.evidence`, for every pooled item at once."""
        return self.log_probs + history * self.history + liked * self.liked - turned_down * self.turned_down


async def fit_user_simulation(
    config: LoopConfig,
    catalog: Dataset,
    rec: Scorer,
    reward: Scorer,
    backends: Sequence[str],
    calibration: LoopCalibration,
    caches: LoopCaches | None = None,
    rows: Sequence[Row] | None = None,
) -> LoopCalibration:
    """Threshold, history and memory weights of ``judge_items`` on validation users (module
    docstring): on ``rows``, by default :func:`fit_rows` of the validation split."""
    if rows is None:
        rows = fit_rows(catalog.eval_rows("val")[0], catalog.n_items)
    fitted_rows = len(rows)
    rows = seeded_sample(rows, USERSIM_MAX_ROWS)
    cases = [
        case
        for seed in USERSIM_SEEDS
        for case in cases_from_rows(rows, catalog.n_items, RATIOS, seed, N_EVAL, config.n_candidates)
    ]
    if not cases:
        return calibration
    deps = build_deps(config, catalog, rec, reward, "offline", calibration=calibration, caches=caches)
    memories, runner = [], LoopRunner()
    with progress_bar(
        cases, desc="calibration: user loops", unit="loop", disable=_small(rows, catalog)
    ) as bar:
        for case in bar:
            loop = await runner.run(deps, case.rec_history, case.rec_candidates, config.max_rounds)
            memories.append(MemoryView.of(loop.user_memory, loop.accepted_items()))
    log_probs = _judged_log_probs(reward, cases)
    report: dict[str, Any] = {}
    best: tuple[tuple[float, float], dict[str, Any]] | None = None
    for name in ("none", *backends):
        vectors = load_vectors(name, config, catalog, reward, caches)
        agent = [_pool(cases, log_probs, vectors, memories, ratio, with_memory=False) for ratio in RATIOS]
        flow = [_pool(cases, log_probs, vectors, memories, ratio, with_memory=True) for ratio in RATIOS]
        for h in USER_HISTORY_WEIGHTS if vectors is not None else (0.0,):
            agent_f1, theta = _best_threshold(agent, h)
            weights = MEMORY_WEIGHTS if vectors is not None else (0.0,)
            scored = [(_mean_f1(flow, theta, h, a, d), a, d) for a in weights for d in weights]
            flow_f1, a, d = max(scored, key=lambda s: (s[0], -s[1] - s[2]))  # ties: the smaller weights
            gain = _memory_gain(flow, theta, h, (a, d), len(cases))
            if gain[1] <= 0:  # not beyond validation noise: the memory does not count
                flow_f1, a, d = _mean_f1(flow, theta, h, 0.0, 0.0), 0.0, 0.0
            choice = {
                "user_similarity": name,
                "user_history_weight": h,
                "verdict_threshold": theta,
                "user_liked_weight": a,
                "user_turned_down_weight": d,
            }
            report[f"{name}/h={h:g}"] = {
                **choice,
                "agent_f1": agent_f1,
                "flow_f1": flow_f1,
                "best_memory_gain_f1": {"mean": gain[0], "low": gain[1], "high": gain[2]},
            }
            if best is None or (flow_f1, agent_f1) > best[0]:
                best = ((flow_f1, agent_f1), choice)
    assert best is not None
    provenance = {
        **calibration.provenance,
        "usersim_cases": len(cases),
        "usersim_seeds": list(USERSIM_SEEDS),
        "usersim_ratios": list(RATIOS),
        "usersim_val_mean_f1": report,
        **({"usersim_rows": f"{len(rows)} of {fitted_rows}"} if len(rows) < fitted_rows else {}),
    }
    return replace(calibration, **best[1], provenance=provenance)


def _judged_log_probs(reward: Scorer, cases: Sequence[UserSimCase]) -> list[dict[int, float]]:
    """Per case, the reward model's catalog log-probability of each item it judges: from
    :func:`catalog_log_probs` a chunk of cases at a time, so no [cases, catalog] tensor is kept."""
    histories = [c.init_history for c in cases]
    step = rows_per_block(reward.n_items, most=len(cases), cells=SCORE_CELLS)
    judged: list[dict[int, float]] = []
    for start in range(0, len(cases), step):
        log_probs = catalog_log_probs(reward, histories[start : start + step])  # [c, N]
        for u, case in enumerate(cases[start : start + step]):
            items = sorted({i for ratio in case.eval_lists.values() for i in ratio.items})
            judged.append(dict(zip(items, log_probs[u, items].tolist(), strict=True)))
    return judged


def _pool(
    cases: Sequence[UserSimCase],
    log_probs: Sequence[Mapping[int, float]],
    vectors: ItemVectors | None,
    memories: Sequence[MemoryView],
    ratio: int,
    *,
    with_memory: bool,
) -> _Pooled:
    columns: list[list[Any]] = [[] for _ in range(6)]
    for u, (case, memory) in enumerate(zip(cases, memories, strict=True)):
        items = list(case.eval_lists[ratio].items)
        view = memory if with_memory else MemoryView((), ())
        features = VerdictFeatures.of(
            [log_probs[u][i] for i in items], items, case.init_history, view, vectors
        )
        columns[0] += features.log_probs
        columns[1] += features.history
        columns[2] += features.liked
        columns[3] += features.turned_down
        columns[4] += list(case.eval_lists[ratio].labels)
        columns[5] += [u] * len(items)
    floats = [torch.as_tensor(c, dtype=torch.float64) for c in columns[:4]]
    labels, users = torch.as_tensor(columns[4], dtype=torch.bool), torch.as_tensor(columns[5])
    return _Pooled(*floats, labels, users)


def _f1(pooled: _Pooled, evidence: torch.Tensor, thetas: torch.Tensor) -> torch.Tensor:
    """Micro F1 of "like iff evidence >= theta", per theta [K]."""
    liked = evidence.unsqueeze(0) >= thetas.unsqueeze(1)  # [K, n]
    tp = (liked & pooled.labels).sum(dim=1).double()
    fp = (liked & ~pooled.labels).sum(dim=1).double()
    fn = pooled.labels.sum().double() - tp
    return torch.where(tp > 0, 2 * tp / (2 * tp + fp + fn), torch.zeros_like(tp))


def _mean_f1(pooled: Sequence[_Pooled], theta: float, *weights: float) -> float:
    thetas = torch.tensor([theta], dtype=torch.float64)
    return float(sum(_f1(p, p.evidence(*weights), thetas) for p in pooled)[0] / len(pooled))


def _memory_gain(
    pooled: Sequence[_Pooled], theta: float, h: float, memory: tuple[float, float], n_users: int
) -> tuple[float, float, float]:
    """Mean micro F1 over the ratios with the memory weights minus without, on validation: the
    difference and its 95 % bootstrap interval over the validation users (fixed seed)."""
    generator = torch.Generator().manual_seed(FIT_SEED)
    picks = torch.randint(0, n_users, (MEMORY_RESAMPLES, n_users), generator=generator)  # [R, U]

    def f1s(weights: tuple[float, ...]) -> torch.Tensor:
        """[1 + R] mean F1 over the ratios: all users first, then each resample."""
        total = torch.zeros(1 + MEMORY_RESAMPLES, dtype=torch.float64)
        for p in pooled:
            liked = p.evidence(h, *weights) >= theta
            counts = [
                torch.bincount(p.users, weights=mask.double(), minlength=n_users)  # [U]
                for mask in (liked & p.labels, liked & ~p.labels, ~liked & p.labels)
            ]
            tp, fp, fn = (torch.cat([c.sum().view(1), c[picks].sum(dim=1)]) for c in counts)
            total += torch.where(tp > 0, 2 * tp / (2 * tp + fp + fn), torch.zeros_like(tp))
        return total / len(pooled)

    diff = f1s(memory) - f1s((0.0, 0.0))
    low, high = torch.quantile(diff[1:], torch.tensor([0.025, 0.975], dtype=torch.float64)).tolist()
    return float(diff[0]), low, high


def _best_threshold(pooled: Sequence[_Pooled], h: float) -> tuple[float, float]:
    """One threshold for every ratio: the best mean micro F1 over the ratios (ties: the lowest)."""
    evidence = [p.evidence(h) for p in pooled]
    values = torch.cat(evidence)
    values = torch.unique(values[torch.isfinite(values)])  # sorted
    thetas = values[:: max(1, len(values) // THRESHOLD_POINTS)]
    mean = sum(_f1(p, e, thetas) for p, e in zip(pooled, evidence, strict=True)) / len(pooled)
    best = int(torch.argmax(mean))
    return float(mean[best]), float(thetas[best])
