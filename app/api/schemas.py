"""Request and response bodies of the /v1 API (one family per resource).

Every request body refuses fields it does not know (422 naming the field), and every string and
list in one has a maximum length the OpenAPI schema states (some are completed from the settings
at start-up, app/api/openapi.py). The whole body is limited too (RECLOOP_MAX_BODY_BYTES, 413).
"""

from __future__ import annotations

import re
import uuid
from datetime import date, datetime
from typing import TYPE_CHECKING, Annotated, Any, Literal, get_type_hints

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, TypeAdapter, create_model
from pydantic_core import PydanticCustomError

from graph.config import AgentMode
from graph.state import JudgeMode, RoundFacts
from steering.preferences import Preferences, PreferenceUpdate

if TYPE_CHECKING:
    from app.db.models import SteeringCommand
    from app.services.loop_record import LoopOutcome
    from recmodels.dataset import Dataset, Item

NO_NUL = r"^[^\x00]*$"
"""PostgreSQL text cannot hold NUL characters: strings that are stored refuse them."""
SOME_TEXT = r"^[^\x00]*[^\s\x00][^\x00]*$"
"""Not blank, no NUL."""
MAX_OFFSET = 1_000_000_000


def _json_integer(value: Any) -> Any:
    # JSON Schema's integer: 5 and 5.0, but neither true (pydantic's lax mode reads 1) nor "5".
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise PydanticCustomError("int_type", "Input should be a valid integer")
    if isinstance(value, float) and not value.is_integer():
        raise PydanticCustomError(
            "int_from_float", "Input should be a valid integer, got a number with a fraction"
        )
    return int(value)


JsonInt = Annotated[int, BeforeValidator(_json_integer)]
"""An integer as JSON Schema has it (what the OpenAPI schema promises)."""

_DATE = r"\d{4}-\d{2}-\d{2}"
_RFC3339 = re.compile(_DATE + r"[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})")


def _matching(pattern: re.Pattern[str], example: str):
    def check(value: Any) -> Any:
        # The schema says format date / date-time; pydantic alone would also take 0 or 0.5 (Unix times).
        if isinstance(value, str) and not pattern.fullmatch(value):
            raise PydanticCustomError("format", "must look like {example}", {"example": example})
        return value

    return BeforeValidator(check)


Rfc3339 = Annotated[datetime, _matching(_RFC3339, "2026-11-30T12:00:00Z (RFC 3339, with a time zone)")]
IsoDate = Annotated[date, _matching(re.compile(_DATE), "2026-11-30")]
SessionStatus = Literal["idle", "running", "awaiting_feedback"]
LoopStatus = Literal["running", "awaiting_feedback", "completed", "failed"]


class ErrorBody(BaseModel):
    detail: str = Field(examples=["unknown item id 99999: the movielens catalog has ids 0..1681"])
    field: str | None = Field(None, examples=["history[2]"])


# --- sessions -------------------------------------------------------------------------


class SessionCreate(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={"examples": [{"user_id": "user-42", "history": [49, 180, 257, 293]}]},
    )

    user_id: str = Field(
        min_length=1, max_length=200, pattern=NO_NUL, description="Your identifier of the end user."
    )
    history: list[JsonInt] = Field(description="Items the user consumed, oldest first (catalog ids).")


class SessionPublic(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: uuid.UUID
    thread_id: str = Field(description="The LangGraph thread of the session (equal to the id).")
    user_id: str
    dataset: str
    status: SessionStatus
    history: list[int]
    n_loops: int
    created_at: datetime
    updated_at: datetime


class SessionsPublic(BaseModel):
    data: list[SessionPublic]
    count: int = Field(description="Sessions matching the filter (all pages).")


class MemoryEntryPublic(BaseModel):
    item: int
    item_title: str
    rec_reason: str
    user_reason: str


class UsagePublic(BaseModel):
    """LLM usage; every attempt counts, failed and cut-off ones included."""

    model_config = ConfigDict(from_attributes=True)

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = Field(0, description="Prompt tokens the server served from its prompt cache.")
    counted_calls: int = Field(
        0,
        description="Attempts the server reported no usage for: their tokens were counted with the "
        "endpoint's tokenizer or estimated (see each call's `counted`).",
    )
    seconds: float = Field(0.0, description="Wall time spent waiting for the LLM.")


class SessionStatePublic(SessionPublic):
    rec_memory: list[MemoryEntryPublic]
    user_memory: list[MemoryEntryPublic]
    pending: dict[str, Any] | None = Field(description="The proposal awaiting your judgement, if any.")
    usage: UsagePublic = Field(description="LLM usage of every loop and steering command of the session.")


class ConsumptionCreate(BaseModel):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [{"items": [0, 171]}]})

    items: list[JsonInt] = Field(min_length=1, max_length=1000, description="Consumed items, oldest first.")


# --- recommendations -------------------------------------------------------------------


class RecommendationCreate(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {"max_rounds": 4, "agents": "offline", "judge_mode": "agent"},
                {"candidates": [0, 1, 49, 99, 120, 171], "max_rounds": 3, "judge_mode": "human"},
            ]
        },
    )

    candidates: list[JsonInt] | None = Field(
        None, description="Items the loop may recommend; default: the rec model's top unseen items."
    )
    max_rounds: Annotated[int, Field(ge=1, le=20), BeforeValidator(_json_integer)] | None = Field(
        None, description="Round limit (default 4)."
    )
    agents: AgentMode = Field("offline", description="offline: deterministic agents; llm: LLM agents.")
    judge_mode: JudgeMode = Field("agent", description="human: pause at each judgement for /feedback.")


class FeedbackCreate(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={"examples": [{"decision": "reject", "reason": "I have seen enough comedies."}]},
    )

    decision: Literal["accept", "reject"]
    reason: str = Field(min_length=1, max_length=2000, pattern=SOME_TEXT, description="Why, in your words.")


class ItemPublic(BaseModel):
    id: int
    title: str
    attributes: dict[str, Any] = Field(default_factory=dict)

    @classmethod
    def of(cls, catalog: Dataset, item_id: int) -> ItemPublic:
        return cls.from_item(catalog.item(item_id))

    @classmethod
    def from_item(cls, item: Item) -> ItemPublic:
        return cls(id=item.id, title=item.title, attributes=item.attributes)


class CommandResultPublic(BaseModel):
    preferences: Preferences = Field(description="The session's preference memory after the command.")
    parsed: PreferenceUpdate = Field(description="What this command changed.")
    recommendations: list[ItemPublic] = Field(description="The candidate list the loop now works on.")
    understood: bool = Field(description="Every part of the command was understood.")
    unparsed: list[str] = Field(description="Parts not understood, and why (nothing was guessed).")
    parser: str = Field(description="Which parser read the command: offline, llm or learned.")
    fallback: bool = Field(description="The LLM parser failed and the offline parser answered.")
    fallback_cause: str | None = Field(None, description="Why the LLM parser's answer was not used.")
    usage: UsagePublic = Field(description="LLM calls and tokens of this parse (zeros offline).")
    parser_status: dict[str, Any] | None = Field(
        None,
        description="The parser reading commands now and the learned parser's state: ready, training "
        "(with expected_ready_at, UTC), failed (with error) or absent; as /readyz shows it.",
        examples=[{"parser": "offline", "learned": "training", "expected_ready_at": "2026-12-06T05:10:00Z"}],
    )

    @classmethod
    def from_row(
        cls, row: SteeringCommand, catalog: Dataset, parser_status: dict[str, Any] | None = None
    ) -> CommandResultPublic:
        """The answer from the stored command (the first answer, and a keyed retry's whose first
        answer was lost); ``parser_status`` is the parsers' state when it is answered."""
        return cls(
            preferences=Preferences.model_validate(row.preferences),
            parsed=PreferenceUpdate.model_validate(row.parsed),
            recommendations=[ItemPublic.of(catalog, i) for i in row.recommendations],
            understood=row.understood,
            unparsed=list(row.unparsed),
            parser=row.parser or "",
            fallback=row.fallback,
            fallback_cause=row.fallback_cause,
            usage=UsagePublic(**row.usage),
            parser_status=parser_status,
        )


class LLMAttemptPublic(BaseModel):
    """One attempt of one LLM call."""

    agent: Literal["rec", "user", "parser"]
    attempt: int = Field(description="1 for the first try of a step, 2.. for its retries.")
    ok: bool = Field(description="The attempt gave a usable answer.")
    seconds: float
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int
    counted: Literal["server", "tokenizer", "estimate"] = Field(
        description="Who counted the tokens: the server's usage, the endpoint's tokenizer, or an estimate."
    )
    failure: str | None = Field(None, examples=["length: the answer was cut off at the output limit"])


class WeighedAnswerPublic(BaseModel):
    """How one agent's LLM answer was weighed against the offline evidence."""

    offline: Any = Field(description="The offline agent's answer (an item id, or accept / reject).")
    llm: Any = Field(description="The LLM's answer.")
    weight: float | None = Field(description="The LLM's weight in nats (null: it decides when it answers).")
    margin: float | None = Field(
        description="The offline evidence's margin of its own answer over the LLM's (nats; null: "
        "not comparable)."
    )
    decided_by: Literal["llm", "offline", "both"] = Field(
        description="Which answer stands: both when they agree."
    )
    weights: str | None = Field(None, description="Whether the weights were fitted for this endpoint.")
    form: str | None = Field(None, description="Recommendation: the prompt form the LLM was asked in.")


class LLMEvidencePublic(BaseModel):
    rec: WeighedAnswerPublic | None = Field(None, description="The recommendation (null: no LLM answer).")
    user: WeighedAnswerPublic | None = Field(None, description="The verdict (null: no LLM answer).")


class ReasonReadingPublic(BaseModel):
    update: dict[str, Any] = Field(description="The preference update read from the reason.")
    parser: str = Field(description="The steering parser that read it: offline, llm or learned.")
    unparsed: list[str] = Field(default_factory=list, description="Parts not understood (not applied).")


def _fields_of(facts: type, nullable: frozenset[str]) -> dict[str, Any]:
    """Pydantic fields for a TypedDict's keys, in its order: its types (``nullable`` ones also take
    None), required where it requires them, described by its docstrings."""
    schema = TypeAdapter(facts).json_schema()
    fields: dict[str, Any] = {}
    for name, hint in get_type_hints(facts).items():
        default = ... if name in schema["required"] else None
        description = schema["properties"][name].get("description")
        fields[name] = (hint | None if name in nullable else hint, Field(default, description=description))
    return fields


_RoundFactsPublic = create_model(
    "RoundFactsPublic",
    __config__=ConfigDict(from_attributes=True),
    # The rounds table has allowed NULL scores since its first migration; the graph always scores.
    **_fields_of(RoundFacts, nullable=frozenset({"reward_score", "reward_rank"})),
)


class RoundPublic(_RoundFactsPublic):
    """A finished round: its facts (graph.state.RoundFacts, not restated here) and its LLM usage."""

    usage: UsagePublic = Field(default_factory=UsagePublic, description="Both agents' LLM usage.")
    rec_usage: UsagePublic | None = Field(None, description="The recommendation agent's share of usage.")
    user_usage: UsagePublic | None = Field(None, description="The user agent's share (null: no LLM call).")
    llm_attempts: list[LLMAttemptPublic] = Field(
        default_factory=list, description="Every LLM attempt of the round, in order, with its timing."
    )
    reason_reading: ReasonReadingPublic | None = Field(
        None,
        description="A human judge's reject reason as the steering parser read it; what it names is "
        "honoured for the rest of the loop.",
    )
    llm_evidence: LLMEvidencePublic | None = Field(
        None,
        description="LLM agents: how each LLM answer was weighed against the offline evidence "
        "(null: the round asked no LLM, e.g. at weight 0).",
    )

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> RoundPublic:
        """From a graph RoundRecord (its usage keys are named as in the loop state). The agents'
        shares are given where the round made LLM calls, as in the stored rounds."""
        called = bool(record.get("llm_attempts"))
        return cls.model_validate(
            {
                **record,
                "usage": record.get("llm_usage") or {},
                "rec_usage": record.get("rec_llm_usage") if called else None,
                "user_usage": record.get("user_llm_usage") if called else None,
            }
        )


class RecommendationPublic(BaseModel):
    session_id: uuid.UUID
    loop_index: int
    status: Literal["completed", "awaiting_feedback"]
    item: ItemPublic | None = Field(description="The recommendation; null while awaiting feedback.")
    reason: str | None
    stop_reason: Literal["accepted", "max_rounds"] | None
    rounds: list[RoundPublic]
    pending: dict[str, Any] | None = Field(description="The proposal to judge (human judge mode).")
    duration_ms: float
    usage: UsagePublic

    @classmethod
    def from_outcome(cls, outcome: LoopOutcome, catalog: Dataset) -> RecommendationPublic:
        item = None
        if outcome.final_item is not None:
            item = ItemPublic.of(catalog, outcome.final_item)
        return cls(
            session_id=outcome.session_id,
            loop_index=outcome.loop_index,
            status=outcome.status,
            item=item,
            reason=outcome.final_reason,
            stop_reason=outcome.stop_reason,
            rounds=[RoundPublic.from_record(r) for r in outcome.rounds],
            pending=outcome.pending,
            duration_ms=outcome.duration_ms,
            usage=UsagePublic(**outcome.usage),
        )


# --- loop history ----------------------------------------------------------------------


class LoopResumedPublic(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    step: int | None = Field(
        description="LangGraph's step of the checkpoint it went on from (null: no checkpoint of the loop "
        "was committed, so it started again from its input)."
    )
    next: list[str] = Field(description="The nodes that ran first on resuming (e.g. ['recommend']).")
    checkpoint_id: str | None = Field(description="The checkpoint it went on from.")
    at: datetime = Field(description="When it was resumed.")
    times: int = Field(description="How often the loop was resumed (its latest resumption is shown).")


class LoopPublic(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    loop_index: int
    status: LoopStatus
    params: dict[str, Any]
    final_item: int | None
    final_reason: str | None
    stop_reason: str | None
    started_at: datetime
    finished_at: datetime | None
    duration_ms: float | None
    llm_calls: int
    prompt_tokens: int
    completion_tokens: int
    usage: UsagePublic = Field(description="The loop's LLM usage (the three columns above, and more).")
    error: str | None = Field(description="Why a failed loop failed.")
    cancelled: bool = Field(
        False,
        description="A failed loop its client ended: a run cancelled, or a paused loop abandoned at "
        "its judge.",
    )
    rounds: list[RoundPublic]
    resumed_from: LoopResumedPublic | None = Field(
        None,
        description="Set when the loop's worker stopped mid-run and another worker continued it from "
        "the thread's last committed checkpoint (null: it ran in one go).",
    )


class LoopCancel(BaseModel):
    model_config = ConfigDict(
        extra="forbid", json_schema_extra={"examples": [{"reason": "the user left before judging"}]}
    )

    reason: str | None = Field(
        None, min_length=1, max_length=200, pattern=SOME_TEXT, description="Why, kept in the loop's error."
    )


class LoopsPublic(BaseModel):
    data: list[LoopPublic]
    count: int


class ItemsPublic(BaseModel):
    data: list[ItemPublic]
    count: int


# --- usage -------------------------------------------------------------------------------


class DayUsagePublic(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    day: date = Field(description="UTC day.")
    usage: UsagePublic
    fallbacks: int = Field(description="Agent steps and commands answered by an offline fallback.")


class KeyUsagePublic(BaseModel):
    data: list[DayUsagePublic] = Field(description="Per UTC day, oldest first.")
    total: UsagePublic = Field(description="Sum over the days listed.")


# --- the graph and its checkpoints (what LangGraph Studio users expect to see) ----------------


class GraphEdgePublic(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    source: str
    target: str
    conditional: bool = Field(description="Taken or not by a routing function (drawn dashed).")


class GraphPublic(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    nodes: list[str] = Field(description="Node names, __start__ first and __end__ last.")
    edges: list[GraphEdgePublic]
    mermaid: str = Field(description="The same graph as Mermaid flowchart text.")


class CheckpointPublic(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    checkpoint_id: str
    step: int
    source: str = Field(description="input (new input), loop (a node ran) or update (a resume).")
    nodes: list[str] = Field(description="The node(s) whose writes this checkpoint holds.")
    next: list[str] = Field(description="The node(s) that run next; empty when the loop has ended.")
    created_at: str | None
    state: dict[str, Any] = Field(
        description="Key fields: loop_index, round, n_candidates, proposal_item, reward_rank, "
        "reward_score, decision, final_item, stop_reason, rec_memory and user_memory sizes."
    )


class CheckpointsPublic(BaseModel):
    data: list[CheckpointPublic]
    count: int


class CandidateScorePublic(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    item: int
    title: str
    position: int = Field(description="1-based place in the list the agents saw.")
    rec_score: float
    rec_rank: int
    reward_score: float
    reward_rank: int
    proposed_in: list[int] = Field(description="The rounds that proposed this item.")
    final: bool = Field(description="The loop's answer.")
    consumed_later: bool = Field(
        description="Consumed by the user after the loop: the true item, where known."
    )


class LoopCandidatesPublic(BaseModel):
    loop_index: int
    proposals: list[int] = Field(description="The item of each round, first round first.")
    data: list[CandidateScorePublic]
