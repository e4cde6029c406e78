"""Deterministic agents: the default without an LLM, and the LLM agents' fallback.

They use the same models, memory and graph as the LLM agents; only the decision
rule is fixed. The policy is designed so the loop adds information the rec model
alone lacks: the user agent judges with the *reward* model and, on rejection,
names the reward model's top picks; the recommendation agent then proposes the
named item its own (rec) model ranks highest. The final item is thus the rec
model's best item among the reward model's best -- an agreement of two models,
which is where the HR@1 gain over the rec model alone comes from.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from app.data.dataset import Dataset
from graph import describe
from graph.agents.base import (
    JudgeItemsContext,
    Judgement,
    Proposal,
    RecAgent,
    RecContext,
    UserAgent,
    UserContext,
)
from graph.state import MemoryEntry

# Without the reward model the offline user agent likes an item when at least half of its
# history shares one of the item's genres (a plain, explainable taste rule).
GENRE_ACCEPT_SHARE = 0.5
RECENT_SHOWN = 2


class OfflineRecAgent(RecAgent):
    """Starts from the rec model's pick; after a rejection, follows the user's named preferences."""

    def __init__(self, catalog: Dataset, *, use_prior: bool = True):
        self.catalog = catalog
        self.use_prior = use_prior

    def propose(self, ctx: RecContext) -> Proposal:
        if not ctx.candidates:
            raise ValueError("candidates: empty; the recommendation agent needs at least one")
        pool = self._pool(ctx)
        preferred = [i for i in ctx.last_preferred if i in pool]
        ranked = self._ranked(ctx, preferred or pool)
        item = ranked[0]
        return Proposal(item=item, reason=self._reason(ctx, item, preferred))

    def _pool(self, ctx: RecContext) -> list[int]:
        """Candidates not rejected in this loop; items rejected in earlier loops go last."""
        rejected = set(ctx.rejected_this_loop)
        remaining = [c for c in ctx.candidates if c not in rejected]
        if not remaining:  # every candidate was turned down: argue again for the best one
            remaining = list(ctx.candidates)
        remembered = {m["item"] for m in ctx.memory}
        fresh = [c for c in remaining if c not in remembered]
        return fresh or remaining

    def _ranked(self, ctx: RecContext, items: Sequence[int]) -> list[int]:
        position = {c: i for i, c in enumerate(ctx.candidates)}
        if self.use_prior:
            score = dict(zip(ctx.candidates, ctx.rec_scores, strict=True))
            return sorted(items, key=lambda i: (-score[i], position[i]))
        profile = describe.genre_profile(self.catalog, ctx.history)
        n_hist = len(ctx.history)

        def affinity(i: int) -> float:
            return describe.genre_affinity(self.catalog, i, profile, n_hist)

        return sorted(items, key=lambda i: (-affinity(i), position[i]))

    def _reason(self, ctx: RecContext, item: int, preferred: list[int]) -> str:
        name, n = describe.quoted(self.catalog, item), len(ctx.candidates)
        genre_note = self._genre_note(ctx, item)
        if preferred:
            how = (
                f"the sequential model ranks highest ({describe.ordinal(self._rec_rank(ctx, item))} of {n})"
                if self.use_prior
                else "that best matches your history"
            )
            wished = describe.either(self.catalog, preferred)
            return f"You said you would rather have {wished}; of those, {name} is the one {how}.{genre_note}"
        if self.use_prior:
            recent = describe.either(self.catalog, ctx.history[-RECENT_SHOWN:][::-1]).replace(" or ", " and ")
            after = f" after {recent}" if ctx.history else ""
            rank = self._rec_rank(ctx, item)
            if rank == 1:
                return (
                    f"{name} is the sequential model's top pick among the {n} candidates{after}.{genre_note}"
                )
            choice = f"{describe.ordinal(rank)} choice of {n} candidates{after}"
            return (
                f"{name} is the sequential model's {choice}; its better picks were turned down.{genre_note}"
            )
        if genre_note:
            return f"{name} fits your history:{genre_note}"
        return (
            f"{name} is the first candidate not yet turned down; "
            "without the sequential model there is no other evidence."
        )

    def _genre_note(self, ctx: RecContext, item: int) -> str:
        profile = describe.genre_profile(self.catalog, ctx.history)
        shared = describe.shared_genres(self.catalog, item, profile)
        if not shared:
            return ""
        top = shared[0]
        return f" It is {top}, like {profile[top]} of your {len(ctx.history)} history items."

    @staticmethod
    def _rec_rank(ctx: RecContext, item: int) -> int:
        score = dict(zip(ctx.candidates, ctx.rec_scores, strict=True))
        return 1 + sum(1 for c in ctx.candidates if score[c] > score[item])


class OfflineUserAgent(UserAgent):
    """Accepts what the reward model ranks within ``accept_top_k``; otherwise names its top picks."""

    def __init__(self, catalog: Dataset, *, accept_top_k: int, accept_share: float, use_reward: bool = True):
        self.catalog = catalog
        self.accept_top_k = accept_top_k
        self.accept_share = accept_share
        """Share of a judged item list liked in user simulation (accept_top_k / n_candidates)."""
        self.use_reward = use_reward

    def judge(self, ctx: UserContext) -> Judgement:
        if not self.use_reward:
            return self._judge_by_genres(ctx)
        name, n = describe.quoted(self.catalog, ctx.item), len(ctx.candidates)
        rank = describe.ordinal(ctx.reward_rank)
        where = f"{rank} of {n} candidates for my history (score {ctx.reward_score:.2f})"
        if ctx.reward_rank <= self.accept_top_k:
            return Judgement("accept", f"{name} suits me: the reward model ranks it {where}.")
        turned_down = {m["item"] for m in ctx.memory} | {ctx.item}
        preferred = [i for i in ctx.top_picks if i not in turned_down]
        wish = f"; I would rather have {describe.either(self.catalog, preferred)}" if preferred else ""
        return Judgement(
            "reject", f"Not for me: the reward model ranks {name} only {where}{wish}.", preferred
        )

    def _judge_by_genres(self, ctx: UserContext) -> Judgement:
        name = describe.quoted(self.catalog, ctx.item)
        profile = describe.genre_profile(self.catalog, ctx.history)
        if not profile:
            return Judgement("accept", f"{name} is fine: nothing in my history speaks against it.")
        affinity = describe.genre_affinity(self.catalog, ctx.item, profile, len(ctx.history))
        shared = describe.shared_genres(self.catalog, ctx.item, profile)
        if affinity >= GENRE_ACCEPT_SHARE:
            return Judgement("accept", f"{name} suits me: I watch a lot of {shared[0]}.")
        if shared:
            return Judgement("reject", f"{name} is {shared[0]}, which only a few of my items are.")
        return Judgement("reject", f"{name} shares no genre with anything in my history.")

    def judge_items(self, ctx: JudgeItemsContext) -> list[bool]:
        liked_before, turned_down = _memory_sets(ctx.memory)
        if self.use_reward:
            n_liked = max(1, math.ceil(len(ctx.items) * self.accept_share))
            order = sorted(range(len(ctx.items)), key=lambda i: -ctx.reward_scores[i])
            liked = {ctx.items[i] for i in order[:n_liked]}
        else:
            profile = describe.genre_profile(self.catalog, ctx.history)
            n_hist = len(ctx.history)
            liked = {
                i
                for i in ctx.items
                if not profile
                or describe.genre_affinity(self.catalog, i, profile, n_hist) >= GENRE_ACCEPT_SHARE
            }
        # What the loop taught the user agent overrides the model's view (FLOW vs Agent in Table 5).
        return [(i in liked or i in liked_before) and i not in turned_down for i in ctx.items]


def _memory_sets(memory: Sequence[MemoryEntry]) -> tuple[set[int], set[int]]:
    """Items the user asked for and items it turned down during earlier loops."""
    turned_down = {m["item"] for m in memory}
    asked_for = {i for m in memory for i in m.get("preferred_items", [])} - turned_down
    return asked_for, turned_down
