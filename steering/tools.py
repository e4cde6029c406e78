"""The planner's tools, as plain functions over a candidate list (RecBot, arXiv 2509.21317).

- Filter: keep items that satisfy the positive hard constraints and violate no negative one.
- Matcher: score positive soft preferences, mixing semantic similarity with the rec model's
  collaborative score.
- Attenuator: penalise similarity to negative soft preferences.
- Aggregator: combine the scores and rank.

Scores are z-normalised over the candidate list before mixing: collaborative logits and
cosine similarities live on unrelated scales, and only their order within one list matters.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from recmodels.dataset import Item
from steering.catalog_index import Catalog
from steering.preferences import Preferences, SoftPreference, as_preferences
from steering.similarity import Similarity


@dataclass(frozen=True)
class RankedItem:
    """One steered recommendation and how its score was made."""

    item: int
    score: float
    collaborative: float
    semantic: float | None = None
    penalty: float = 0.0


def hard_violations(preferences: Preferences | Mapping[str, Any] | None, item: Item) -> list[str]:
    """Why ``item`` breaks the hard constraints (empty when it satisfies all of them).

    ``preferences`` may be the plain dict the graph state carries. An unknown release year
    cannot satisfy a positive year range but does not break a negative one: only what is
    known to be excluded is excluded.
    """
    preferences = as_preferences(preferences)
    if preferences is None:
        return []
    reasons: list[str] = []
    wanted, unwanted = preferences.positive, preferences.negative
    genres = {g.casefold() for g in item.genres}
    if wanted.genres and not genres & {g.casefold() for g in wanted.genres}:
        reasons.append(f"not in the wanted genre(s) {', '.join(wanted.genres)}")
    if wanted.year_range is not None and (item.year is None or not wanted.year_range.contains(item.year)):
        shown = "unknown" if item.year is None else str(item.year)
        reasons.append(f"released {shown}, wanted {wanted.year_range.describe()}")
    if wanted.items and item.id not in wanted.items:
        reasons.append("not one of the items asked for")
    banned = [g for g in unwanted.genres if g.casefold() in genres]
    if banned:
        reasons.append(f"genre {', '.join(banned)} is excluded")
    if unwanted.year_range is not None and item.year is not None and unwanted.year_range.contains(item.year):
        reasons.append(f"released {item.year}, excluded {unwanted.year_range.describe()}")
    if item.id in unwanted.items:
        reasons.append("this item is excluded")
    return reasons


def filter_candidates(candidates: Sequence[int], preferences: Preferences, catalog: Catalog) -> list[int]:
    """Filter tool: the candidates (order kept) that break no hard constraint."""
    return [c for c in candidates if not hard_violations(preferences, catalog.item(c))]


def semantic_scores(
    candidates: Sequence[int], soft: Sequence[SoftPreference], similarity: Similarity
) -> tuple[list[float] | None, list[SoftPreference]]:
    """Mean cosine similarity of each candidate to the embeddable preferences, and the ones skipped."""
    rows: list[list[float]] = []
    skipped: list[SoftPreference] = []
    for pref in soft:
        sims = similarity.similarities(candidates, pref)
        if sims is None:
            skipped.append(pref)
        else:
            rows.append(sims)
    if not rows:
        return None, skipped
    return [statistics.fmean(col) for col in zip(*rows, strict=True)], skipped


def match(
    collaborative: Sequence[float], semantic: Sequence[float], *, semantic_weight: float
) -> list[float]:
    """Matcher tool: ``w * z(semantic) + (1 - w) * z(collaborative)``."""
    if not 0.0 <= semantic_weight <= 1.0:
        raise ValueError(f"semantic_weight must be in [0, 1], got {semantic_weight}")
    sem, col = zscore(semantic), zscore(collaborative)
    return [semantic_weight * s + (1.0 - semantic_weight) * c for s, c in zip(sem, col, strict=True)]


def attenuate(similarity_to_negative: Sequence[float], *, strength: float) -> list[float]:
    """Attenuator tool: a penalty for candidates more similar than average to what the user rejects."""
    if strength < 0:
        raise ValueError(f"strength must be >= 0, got {strength}")
    return [strength * max(0.0, z) for z in zscore(similarity_to_negative)]


def aggregate(
    candidates: Sequence[int],
    collaborative: Sequence[float],
    *,
    matched: Sequence[float] | None = None,
    semantic: Sequence[float] | None = None,
    penalties: Sequence[float] | None = None,
    k: int | None = None,
) -> list[RankedItem]:
    """Aggregator tool: final score = matcher score (or z(collaborative)) - penalty, best first.

    Ties keep the candidate order, so the result is deterministic.
    """
    base = list(matched) if matched is not None else zscore(collaborative)
    penalty = list(penalties) if penalties is not None else [0.0] * len(candidates)
    ranked = [
        RankedItem(
            item=item,
            score=base[i] - penalty[i],
            collaborative=collaborative[i],
            semantic=None if semantic is None else semantic[i],
            penalty=penalty[i],
        )
        for i, item in enumerate(candidates)
    ]
    ranked.sort(key=lambda r: -r.score)  # stable
    return ranked if k is None else ranked[:k]


def zscore(values: Sequence[float]) -> list[float]:
    """(x - mean) / std over the list; all zeros when the list is constant or shorter than 2."""
    if len(values) < 2:
        return [0.0] * len(values)
    mean, std = statistics.fmean(values), statistics.pstdev(values)
    if std == 0.0:
        return [0.0] * len(values)
    return [(v - mean) / std for v in values]
