"""The LLM's answers as weighed evidence, never as orders.

The LLM agents first compute what the offline agent would do (its calibrated belief, the user
agent's feedback, the reward model: :mod:`graph.agents.offline`), then ask the LLM, then combine:

- **Recommendation.** The offline agent's evidence for each candidate is a calibrated
  log-probability (after a rejection, the trust-weighted mix with the feedback); the LLM's pick
  gets ``rec_weight`` nats on top. The pick replaces the offline choice only when that bonus is
  larger than the offline evidence's margin of its own choice over the LLM's pick.
- **Verdict.** The offline verdict's margin is how far the proposal's calibrated reward
  log-probability lies from the reward model's accept boundary (between its ``accept_top_k``-th
  and next best candidate); the LLM's accept/reject overrides it only when ``user_weight`` is larger.
- **User simulation** (``judge_items``): the LLM's like/dislike adds ``+items_weight`` /
  ``-items_weight`` to the offline evidence of each item before the one validation threshold.

A weight of 0 is exactly the offline loop (the LLM is then not even asked). Nor is it asked when
the offline margin is at least the weight, for every answer it could give: the outcome is the
offline one either way, so the call would cost tokens and change nothing (``asked: false`` in the
round's ``llm_evidence``). The weights are fitted
per endpoint on the validation split (:mod:`graph.llm_calibration`); until they are, the agents use
:data:`DEFAULT_WEIGHT`, small enough that the LLM only settles what the offline evidence leaves
nearly undecided.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

PromptForm = Literal["pick", "shortlist"]
PROMPT_FORMS: tuple[PromptForm, ...] = ("pick", "shortlist")
"""``pick``: choose one of all candidates; ``shortlist``: choose one of the offline agent's best
:data:`SHORTLIST_K` candidates (a smaller question a small model can answer)."""
SHORTLIST_K = 5

DEFAULT_WEIGHT = 0.25
"""Conservative default of every LLM weight (nats) where none was fitted for the endpoint: the
LLM's pick wins only when the offline evidence prefers its own choice by less than a factor of
e^0.25 ~ 1.28; its verdict wins only within 0.25 nats of the reward model's accept boundary."""


@dataclass(frozen=True)
class LLMWeights:
    """How much the LLM's answers count, learned on validation for one endpoint."""

    rec_weight: float = DEFAULT_WEIGHT
    user_weight: float = DEFAULT_WEIGHT
    items_weight: float = DEFAULT_WEIGHT
    prompt_form: PromptForm = "pick"
    provenance: dict[str, Any] = field(default_factory=dict)
    """What they were fitted on and how each choice did on validation (empty: the default)."""

    @property
    def learned(self) -> bool:
        return bool(self.provenance)

    @property
    def status(self) -> str:
        """One line for the loop's record, /readyz and the log."""
        values = f"rec {self.rec_weight:g}, user {self.user_weight:g}, items {self.items_weight:g}"
        if self.provenance.get("obey") or self.provenance.get("ignore"):
            return f"set by the caller ({values})"
        if self.learned:
            rows = self.provenance.get("n_rows", "?")
            return f"fitted on {rows} validation rows ({values}; prompt form {self.prompt_form})"
        return (
            f"not fitted for this endpoint: conservative default ({values}); "
            "run `recloop calibrate --agents llm` to fit them"
        )

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> LLMWeights:
        return cls(**{k: raw[k] for k in cls.__dataclass_fields__ if k in raw})

    @classmethod
    def obey(cls) -> LLMWeights:
        """The LLM decides whenever it answers (what the agents did before they weighed it)."""
        return cls(math.inf, math.inf, math.inf, provenance={"obey": True})

    @classmethod
    def ignore(cls) -> LLMWeights:
        """Weight 0 everywhere: exactly the offline loop, no LLM call."""
        return cls(0.0, 0.0, 0.0, provenance={"ignore": True})

    def summary(self) -> dict[str, Any]:
        return {k: v for k, v in self.to_json().items() if k != "provenance"} | {"learned": self.learned}


@dataclass(frozen=True)
class Combined:
    """One combination's outcome: which side decided, and the numbers it was decided on."""

    llm_wins: bool
    margin: float
    """The offline evidence's margin of its own answer over the LLM's (nats; inf: not comparable)."""
    weight: float

    def record(self, offline: Any, llm: Any) -> dict[str, Any]:
        """What the round's record keeps (``RoundRecord.llm_evidence``)."""
        margin = None if math.isinf(self.margin) else round(self.margin, 4)
        return {
            "offline": offline,
            "llm": llm,
            "weight": None if math.isinf(self.weight) else self.weight,
            "margin": margin,
            "decided_by": "llm" if self.llm_wins else ("both" if offline == llm else "offline"),
            "asked": True,
        }

    def unasked(self, offline: Any) -> dict[str, Any]:
        """The record of a call left out because no answer could have outweighed the offline one."""
        return self.record(offline, None) | {"asked": False}


def combine(offline_margin: float, weight: float, agree: bool) -> Combined:
    """The LLM's answer wins iff it differs and its weight exceeds the offline margin (strictly:
    weight 0 never wins, whatever the margin)."""
    wins = not agree and weight > 0 and weight > offline_margin
    return Combined(wins, offline_margin, weight)


def pick_margin(evidence: Mapping[int, float], offline: int, llm: int) -> float:
    """Margin of the offline choice over the LLM's pick under the offline evidence (0 when the
    offline agent has no scores to weigh: the ablation without the rec model)."""
    if not evidence:
        return 0.0
    if offline not in evidence or llm not in evidence:
        return math.inf
    return evidence[offline] - evidence[llm]


def least_pick_margin(evidence: Mapping[int, float], offline: int, shown: Sequence[int]) -> float:
    """The offline choice's smallest margin over any other pick the LLM could make (inf: none can
    be weighed against it; 0 without evidence). When it is at least the weight, no answer of the
    LLM could change the recommendation, so the agent does not ask."""
    return min((pick_margin(evidence, offline, c) for c in shown if c != offline), default=math.inf)


def settled(least_margin: float, weight: float) -> bool:
    """Whether the offline answer stands whatever the LLM says (a finite weight that cannot
    exceed the margin; an obeyed LLM, weight inf, is always asked)."""
    return not math.isinf(weight) and least_margin >= weight


def verdict_margin(log_probs: Sequence[float], index: int, accept_top_k: int) -> float:
    """Distance of item ``index``'s calibrated reward log-probability from the accept boundary
    (midway between the ``accept_top_k``-th and the next best); 0 without reward scores."""
    if not log_probs or len(log_probs) <= accept_top_k:
        return 0.0
    ordered = sorted(log_probs, reverse=True)
    boundary = (ordered[accept_top_k - 1] + ordered[accept_top_k]) / 2
    return abs(log_probs[index] - boundary)


def shortlist(evidence: Mapping[int, float], candidates: Sequence[int], k: int = SHORTLIST_K) -> list[int]:
    """The ``k`` candidates with the most offline evidence, in candidate order (no rank hint)."""
    if not evidence:
        return list(candidates[:k])
    best = set(sorted(candidates, key=lambda c: -evidence.get(c, -math.inf))[:k])
    return [c for c in candidates if c in best]
