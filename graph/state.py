"""The one state of the feedback loop (AFL/FLOW, arXiv 2410.20027, Algorithm 1).

A thread (one session) runs many loops over time: every invocation with a new
:class:`LoopInput` starts a new loop (its ``new_loop`` marker says so, see
``graph.nodes.is_new_loop``), while ``invoke(None)`` or ``Command(resume=...)``
continue the open one. Opening a loop is one pure step, ``graph.nodes.open_loop``,
which the ``recommend`` node takes first on new input: it validates the input, fills
the options the caller left out, scores the candidates once and resets every per-loop
field (:class:`LoopState` says which). The agents' memories (``rec_memory``,
``user_memory``) accumulate across loops on the thread, which is what lets a later
loop remember what the user turned down before. Input keys a caller omits keep their
value from the thread's previous loop (LangGraph channels), so callers should pass
every :class:`LoopInput` key (graph.runner.loop_input does).

Everything here is plain data (ids, strings, numbers) so any checkpointer can
serialise it; models and agents live in :class:`graph.context.LoopDeps`.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Annotated, Any, Literal, NotRequired, Required, get_args

from langgraph.channels import EphemeralValue
from pydantic import ConfigDict, with_config

# typing_extensions: pydantic describes these types as JSON schemas (the protocol's /schemas) only
# from its TypedDict on Python < 3.12.
from typing_extensions import TypedDict

from llm.usage import LLMAttempt, LLMUsage, empty_usage

JudgeMode = Literal["agent", "human"]
"""agent: the user agent judges; human: the loop pauses at ``judge`` for an answer."""
JUDGE_MODES: tuple[JudgeMode, ...] = get_args(JudgeMode)
DEFAULT_JUDGE_MODE: JudgeMode = "agent"
Decision = Literal["accept", "reject"]
StopReason = Literal["accepted", "max_rounds"]


@with_config(ConfigDict(use_attribute_docstrings=True))  # the docstrings document the API's round too
class RoundFacts(TypedDict):
    """What every layer keeps of a finished round: the graph's record, the rounds table and the API's
    round derive their columns and fields from these keys (app/db/loops.py, app/api/schemas.py)."""

    round: int
    """Round number within its loop (1-based)."""
    item: int
    """The proposed item's id."""
    item_title: str
    """The proposed item's title."""
    rec_reason: str
    """Why the recommendation agent proposed it."""
    reward_score: float
    """The reward model's raw score of the item for this user."""
    reward_rank: int
    """1-based rank of the item among the loop's candidates under the reward model."""
    decision: Decision
    """The user's (agent's or human's) judgement of the item."""
    user_reason: str
    """Why the user accepted or rejected it."""
    rec_fallback: bool
    """The LLM recommendation agent failed validation and the offline policy answered."""
    user_fallback: bool
    """The LLM user agent failed validation and the offline policy judged."""
    rec_fallback_cause: NotRequired[str | None]
    """Why the offline policy recommended: 'kind: detail', kind one of budget, length,
    content_filter, timeout, connection, http, invalid, error."""
    user_fallback_cause: NotRequired[str | None]
    """Why the offline policy judged (the same kinds)."""


class RoundRecord(RoundFacts):
    """One finished round as the loop state keeps it: its facts, and what only the graph needs."""

    loop_index: int
    """Which loop of the thread this round belongs to (1-based)."""
    preferred_items: list[int]
    """Items the user agent said it would rather have (offline agents; may be empty)."""
    llm_usage: LLMUsage
    """Both agents' LLM usage in this round."""
    rec_llm_usage: NotRequired[LLMUsage]
    """The recommendation agent's share of ``llm_usage``."""
    user_llm_usage: NotRequired[LLMUsage]
    """The user agent's share of ``llm_usage``."""
    llm_attempts: NotRequired[list[LLMAttempt]]
    """Every LLM attempt of the round, in order."""
    llm_evidence: NotRequired[dict[str, Any] | None]
    """LLM agents: how each agent's LLM answer was weighed against the offline evidence
    (``rec`` / ``user``: the offline and the LLM answer, the weight, the margin, ``decided_by``;
    ``weights``: whether the weights were fitted for this endpoint or are the default)."""
    reason_reading: NotRequired[dict[str, Any] | None]
    """A human judge's reject reason as the steering parser read it ({update, parser, unparsed})."""


class MemoryEntry(TypedDict):
    """What an agent remembers of one rejected round: {Ir, Rr, Ru} of the paper."""

    item: int
    item_title: str
    rec_reason: str
    user_reason: str
    preferred_items: NotRequired[list[int]]


class Proposal(TypedDict):
    """The recommendation agent's answer in the current round (Ir, Rr), waiting to be scored and
    judged: what the agent returns and what the state keeps (:func:`make_proposal` builds one)."""

    item: int
    reason: str
    fallback: bool
    """True when an LLM agent's output was unusable and the offline policy answered."""
    usage: LLMUsage
    fallback_cause: NotRequired[str | None]
    """Why the offline policy answered (``kind: detail``, see llm.client.FailureKind)."""
    attempts: NotRequired[list[LLMAttempt]]
    """Every LLM attempt behind this answer."""
    evidence: NotRequired[dict[str, Any] | None]
    """LLM agents: how the LLM's pick was weighed (graph.agents.llm_evidence.Combined.record)."""


def make_proposal(
    item: int,
    reason: str,
    *,
    fallback: bool = False,
    usage: LLMUsage | None = None,
    fallback_cause: str | None = None,
    attempts: Sequence[LLMAttempt] = (),
    evidence: dict[str, Any] | None = None,
) -> Proposal:
    """A :class:`Proposal` with every key spelled out (an offline answer costs nothing)."""
    return {
        "item": item,
        "reason": reason,
        "fallback": fallback,
        "usage": usage if usage is not None else empty_usage(),
        "fallback_cause": fallback_cause,
        "attempts": list(attempts),
        "evidence": evidence,
    }


class Verdict(TypedDict):
    """The reward model's view of the current proposal."""

    score: float
    rank: int


class Judgement(TypedDict):
    """The user's (agent's or human's) answer to the current proposal (Du, Ru): what the user agent
    returns and what the state keeps (:func:`make_judgement` builds an agent's)."""

    decision: Decision
    reason: str
    preferred_items: list[int]
    """Candidates the user would rather have (named on rejection)."""
    fallback: bool
    usage: LLMUsage
    fallback_cause: NotRequired[str | None]
    attempts: NotRequired[list[LLMAttempt]]
    evidence: NotRequired[dict[str, Any] | None]
    """LLM agents: how the LLM's verdict was weighed (graph.agents.llm_evidence.Combined.record)."""
    reading: NotRequired[dict[str, Any] | None]
    """A human judge's reason read by the steering parser: {update, parser, unparsed}."""


def make_judgement(
    decision: Decision,
    reason: str,
    preferred_items: Sequence[int] = (),
    *,
    fallback: bool = False,
    usage: LLMUsage | None = None,
    fallback_cause: str | None = None,
    attempts: Sequence[LLMAttempt] = (),
    evidence: dict[str, Any] | None = None,
) -> Judgement:
    """An agent's :class:`Judgement` with every key spelled out (an offline one costs nothing)."""
    return {
        "decision": decision,
        "reason": reason,
        "preferred_items": list(preferred_items),
        "fallback": fallback,
        "usage": usage if usage is not None else empty_usage(),
        "fallback_cause": fallback_cause,
        "attempts": list(attempts),
        "evidence": evidence,
    }


MEMORY_WINDOW = 100
"""Rejected rounds an agent remembers. A session lives for many loops: an unbounded memory would
make every step's state copy and checkpoint grow with the session's age (measured: +40 ms per
request after 400 loops), and the LLM prompt shows only the newest entries anyway."""


def remember(memory: list[MemoryEntry], new: list[MemoryEntry]) -> list[MemoryEntry]:
    """Reducer of ``rec_memory`` / ``user_memory``: append, keep the newest ``MEMORY_WINDOW``."""
    return (memory + new)[-MEMORY_WINDOW:]


NewLoopMarker = Annotated[bool, EphemeralValue(bool)]
"""True in the step after new input arrived, cleared after it: marks a loop's opening without
copying the state into a START ``Send`` (which stored the whole state again with every loop)."""


class LoopInput(TypedDict):
    """What a caller passes to start one loop on a thread (the graph's input schema). An option the
    caller leaves out keeps its value from the thread's previous loop, else its default."""

    new_loop: NotRequired[NewLoopMarker]
    """True: this input opens a new loop (graph.runner.loop_input sets it). Ephemeral: set for the
    step after new input, then cleared."""
    history: list[int]
    """The user's items, oldest first."""
    candidates: list[int]
    """Items the loop may recommend; the final item is always one of them."""
    max_rounds: NotRequired[int]
    """Round limit (routing stops on it, not on recursion_limit); default LoopConfig.max_rounds
    (Settings.max_rounds; paper: 4)."""
    judge_mode: NotRequired[JudgeMode]
    """``agent`` (the default): the user agent judges; ``human``: the judge node interrupts for a
    person's answer."""
    preferences: NotRequired[dict[str, Any] | None]
    """Structured steering preferences (natural-language commands), shown to both agents; absent or
    None: the user never steered."""


class LoopState(LoopInput):
    """The full state: the input, the per-loop progress, and the thread's memories.

    Once a loop has opened (``graph.nodes.open_loop``), every key holds a value but the input's
    ephemeral ``new_loop`` and its optional ``preferences``. Before a thread's first loop opens,
    only the input and the fields with a reducer (which start empty) exist.
    """

    max_rounds: Required[int]
    """The input's round limit, filled when the loop opens."""
    judge_mode: Required[JudgeMode]
    """The input's judge, filled when the loop opens."""

    # Per loop: set by open_loop, then advanced by the nodes.
    loop_index: int
    """Number of loops opened on this thread; the current loop's index (1-based)."""
    reason_constraints: dict[str, Any] | None
    """What a human judge's reject reasons ruled out in this loop (Preferences as a dict): the
    recommend node offers no candidate that breaks them; None when the loop opens."""
    prior_item: int | None
    """Im: the rec model's own top candidate, shown to the recommendation agent as a prior."""
    rec_scores: list[float]
    """Rec-model scores aligned with ``candidates`` (computed once per loop)."""
    reward_scores: list[float]
    """Reward-model scores aligned with ``candidates`` (computed once per loop)."""
    proposal: Proposal | None
    """The current round's proposal; None between rounds."""
    verdict: Verdict | None
    """The reward model's score/rank of the current proposal; None between rounds."""
    judgement: Judgement | None
    """The user's answer to the current proposal; None between rounds."""
    rounds: Annotated[list[RoundRecord], operator.add]
    """Rounds of the current loop (reset with ``Overwrite([])`` when a loop opens; starts empty)."""
    final_item: int | None
    """The loop's answer: the accepted item, or the last proposal when the round limit is hit."""
    final_reason: str | None
    """The recommendation reason of ``final_item``."""
    stop_reason: StopReason | None
    """Why the loop ended; None while it runs."""
    llm_seconds: float
    """Wall time this loop's agents spent waiting for the LLM so far (``Settings.llm_loop_budget_s``
    bounds it; a human judge's thinking time does not count)."""

    # Per thread: accumulate across its loops (start empty).
    rec_memory: Annotated[list[MemoryEntry], remember]
    """Mr: the recommendation agent's memory of rejected rounds, across loops of the thread."""
    user_memory: Annotated[list[MemoryEntry], remember]
    """Mu: the user agent's memory of rejected rounds, across loops of the thread."""
