"""The evaluation's only door into the graph and the models.

Experiments call these functions instead of ``graph`` / ``recmodels`` directly, so a change in
those interfaces is absorbed here once. Models are loaded once per (dataset, model) and shared.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from app.settings import Settings
from graph.caches import LoopCaches
from graph.config import AgentMode
from graph.runner import LoopResult, LoopRunner
from lab.calibration.deps import calibrated_deps
from recmodels.dataset import Dataset
from recmodels.scorer import Scorer

_BATCH = 512


class ModelBank:
    """Trained scorers loaded once per (dataset, model name), with their fingerprints.

    Loading goes through the dataset, so an artifact trained on other data is refused.
    """

    def __init__(self, models_dir: Path):
        self.models_dir = Path(models_dir)
        self._scorers: dict[tuple[str, str], Scorer] = {}
        self._lock = threading.Lock()

    def get(self, dataset: Dataset, model_name: str) -> Scorer:
        key = (dataset.name, model_name)
        with self._lock:
            if key not in self._scorers:
                from recmodels.artifacts import load_latest_scorer

                self._scorers[key] = load_latest_scorer(self.models_dir, dataset, model_name)
            return self._scorers[key]

    def fingerprints(self) -> dict[str, dict[str, str]]:
        """Per loaded model: artifact SHA-256 and the dataset fingerprint it was trained on."""
        return {
            f"{dataset}/{name}": {
                "artifact_sha256": scorer.info.artifact_sha256,
                "dataset_fingerprint": scorer.info.dataset_fingerprint,
            }
            for (dataset, name), scorer in sorted(self._scorers.items())
        }


def model_picks(
    scorer: Scorer, histories: Sequence[Sequence[int]], candidates: Sequence[Sequence[int]]
) -> list[int]:
    """The rec model's top candidate per row, scored in one batch (ties: first candidate wins)."""
    picks: list[int] = []
    for scores, cands in zip(scorer.score_batch(histories, candidates), candidates, strict=True):
        best = max(range(len(cands)), key=lambda i: (scores[i], -i))
        picks.append(cands[best])
    return picks


BASELINES = ("reward", "ensemble", "weighted")
"""Picks the loop is compared with: the reward model alone, the plain two-model score ensemble
(mean of both models' log-probabilities over the catalog) and the trust-weighted combination the
calibration learned on validation (the offline loop's evidence, without the loop)."""


def _scores(deps: Any, rec: Scorer, reward: Scorer, histories: Sequence[Sequence[int]]) -> dict[str, Any]:
    """[B, N] per-item scores of every single-score pick for a batch of histories."""
    from graph.calibration import combined_scores

    hist = [list(h) for h in histories]
    lr = rec.catalog_log_probs(hist)
    lu = lr if reward is rec else reward.catalog_log_probs(hist)
    vectors = deps.rec_vectors
    similarity = vectors.history_similarity_all(hist) if vectors is not None else None
    return {"model": lr, "reward": lu, "ensemble": (lr + lu) / 2} | combined_scores(
        deps.calibration, lr, lu, similarity
    )


def baseline_picks(
    deps: Any,
    rec: Scorer,
    reward: Scorer,
    histories: Sequence[Sequence[int]],
    candidates: Sequence[Sequence[int]],
) -> list[dict[str, int]]:
    """Per row, each baseline's top candidate (ties: the first candidate), ``{name}_pick`` keys."""
    import torch

    out: list[dict[str, int]] = []
    for start in range(0, len(histories), _BATCH):
        cands = torch.as_tensor([list(c) for c in candidates[start : start + _BATCH]], dtype=torch.long)
        scores = _scores(deps, rec, reward, histories[start : start + _BATCH])
        per_name = {name: scores[name].gather(1, cands).tolist() for name in BASELINES}
        per_name["reward"] = reward.score_batch(
            [list(h) for h in histories[start : start + _BATCH]], cands.tolist()
        )
        for b, row in enumerate(cands.tolist()):
            out.append({f"{name}_pick": row[_argmax(per_name[name][b])] for name in BASELINES})
    return out


def _argmax(values: Sequence[float]) -> int:
    return max(range(len(values)), key=lambda i: (values[i], -i))


def exact_expected_hr1(deps: Any, rec: Scorer, reward: Scorer, rows: Sequence[Any]) -> dict[str, list[float]]:
    """Per row, the exact HR@1-of-20 over every draw of the 19 negatives (no sampling noise) of each
    pick that ranks items by one score of its own: the rec model, the reward model, the plain
    ensemble, the offline recommendation agent's first proposal and the trust-weighted combination."""
    from recmodels.evaluation import expected_hr_at_1_of, ranking_stats_from_scores

    scores = _scores(deps, rec, reward, [r.history for r in rows])
    return {name: expected_hr_at_1_of(ranking_stats_from_scores(s, rows)) for name, s in scores.items()}


def reward_ranks(scorer: Scorer, history: Sequence[int], items: Sequence[int]) -> list[int]:
    """1-based rank of each item among ``items`` under the reward model (ties share the better
    rank: :func:`recmodels.metrics.rank_of`)."""
    from recmodels.metrics import ranks

    return ranks(scorer.score(list(history), list(items)))


async def make_loop_deps(
    settings: Settings,
    catalog: Dataset,
    rec_scorer: Scorer,
    reward_scorer: Scorer,
    agents: AgentMode,
    caches: LoopCaches | None = None,
    **knobs: Any,
) -> Any:
    """The loop's dependencies (:func:`lab.calibration.deps.calibrated_deps`) plus the ablation knobs
    the graph exposes (passed by keyword). LLM agents get the weights fitted for the endpoint, fitted
    first (``recloop calibrate --agents llm``, on validation) when it has none."""
    if agents == "llm" and "llm_weights" not in knobs:
        import sys

        from lab.eval.llm_calibrate import calibrate_llm

        fit = await calibrate_llm(
            settings.loop_config(),
            catalog,
            rec_scorer,
            reward_scorer,
            progress=False,
            echo=lambda line: print(line, file=sys.stderr),
            caches=caches,
        )
        knobs = {**knobs, "llm_weights": fit.weights}
    return await calibrated_deps(
        settings.loop_config(), catalog, rec_scorer, reward_scorer, agents, caches=caches, **knobs
    )


def loop_runner() -> LoopRunner:
    """The loop graph compiled once, without a checkpointer: every loop of an evaluation runs on it."""
    return LoopRunner()


async def run_flow(
    runner: LoopRunner, deps: Any, history: Sequence[int], candidates: Sequence[int], max_rounds: int
) -> LoopResult:
    """One feedback loop on fresh memory (no thread), ``deps`` as the graph's context."""
    return await runner.run(deps, list(history), list(candidates), max_rounds)


async def simulated_likes(
    deps: Any,
    history: Sequence[int],
    items: Sequence[int],
    memory: Sequence[dict[str, Any]],
    accepted: Sequence[int] = (),
) -> tuple[list[bool], dict[str, Any]]:
    """The user agent's verdict (True = would interact) on each evaluation item (Table 5), and
    what it cost (LLM usage; zeros offline). ``accepted``: the items it accepted in the loop."""
    from graph.runner import assess_items

    verdict = await assess_items(deps, history, items, memory, accepted=accepted)  # type: ignore[arg-type]
    likes = [bool(v) for v in verdict.likes]
    if len(likes) != len(items):
        raise RuntimeError(f"user agent judged {len(likes)} of {len(items)} items")
    return likes, dict(verdict.usage)
