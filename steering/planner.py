"""The planner: runs only the tools a preference memory needs, over a candidate pool.

Also the two functions the feedback loop calls: :func:`steer_candidates` (the candidate list
the loop works on) and ``hard_violations`` (re-exported from tools, for the user agent).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Literal

import numpy as np

from recmodels.scorer import Scorer
from steering.catalog_index import Catalog
from steering.preferences import Preferences
from steering.similarity import CollaborativeSimilarity, Similarity
from steering.tools import (
    RankedItem,
    aggregate_arrays,
    attenuate_array,
    attribute_index,
    filter_candidates,
    hard_violations,
    match_array,
    semantic_score_array,
    zscore_order,
)

__all__ = [
    "Plan",
    "PlanWeights",
    "choose_tools",
    "hard_violations",
    "run_plan",
    "steer_candidates",
    "steer_plan",
]

ToolName = Literal["filter", "matcher", "attenuator", "aggregator"]


@dataclass(frozen=True)
class PlanWeights:
    # Matcher: share of semantic similarity vs the rec model's score. Above one half because a user who
    # says "like X" asked for X-like items first; the rec model orders them for this user.
    semantic_weight: float = 0.7
    attenuation: float = 1.0  # attenuator: penalty per standard deviation of excess similarity


@dataclass
class Plan:
    """What the planner did: the items it ranks first, the tools it ran, soft preferences it could
    not use, and (:attr:`ranked`) each item's scores."""

    items: list[int]
    tools: list[ToolName]
    pool_size: int
    after_filter: int
    skipped_soft: list[str] = field(default_factory=list)
    scored: Callable[[], list[RankedItem]] = field(default=list, repr=False, compare=False)
    """Makes :attr:`ranked`: the service reads only the items, whose scores may cost more to make."""

    @cached_property
    def ranked(self) -> list[RankedItem]:
        """:attr:`items` with their scores (a matcher's mix, the penalty), made when first read."""
        return self.scored()


def choose_tools(preferences: Preferences) -> list[ToolName]:
    """Only what the memory needs; the aggregator always ranks."""
    tools: list[ToolName] = []
    if preferences.has_hard():
        tools.append("filter")
    if preferences.positive.soft:
        tools.append("matcher")
    if preferences.negative.soft:
        tools.append("attenuator")
    tools.append("aggregator")
    return tools


def run_plan(
    preferences: Preferences,
    candidates_pool: Sequence[int],
    history: Sequence[int],
    scorer: Scorer,
    catalog: Catalog,
    k: int,
    *,
    similarity: Similarity | None = None,
    weights: PlanWeights = PlanWeights(),
) -> Plan:
    """Rank ``candidates_pool`` for this user under ``preferences``; at most ``k`` items."""
    pool = np.fromiter(dict.fromkeys(candidates_pool), dtype=np.int64)
    return _run_plan(preferences, pool, history, scorer, catalog, k, similarity=similarity, weights=weights)


def _run_plan(
    preferences: Preferences,
    pool: np.ndarray,
    history: Sequence[int],
    scorer: Scorer,
    catalog: Catalog,
    k: int,
    *,
    similarity: Similarity | None,
    weights: PlanWeights,
) -> Plan:
    """:func:`run_plan` over a pool without repeats, as an array of ids, or as a bool mask over the
    catalog (:func:`steer_plan`'s unseen items; the plan may change it): at 10^6 items every
    per-item step is a numpy operation on arrays (ids, scores, the top k), never a Python loop or a
    Python list over the pool (issue 45)."""
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    tools = choose_tools(preferences)
    anchors = [p.item for p in preferences.positive.soft if p.item is not None]
    index = attribute_index(catalog) if "filter" in tools else None
    if pool.dtype == np.bool_:  # pool, anchors and filter as one mask: one pass, then its ids
        pool[[a for a in anchors if 0 <= a < len(pool)]] = False  # "like X" asks for others than X
        pool_size = int(np.count_nonzero(pool))
        if index is not None:
            pool &= index.allowed(preferences)
        kept = np.flatnonzero(pool)  # ascending, as the ids of the catalog's unseen items list them
    else:
        if anchors:
            pool = pool[~np.isin(pool, anchors)]
        pool_size = len(pool)
        kept = pool if index is None else pool[index.allowed(preferences)[pool]]
    if "filter" in tools and index is None:  # a catalog the arrays cannot hold: judged item by item
        kept = np.array(filter_candidates(kept.tolist(), preferences, catalog), dtype=np.int64)
    if not len(kept):
        return Plan([], tools, pool_size, 0)
    collaborative = scorer.score_array(history, kept)
    needs_similarity = "matcher" in tools or "attenuator" in tools
    sim = similarity or (CollaborativeSimilarity(scorer) if needs_similarity else None)
    skipped: list[str] = []
    matched = semantic = penalties = None
    if "matcher" in tools:
        semantic, missing = semantic_score_array(kept, preferences.positive.soft, sim)
        skipped += [p.text for p in missing]
        if semantic is not None:
            matched = match_array(collaborative, semantic, semantic_weight=weights.semantic_weight)
    if "attenuator" in tools:
        negative, missing = semantic_score_array(kept, preferences.negative.soft, sim)
        skipped += [p.text for p in missing]
        if negative is not None:
            penalties = attenuate_array(negative, strength=weights.attenuation)

    def scored() -> list[RankedItem]:
        return aggregate_arrays(
            kept, collaborative, matched=matched, semantic=semantic, penalties=penalties, k=k
        )

    order = zscore_order(collaborative, k) if matched is None and penalties is None else None
    if order is None:
        ranked = scored()
        return Plan([r.item for r in ranked], tools, pool_size, len(kept), skipped, lambda: ranked)
    # Ranked by the rec model's scores alone: their order is their z-scores', which only `ranked` needs.
    return Plan(kept[order].tolist(), tools, pool_size, len(kept), skipped, scored)


def steer_candidates(
    preferences: Preferences | None,
    history: Sequence[int],
    scorer: Scorer,
    catalog: Catalog,
    k: int = 20,
    *,
    exclude: Collection[int] = (),
    similarity: Similarity | None = None,
    weights: PlanWeights = PlanWeights(),
) -> list[int]:
    """The candidate list the feedback loop works on: top-``k`` unseen items under ``preferences``.

    With no preferences this is exactly the rec model's top-k; otherwise the whole unseen
    catalog is the pool, so hard constraints can be met whenever any item meets them.
    """
    if preferences is None or preferences.is_empty():
        return scorer.top_k(history, k, exclude=exclude)
    return steer_plan(
        preferences, history, scorer, catalog, k, exclude=exclude, similarity=similarity, weights=weights
    ).items


def steer_plan(
    preferences: Preferences,
    history: Sequence[int],
    scorer: Scorer,
    catalog: Catalog,
    k: int,
    *,
    exclude: Collection[int] = (),
    similarity: Similarity | None = None,
    weights: PlanWeights = PlanWeights(),
) -> Plan:
    """The plan behind :func:`steer_candidates` under non-empty preferences: the whole unseen
    catalog is the pool. Its ranking keeps the scores (what bench.steer_commands hashes)."""
    unseen = unseen_items(catalog, {*history, *exclude})
    return _run_plan(preferences, unseen, history, scorer, catalog, k, similarity=similarity, weights=weights)


def unseen_items(catalog: Catalog, seen: Collection[int]) -> np.ndarray:
    """bool [N]: the catalog's items not in ``seen``."""
    unseen = np.ones(len(catalog.items), dtype=bool)
    unseen[[i for i in set(seen) if 0 <= i < len(unseen)]] = False
    return unseen
