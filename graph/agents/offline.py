"""Deterministic agents: the default without an LLM, and the LLM agents' fallback.

They use the same models, memory and graph as the LLM agents; only the decision rule is fixed,
and every weight in it is learned on the validation split (:mod:`graph.calibration`).

- The **recommendation agent** believes in a candidate as much as its rec model's calibrated
  chance says, plus (when validation chose so) a weight times the candidate's similarity to the
  recent history; it proposes its best candidate. After a rejection it weighs the user agent's
  feedback: for the pick just turned down and each item the user agent named, it combines its
  belief with the reward model's chance the feedback quotes, the latter weighted by the learned
  ``trust``. A named item replaces the pick only if the feedback outweighs the prior this way;
  otherwise it proposes its pick again and says why.
- The **user agent** judges with the reward model: it accepts its own favourite (or anything
  within ``accept_top_k``), an item it asked for earlier in the loop, or a pick the recommendation
  agent kept after weighing its objection; otherwise it rejects and names the candidates its
  reward model prefers to the proposal. In user simulation (``judge_items``) it likes an item when
  the reward model's log-probability over the catalog, plus learned weights times the item's
  similarity to the user's history and to what it liked / turned down in the loop, reaches one
  validation-chosen threshold.

The loop's answer is therefore the best candidate under the trust-weighted combination of both
agents' evidence: its gain over the rec model is, by construction, that of a validation-weighted
combination of the rec model, item similarity and the reward model, reached through the dialogue.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from graph import describe
from graph.agents.base import ItemsVerdict, JudgeItemsContext, RecAgent, RecContext, UserAgent, UserContext
from graph.agents.evidence import (
    ItemVectors,
    LoopCalibration,
    MemoryView,
    VerdictFeatures,
    calibrated_log_probs,
    percent,
    trust_weighted,
)
from graph.state import Judgement, Proposal, make_judgement, make_proposal
from recmodels.dataset import Dataset

# Without the reward model the offline user agent likes an item when at least half of its
# history shares one of the item's genres (a plain, explainable taste rule).
GENRE_ACCEPT_SHARE = 0.5
RECENT_SHOWN = 2
NAMED_SHOWN = 3  # items a reason spells out; the rest are counted


class OfflineRecAgent(RecAgent):
    """Proposes its own best candidate; after a rejection, weighs the feedback by learned trust.

    Its belief in a candidate is the rec model's calibrated log-probability plus, when validation
    chose so, a weight times the candidate's similarity to the recent history (item vectors).
    """

    def __init__(
        self,
        catalog: Dataset,
        *,
        use_prior: bool = True,
        calibration: LoopCalibration | None = None,
        vectors: ItemVectors | None = None,
    ):
        self.catalog = catalog
        self.use_prior = use_prior
        self.calibration = calibration or LoopCalibration()
        self.vectors = vectors
        """Item vectors of ``calibration.rec_similarity`` (None: no similarity evidence)."""

    async def propose(self, ctx: RecContext) -> Proposal:
        if not ctx.candidates:
            raise ValueError("candidates: empty; the recommendation agent needs at least one")
        if not self.use_prior:
            return self._without_model(ctx)
        evidence = _RecEvidence.of(self, ctx)
        weighed = self._weigh_feedback(ctx, evidence)
        if weighed is not None:
            return weighed
        pool = self._pool(ctx)
        preferred = [i for i in ctx.last_preferred if i in pool]
        item = evidence.best(preferred or pool)
        if preferred:
            return make_proposal(item, self._followed(ctx, evidence, item, preferred))
        return make_proposal(item, self._own_pick(ctx, evidence, item))

    def evidence(self, ctx: RecContext) -> dict[int, float]:
        """Per candidate, the evidence :meth:`propose` decides on: its belief, or after a rejection
        the trust-weighted mix with the feedback (empty without the rec model)."""
        if not self.use_prior or not ctx.candidates:
            return {}
        evidence = _RecEvidence.of(self, ctx)
        if ctx.rejected_this_loop and evidence.user:
            return {c: evidence.combined(c) for c in evidence.candidates}
        return dict(evidence.belief)

    # --- weighing the user agent's feedback ----------------------------------------------------

    def _weigh_feedback(self, ctx: RecContext, evidence: _RecEvidence) -> Proposal | None:
        """After a rejection that named items: keep the turned-down pick or take the best named item,
        whichever the trust-weighted evidence of both agents favours. None: nothing to weigh."""
        if not ctx.rejected_this_loop or not evidence.user:
            return None
        standing = ctx.rejected_this_loop[-1]
        rejected = set(ctx.rejected_this_loop)
        named = [i for i in ctx.last_preferred if i in evidence.belief and i not in rejected]
        if not named or standing not in evidence.belief:
            return None
        best = evidence.best(named, combined=True)
        outweighs = evidence.combined(best) > evidence.combined(standing)
        insisted_before = ctx.rejected_this_loop.count(standing) > 1
        name, kept = describe.quoted(self.catalog, best), describe.quoted(self.catalog, standing)
        numbers = (
            f"your reward model gives {name} {percent(evidence.user[best])} against "
            f"{percent(evidence.user[standing])} for {kept}, {self._mine()} gives {kept} "
            f"{percent(evidence.belief[standing])} against {percent(evidence.belief[best])} for {name}"
        )
        wished, how = self._names(named), self._trust_phrase()
        if outweighs or insisted_before:
            why = f"{how} your feedback outweighs my prior" if outweighs else "you turned my pick down twice"
            return make_proposal(
                best,
                f"You would rather have {wished}, and {why}: {numbers}. So: {name}."
                f"{self._genre_note(ctx, best)}",
            )
        return make_proposal(
            standing,
            f"You would rather have {wished}, but {how} your feedback does not outweigh my prior: "
            f"{numbers}. My pick stands: {kept}.{self._genre_note(ctx, standing)}",
        )

    def _mine(self) -> str:
        """What the recommendation agent's belief is made of."""
        if self.vectors is not None and self.calibration.rec_history_weight:
            return "my evidence (the sequential model and the similarity to your history)"
        return "my sequential model"

    def _trust_phrase(self) -> str:
        cal = self.calibration
        if cal.learned:
            return f"at the trust learned on validation ({cal.trust:.2f})"
        return f"at a default trust ({cal.trust:.2f}; no validation split to learn it from)"

    def _names(self, items: Sequence[int]) -> str:
        shown = describe.either(self.catalog, items[:NAMED_SHOWN])
        more = len(items) - NAMED_SHOWN
        return f"{shown} (or {more} more)" if more > 0 else shown

    # --- its own pick, and the plain fallbacks -------------------------------------------------

    def _pool(self, ctx: RecContext) -> list[int]:
        """Candidates not rejected in this loop; items rejected in earlier loops go last."""
        rejected = set(ctx.rejected_this_loop)
        remaining = [c for c in ctx.candidates if c not in rejected]
        if not remaining:  # every candidate was turned down: argue again for the best one
            remaining = list(ctx.candidates)
        remembered = {m["item"] for m in ctx.memory}
        fresh = [c for c in remaining if c not in remembered]
        return fresh or remaining

    def _own_pick(self, ctx: RecContext, evidence: _RecEvidence, item: int) -> str:
        name, n = describe.quoted(self.catalog, item), len(ctx.candidates)
        recent = describe.either(self.catalog, ctx.history[-RECENT_SHOWN:][::-1]).replace(" or ", " and ")
        after = f" after {recent}" if ctx.history else ""
        rank = evidence.rec_rank(item)
        chance = f" (a {percent(evidence.rec[item])} chance by its calibrated scores)"
        note = self._similarity_note(ctx, item) + self._genre_note(ctx, item)
        if rank == 1:
            return f"{name} is the sequential model's top pick among the {n} candidates{after}{chance}.{note}"
        model_pick = min(evidence.belief, key=evidence.rec_rank)
        if model_pick in {*ctx.rejected_this_loop, *(m["item"] for m in ctx.memory)}:
            choice = f"{describe.ordinal(rank)} choice of {n} candidates{after}"
            turned_down = "its better picks were turned down"
            return f"{name} is the sequential model's {choice}{chance}; {turned_down}.{note}"
        return (
            f"The sequential model's top pick is {describe.quoted(self.catalog, model_pick)} "
            f"({percent(evidence.rec[model_pick])}), but {name} ({percent(evidence.rec[item])}, "
            f"{describe.ordinal(rank)}) is closer to your history{after}: weighing both as learned on "
            f"validation, it comes first.{note}"
        )

    def _followed(self, ctx: RecContext, evidence: _RecEvidence, item: int, preferred: list[int]) -> str:
        name, n = describe.quoted(self.catalog, item), len(ctx.candidates)
        wished = describe.either(self.catalog, preferred)
        rank = describe.ordinal(evidence.rec_rank(item))
        return (
            f"You said you would rather have {wished}; of those, {name} is the one I rank highest "
            f"(the sequential model: {rank} of {n}).{self._genre_note(ctx, item)}"
        )

    def _without_model(self, ctx: RecContext) -> Proposal:
        """Ablation (no rec model): genre overlap with the history, else candidate order."""
        pool = self._pool(ctx)
        preferred = [i for i in ctx.last_preferred if i in pool]
        profile = describe.genre_profile(self.catalog, ctx.history)
        n_hist, position = len(ctx.history), {c: i for i, c in enumerate(ctx.candidates)}

        def affinity(i: int) -> float:
            return describe.genre_affinity(self.catalog, i, profile, n_hist)

        item = sorted(preferred or pool, key=lambda i: (-affinity(i), position[i]))[0]
        name, genre_note = describe.quoted(self.catalog, item), self._genre_note(ctx, item)
        if preferred:
            wished = describe.either(self.catalog, preferred)
            return make_proposal(
                item,
                f"You said you would rather have {wished}; of those, {name} is the one that best "
                f"matches your history.{genre_note}",
            )
        if genre_note:
            return make_proposal(item, f"{name} fits your history:{genre_note}")
        return make_proposal(
            item,
            f"{name} is the first candidate not yet turned down; "
            "without the sequential model there is no other evidence.",
        )

    def _similarity_note(self, ctx: RecContext, item: int) -> str:
        if self.vectors is None or not self.calibration.rec_history_weight or not ctx.history:
            return ""
        closest, similarity = self.vectors.closest(item, ctx.history)
        kind = "title and genres" if self.vectors.name == "text" else "co-consumption"
        return (
            f" By {kind} it is most like {describe.quoted(self.catalog, closest)} in your history "
            f"(similarity {similarity:.2f})."
        )

    def _genre_note(self, ctx: RecContext, item: int) -> str:
        profile = describe.genre_profile(self.catalog, ctx.history)
        shared = describe.shared_genres(self.catalog, item, profile)
        if not shared:
            return ""
        top = shared[0]
        return f" It is {top}, like {profile[top]} of your {len(ctx.history)} history items."


@dataclass(frozen=True)
class _RecEvidence:
    """One round's numbers, per candidate: the rec model's calibrated log-probability, the agent's
    belief (that plus weighted history similarity), and the user agent's calibrated log-probability
    as its feedback quotes it (empty when the context carries no reward scores)."""

    candidates: list[int]
    rec: dict[int, float]
    belief: dict[int, float]
    user: dict[int, float]
    trust: float

    @classmethod
    def of(cls, agent: OfflineRecAgent, ctx: RecContext) -> _RecEvidence:
        cal = agent.calibration
        rec = calibrated_log_probs(ctx.rec_scores, cal.rec_temperature)
        belief = list(rec)
        if agent.vectors is not None and cal.rec_history_weight and ctx.history:
            similarity = agent.vectors.history_similarity(ctx.candidates, ctx.history)
            belief = [b + cal.rec_history_weight * s for b, s in zip(belief, similarity, strict=True)]
        belief = calibrated_log_probs(belief, 1.0)  # a distribution over the candidates again
        user: list[float] = []
        if len(ctx.reward_scores) == len(ctx.candidates):
            user = calibrated_log_probs(ctx.reward_scores, cal.reward_temperature)
        return cls(
            list(ctx.candidates),
            dict(zip(ctx.candidates, rec, strict=True)),
            dict(zip(ctx.candidates, belief, strict=True)),
            dict(zip(ctx.candidates, user, strict=True)) if user else {},
            cal.trust,
        )

    def combined(self, item: int) -> float:
        return trust_weighted(self.belief[item], self.user[item], self.trust)

    def best(self, items: Sequence[int], *, combined: bool = False) -> int:
        """The item of ``items`` with the highest belief (or combined evidence); ties: candidate order."""
        position = {c: k for k, c in enumerate(self.candidates)}
        score = self.combined if combined else self.belief.__getitem__
        return max(items, key=lambda i: (score(i), -position[i]))

    def rec_rank(self, item: int) -> int:
        return 1 + sum(1 for c in self.candidates if self.rec[c] > self.rec[item])


class OfflineUserAgent(UserAgent):
    """Judges with the reward model and its memory; see the module docstring for the rules."""

    def __init__(
        self,
        catalog: Dataset,
        *,
        accept_top_k: int,
        accept_share: float,
        use_reward: bool = True,
        calibration: LoopCalibration | None = None,
        vectors: ItemVectors | None = None,
    ):
        self.catalog = catalog
        self.accept_top_k = accept_top_k
        """Besides its favourite, the agent accepts what the reward model ranks within this top-k."""
        self.accept_share = accept_share
        """Share of a judged item list liked in user simulation when no threshold was learned."""
        self.use_reward = use_reward
        self.calibration = calibration or LoopCalibration()
        self.vectors = vectors
        """Item vectors of ``calibration.user_similarity`` (None: no similarity evidence)."""

    # --- one proposal --------------------------------------------------------------------------

    async def judge(self, ctx: UserContext) -> Judgement:
        if not self.use_reward:
            return self._judge_by_genres(ctx)
        name, n = describe.quoted(self.catalog, ctx.item), len(ctx.candidates)
        chance = self._chance(ctx, ctx.item)
        where = f"{describe.ordinal(ctx.reward_rank)} of {n} candidates for my history{chance}"
        if ctx.item in ctx.rejected_this_loop:
            return make_judgement(
                "accept",
                f"I turned {name} down, but you weighed my objection against your model's evidence and "
                f"kept it; I accept it (my reward model ranks it {where}).",
            )
        if ctx.item in ctx.asked_for_this_loop:
            return make_judgement("accept", f"{name} is one I asked for: the reward model ranks it {where}.")
        if ctx.reward_rank <= self.accept_top_k:
            favourite = (
                "my reward model's favourite"
                if ctx.reward_rank == 1
                else "in its top " + str(self.accept_top_k)
            )
            return make_judgement("accept", f"{name} suits me: it is {favourite}, {where}.")
        turned_down = {m["item"] for m in ctx.memory} | set(ctx.rejected_this_loop) | {ctx.item}
        preferred = [i for i in self._preferred_over(ctx) if i not in turned_down]
        wish = f"; I would rather have {describe.either(self.catalog, preferred)}" if preferred else ""
        return make_judgement(
            "reject", f"Not for me: the reward model ranks {name} only {where}{wish}.", preferred
        )

    def verdict_log_probs(self, ctx: UserContext) -> list[float]:
        """The reward model's calibrated log-probabilities over the candidates (empty: not shown)."""
        if not self.use_reward or len(ctx.reward_scores) != len(ctx.candidates):
            return []
        return calibrated_log_probs(ctx.reward_scores, self.calibration.reward_temperature)

    def _preferred_over(self, ctx: UserContext) -> list[int]:
        """The shown top picks the reward model ranks above the proposal (all of them without scores)."""
        if len(ctx.reward_scores) != len(ctx.candidates):
            return list(ctx.top_picks)
        score = dict(zip(ctx.candidates, ctx.reward_scores, strict=True))
        return [i for i in ctx.top_picks if i in score and score[i] > score[ctx.item]]

    def _chance(self, ctx: UserContext, item: int) -> str:
        if len(ctx.reward_scores) != len(ctx.candidates):
            return f" (score {ctx.reward_score:.2f})"
        log_probs = calibrated_log_probs(ctx.reward_scores, self.calibration.reward_temperature)
        return f" (a {percent(log_probs[ctx.candidates.index(item)])} chance)"

    def _judge_by_genres(self, ctx: UserContext) -> Judgement:
        name = describe.quoted(self.catalog, ctx.item)
        profile = describe.genre_profile(self.catalog, ctx.history)
        if not profile:
            return make_judgement("accept", f"{name} is fine: nothing in my history speaks against it.")
        affinity = describe.genre_affinity(self.catalog, ctx.item, profile, len(ctx.history))
        shared = describe.shared_genres(self.catalog, ctx.item, profile)
        if affinity >= GENRE_ACCEPT_SHARE:
            return make_judgement("accept", f"{name} suits me: I watch a lot of {shared[0]}.")
        if shared:
            return make_judgement("reject", f"{name} is {shared[0]}, which only a few of my items are.")
        return make_judgement("reject", f"{name} shares no genre with anything in my history.")

    # --- user simulation -----------------------------------------------------------------------

    async def assess_items(self, ctx: JudgeItemsContext) -> ItemsVerdict:
        return ItemsVerdict(self.judge_items(ctx))  # offline verdicts are free

    def judge_items(self, ctx: JudgeItemsContext) -> list[bool]:
        """One like/dislike per item of ``ctx.items`` (the verdicts :meth:`assess_items` returns)."""
        memory = MemoryView.of(ctx.memory, ctx.accepted)
        if not self.use_reward:
            profile = describe.genre_profile(self.catalog, ctx.history)
            n_hist = len(ctx.history)
            return [
                not profile or describe.genre_affinity(self.catalog, i, profile, n_hist) >= GENRE_ACCEPT_SHARE
                for i in ctx.items
            ]
        if self.calibration.verdict_threshold is not None and len(ctx.reward_log_probs) == len(ctx.items):
            return self._liked_by_evidence(ctx, memory)
        # Uncalibrated: the reward model's best share of the list, and what the loop said outright.
        n_liked = max(1, math.ceil(len(ctx.items) * self.accept_share))
        order = sorted(range(len(ctx.items)), key=lambda i: -ctx.reward_scores[i])
        liked = {ctx.items[i] for i in order[:n_liked]} | set(memory.liked)
        return [i in liked and i not in memory.turned_down for i in ctx.items]

    def _liked_by_evidence(self, ctx: JudgeItemsContext, memory: MemoryView) -> list[bool]:
        """Each item on its own: evidence >= the one validation-chosen threshold. The memory counts
        through its learned weights only (an item turned down as the *next* one may still be a
        later favourite)."""
        evidence, threshold = self.items_evidence(ctx, memory)
        return [e >= threshold for e in evidence]

    def items_evidence(
        self, ctx: JudgeItemsContext, memory: MemoryView | None = None
    ) -> tuple[list[float], float]:
        """Per item, the evidence of the learned verdict and its threshold (like iff evidence >= it);
        empty evidence when the verdict is not the learned one (uncalibrated, no reward model)."""
        cal = self.calibration
        if (
            not self.use_reward
            or cal.verdict_threshold is None
            or len(ctx.reward_log_probs) != len(ctx.items)
        ):
            return [], 0.0
        memory = memory if memory is not None else MemoryView.of(ctx.memory, ctx.accepted)
        features = VerdictFeatures.of(ctx.reward_log_probs, ctx.items, ctx.history, memory, self.vectors)
        return features.evidence(*cal.verdict_weights()), cal.verdict_threshold
