"""The evaluation's only door into the graph and the models.

Experiments call these functions instead of ``graph`` / ``recmodels`` directly, so a change in
those interfaces is absorbed here once. Models are loaded once per (dataset, model) and shared.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from app.data.dataset import Dataset
from app.settings import Settings
from recmodels.scorer import Scorer

AgentKind = Literal["offline", "llm"]


@dataclass(frozen=True)
class LoopOutcome:
    """What the evaluation keeps of one run of the feedback loop."""

    first_item: int
    """The recommendation agent's first proposal: its one-round answer without a user agent."""
    final_item: int
    n_rounds: int
    stop_reason: str
    user_memory: list[dict[str, Any]] = field(default_factory=list)
    usage: dict[str, Any] = field(default_factory=dict)


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


def reward_ranks(scorer: Scorer, history: Sequence[int], items: Sequence[int]) -> list[int]:
    """1-based rank of each item among ``items`` under the reward model (ties keep list order)."""
    order = scorer.rank(list(history), list(items))
    position = {item: rank for rank, item in enumerate(order, start=1)}
    return [position[item] for item in items]


def make_loop_deps(
    settings: Settings,
    catalog: Dataset,
    rec_scorer: Scorer,
    reward_scorer: Scorer,
    agents: AgentKind,
    **knobs: Any,
) -> Any:
    """``graph.deps.make_deps`` plus the ablation knobs the graph exposes (passed by keyword)."""
    from graph.deps import make_deps

    return make_deps(settings, catalog, rec_scorer, reward_scorer, agents, **knobs)


def run_flow(deps: Any, history: Sequence[int], candidates: Sequence[int], max_rounds: int) -> LoopOutcome:
    """One feedback loop on fresh memory (no thread): the runner compiles the graph once per deps."""
    from graph.runner import run_loop

    result = run_loop(deps, list(history), list(candidates), max_rounds)
    rounds = list(result.rounds)
    return LoopOutcome(
        first_item=int(rounds[0]["item"]) if rounds else int(result.final_item),
        final_item=int(result.final_item),
        n_rounds=int(result.n_rounds),
        stop_reason=str(result.stop_reason),
        user_memory=[dict(entry) for entry in result.user_memory],
        usage=dict(result.usage),
    )


def judge_items(
    deps: Any, history: Sequence[int], items: Sequence[int], memory: Sequence[dict[str, Any]]
) -> tuple[list[bool], dict[str, Any]]:
    """The user agent's verdict (True = would interact) on each evaluation item (Table 5), and
    what it cost (LLM usage; zeros offline)."""
    from graph.runner import assess_items

    verdict = assess_items(deps, history, items, memory)  # type: ignore[arg-type]
    likes = [bool(v) for v in verdict.likes]
    if len(likes) != len(items):
        raise RuntimeError(f"user agent judged {len(likes)} of {len(items)} items")
    return likes, dict(verdict.usage)
