"""The evidence the offline agents weigh: calibrated model scores, trust, item similarity, memory.

Every number here comes from the two trained models, the item vectors and the agents' memories;
how much each counts (temperatures, trust, weights, the verdict threshold) is a
:class:`graph.calibration.LoopCalibration` learned on the validation split.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import torch

from graph.state import MemoryEntry


def calibrated_log_probs(scores: Sequence[float], temperature: float) -> list[float]:
    """log softmax(scores / T) over the given items: a model's chance that each is the next one."""
    scaled = [s / temperature for s in scores]
    top = max(scaled)
    norm = top + math.log(sum(math.exp(s - top) for s in scaled))
    return [s - norm for s in scaled]


def trust_weighted(rec: float, user: float, trust: float) -> float:
    """The recommendation agent's combined evidence: its own model's calibrated log-probability and
    the user agent's, the latter weighted by ``trust`` (0 = ignore the feedback, 1 = follow it)."""
    return (1.0 - trust) * rec + trust * user


def percent(log_prob: float) -> str:
    """A calibrated log-probability as a chance for a reason text ("31%", "<1%")."""
    value = 100 * math.exp(log_prob)
    return "<1%" if value < 0.5 else f"{value:.0f}%"


@dataclass(frozen=True)
class MemoryView:
    """What the user agent's memory says about items: which it liked, which it turned down."""

    liked: tuple[int, ...]
    """Items it accepted or asked for (AFL's user memory keeps the accepted round too)."""
    turned_down: tuple[int, ...]

    @classmethod
    def of(cls, memory: Sequence[MemoryEntry], accepted: Sequence[int] = ()) -> MemoryView:
        """Accepting an item in the end outweighs having turned it down earlier in the loop."""
        turned_down = {m["item"] for m in memory} - set(accepted)
        asked = [i for m in memory for i in m.get("preferred_items", [])]
        liked = [i for i in [*accepted, *asked] if i not in turned_down]
        return cls(tuple(dict.fromkeys(liked)), tuple(sorted(turned_down)))

    def __bool__(self) -> bool:
        return bool(self.liked or self.turned_down)


RECENCY_DECAY = 0.7
"""History similarity weighs the newest item 1, the one before 0.7, then 0.49, ... (chosen on
MovieLens validation among the plain mean, the last item alone and decays 0.5 / 0.7)."""


class ItemVectors:
    """Unit-length item vectors ([N, D], row i = item i) and the similarities the agents read.

    Rows are made unit-length when read, from ``source`` as given (a model's memory-mapped weights,
    a cached file's array): a loop reads a few dozen rows, and a normalised copy of every row would
    hold [N, D] floats per process (256 MB at 10^6 items and D = 64, 1.5 GB for D = 384). A row
    normalised alone is the same floats as that row of the whole matrix normalised.
    """

    def __init__(self, name: str, source: torch.Tensor, *, normalize_twice: bool = False):
        self.name = name
        self.source = source.detach()
        """[N, D] as given: not normalised, never copied."""
        self.normalize_twice = normalize_twice
        """Normalise twice, as an already normalised source was before (the same floats as then)."""

    def rows(self, items: Sequence[int] | torch.Tensor) -> torch.Tensor:
        """[I, D] unit-length vectors of ``items``."""
        ids = items if isinstance(items, torch.Tensor) else torch.as_tensor(list(items), dtype=torch.long)
        return self._unit(self.source[ids])

    @property
    def vectors(self) -> torch.Tensor:
        """[N, D] every row unit-length: a full copy, for the lab's whole-catalog similarities."""
        return self._unit(self.source)

    def _unit(self, rows: torch.Tensor) -> torch.Tensor:
        unit = torch.nn.functional.normalize(rows.float(), dim=1)
        return torch.nn.functional.normalize(unit, dim=1) if self.normalize_twice else unit

    def history_profile(self, history: Sequence[int]) -> torch.Tensor:
        """[D] recency-weighted mean of the history's vectors (zeros for an empty history)."""
        if not history:
            return torch.zeros(self.source.shape[1])
        weights = torch.tensor([RECENCY_DECAY ** (len(history) - 1 - k) for k in range(len(history))])
        rows = self.rows(history)  # [T, D]
        return (weights / weights.sum()) @ rows

    def history_similarity(self, items: Sequence[int], history: Sequence[int]) -> list[float]:
        """Per item: cosine-like similarity to the recency-weighted history (0.0 without history)."""
        if not items:
            return []
        return (self.rows(items) @ self.history_profile(history)).tolist()

    def history_similarity_all(self, histories: Sequence[Sequence[int]]) -> torch.Tensor:
        """[B, N] :meth:`history_similarity` of every catalog item for each history."""
        profiles = torch.stack([self.history_profile(h) for h in histories])  # [B, D]
        return profiles @ self.vectors.T

    def mean_similarity(self, items: Sequence[int], to: Sequence[int]) -> list[float]:
        """Per item: mean cosine similarity to the items ``to`` (0.0 when ``to`` is empty)."""
        if not to or not items:
            return [0.0] * len(items)
        a = self.rows(items)  # [I, D]
        b = self.rows(to)  # [J, D]
        return (a @ b.T).mean(dim=1).tolist()

    def closest(self, item: int, among: Sequence[int]) -> tuple[int, float]:
        """The item of ``among`` most similar to ``item``, and that similarity."""
        sims = self.rows(among) @ self.rows([item])[0]  # [J]
        best = int(torch.argmax(sims))
        return int(among[best]), float(sims[best])

    def memory_similarity(self, items: Sequence[int], memory: MemoryView) -> tuple[list[float], list[float]]:
        """Per item: mean similarity to what the user liked in the loop, and to what it turned down."""
        return self.mean_similarity(items, memory.liked), self.mean_similarity(items, memory.turned_down)


@dataclass(frozen=True)
class VerdictFeatures:
    """Per judged item: what the user agent's verdict in user simulation is built from."""

    log_probs: list[float]
    """The reward model's log-probability of each item over the whole catalog (history left out)."""
    history: list[float]
    """Similarity of each item to the user's recency-weighted history."""
    liked: list[float]
    """Mean similarity to the items the user agent accepted or asked for in the loop."""
    turned_down: list[float]
    """Mean similarity to the items it turned down in the loop."""

    @classmethod
    def of(
        cls,
        log_probs: Sequence[float],
        items: Sequence[int],
        history: Sequence[int],
        memory: MemoryView,
        vectors: ItemVectors | None,
    ) -> VerdictFeatures:
        zeros = [0.0] * len(items)
        if vectors is None:
            return cls(list(log_probs), zeros, zeros, zeros)
        liked, turned_down = vectors.memory_similarity(items, memory) if memory else (zeros, zeros)
        return cls(list(log_probs), vectors.history_similarity(items, history), liked, turned_down)

    def evidence(self, history_weight: float, liked_weight: float, turned_down_weight: float) -> list[float]:
        """log-probability + weights x (history similarity, similarity to liked, minus to turned down)."""
        return [
            lp + history_weight * h + liked_weight * a - turned_down_weight * d
            for lp, h, a, d in zip(self.log_probs, self.history, self.liked, self.turned_down, strict=True)
        ]


@dataclass(frozen=True)
class LoopCalibration:
    """The offline agents' learned parameters (defaults: uncalibrated, nothing learned)."""

    rec_temperature: float = 1.0
    reward_temperature: float = 1.0
    trust: float = 0.5
    """Weight of the user agent's (reward model's) evidence against the recommendation agent's."""
    rec_similarity: str = "none"
    """Item vectors of the recommendation agent's history evidence: ``collaborative`` (the reward
    model's item embeddings), ``text`` (MiniLM, when installed) or ``none``."""
    rec_history_weight: float = 0.0
    """Weight of an item's similarity to the recent history in the recommendation agent's belief."""
    user_similarity: str = "none"
    """Item vectors of the user agent's similarity evidence in user simulation."""
    user_history_weight: float = 0.0
    """User simulation: weight of an item's similarity to the user's history."""
    user_liked_weight: float = 0.0
    """User simulation: weight of the similarity to items it accepted or asked for in the loop."""
    user_turned_down_weight: float = 0.0
    """User simulation: weight (subtracted) of the similarity to items it turned down in the loop."""
    verdict_threshold: float | None = None
    """User simulation: like an item when its evidence reaches this; None = not learned (the user
    agent then likes the reward model's best accept_top_k / n_candidates share of a list)."""
    provenance: dict[str, Any] = field(default_factory=dict)
    """What it was learned from and how well each choice did on validation (empty: not learned)."""

    @property
    def learned(self) -> bool:
        return bool(self.provenance)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> LoopCalibration:
        return cls(**{k: raw[k] for k in cls.__dataclass_fields__ if k in raw})

    def verdict_weights(self) -> tuple[float, float, float]:
        """User simulation: the (history, liked, turned-down) weights of `VerdictFeatures.evidence`."""
        return self.user_history_weight, self.user_liked_weight, self.user_turned_down_weight

    def summary(self) -> dict[str, Any]:
        """The parameters without the provenance (for results.json and logs)."""
        return {k: v for k, v in self.to_json().items() if k != "provenance"}
