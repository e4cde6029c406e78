"""Request bodies of LangGraph's server protocol, as ``langgraph-sdk`` (Python and JavaScript) and
``RemoteGraph`` send them.

The SDKs' own code is the contract (langgraph_sdk/_async/{assistants,threads,runs}.py,
@langchain/langgraph-sdk's client). Every field LangGraph defines is typed as LangGraph's server
types it, so a wrong type is a 422 naming the field. Fields recloop does not act on are accepted
and ignored where ignoring them changes nothing (``stream_subgraphs``, ``durability``, LangSmith's
``feedback_keys``), and refused with a 422 naming them where it would (forking from a checkpoint,
``interrupt_before/after``, webhooks, delays, a run's own ``context`` or ``metadata``). Fields
LangGraph does not define are ignored, as its server ignores them.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Annotated, Any, Literal, get_args

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StrictBool, WithJsonSchema
from pydantic_core import PydanticCustomError

from app.api.schemas import MAX_OFFSET, SOME_TEXT, JsonInt
from app.services.errors import InvalidInput

ProtocolStreamMode = Literal[
    "values",
    "updates",
    "messages",
    "events",
    "custom",
    "debug",
    "tasks",
    "checkpoints",
    "messages-tuple",
    "tools",
    "lifecycle",
]
STREAM_MODES = get_args(ProtocolStreamMode)
ThreadSortBy = Literal["thread_id", "status", "created_at", "updated_at", "state_updated_at"]
SortOrder = Literal["asc", "desc"]
ThreadField = Literal[
    "thread_id",
    "created_at",
    "updated_at",
    "state_updated_at",
    "metadata",
    "config",
    "status",
    "values",
    "interrupts",
]
METADATA_DOC = (
    "At most RECLOOP_MAX_METADATA_BYTES (65,536 by default) as compact UTF-8 JSON; the schema's "
    "x-max-bytes states the server's."
)
_UUID_SCHEMA = {"type": "string", "format": "uuid"}


def _uuid_text(value: Any) -> Any:
    if isinstance(value, str):
        try:
            uuid.UUID(value)
        except ValueError:
            raise PydanticCustomError("uuid", "not an id of LangGraph's form (a UUID)") from None
    return value


Uuid = Annotated[str, BeforeValidator(_uuid_text), WithJsonSchema(_UUID_SCHEMA)]
Limit = Annotated[JsonInt, Field(ge=1, le=1000)]
Offset = Annotated[JsonInt, Field(ge=0, le=MAX_OFFSET)]


def _checkpoint_id(value: Any) -> Any:
    """A checkpoint as LangGraph's clients name one: its id, a checkpoint ``{"checkpoint_id", ...}``
    (the Python SDK, RemoteGraph), or a config ``{"configurable": {"checkpoint_id", ...}}`` (the
    JavaScript SDK's ``before``)."""
    if value is None:
        return None
    if isinstance(value, dict) and isinstance(value.get("configurable"), dict):
        value = value["configurable"]
    if isinstance(value, dict):
        if value.get("checkpoint_ns") not in (None, ""):
            raise PydanticCustomError("checkpoint_ns", "the loop has no subgraphs: checkpoint_ns is ''")
        value = value.get("checkpoint_id")
        if value is None:
            return None
    if not isinstance(value, str):
        raise PydanticCustomError(
            "checkpoint", "a checkpoint id (a UUID), or a checkpoint with its checkpoint_id"
        )
    return _uuid_text(value)


CheckpointRef = Annotated[
    str | None,
    BeforeValidator(_checkpoint_id),
    WithJsonSchema(
        {
            "anyOf": [
                _UUID_SCHEMA,
                {
                    "type": "object",
                    "properties": {
                        "checkpoint_id": _UUID_SCHEMA,
                        "thread_id": {"type": "string"},
                        "checkpoint_ns": {"type": "string", "enum": [""]},
                        "checkpoint_map": {"type": ["object", "null"]},
                    },
                },
                {
                    "type": "object",
                    "properties": {
                        "configurable": {"type": "object", "properties": {"checkpoint_id": _UUID_SCHEMA}}
                    },
                },
                {"type": "null"},
            ]
        }
    ),
]
"""Normalised to the checkpoint's id (None: none named)."""


def _stream_modes(value: Any) -> Any:
    modes = [value] if isinstance(value, str) else value
    if not isinstance(modes, list) or not all(isinstance(mode, str) for mode in modes):
        raise PydanticCustomError("stream_mode", "a stream mode, or a list of them")
    unknown = [mode for mode in modes if mode not in STREAM_MODES]
    if unknown:
        raise PydanticCustomError(
            "stream_mode",
            "not a stream mode of LangGraph's: {unknown} (the modes are {modes})",
            {"unknown": ", ".join(map(repr, unknown)), "modes": ", ".join(STREAM_MODES)},
        )
    return value


StreamModes = Annotated[ProtocolStreamMode | list[ProtocolStreamMode], BeforeValidator(_stream_modes)]


@dataclass(frozen=True)
class Refused:
    """Marks a field LangGraph defines that recloop refuses (422 naming it) unless it asks for
    nothing, one of ``empty``. The field keeps LangGraph's type, checked as usual; the document
    says what recloop accepts."""

    why: str
    empty: tuple[Any, ...] = (None,)

    def __get_pydantic_json_schema__(self, core_schema: Any, handler: Any) -> dict[str, Any]:
        accepted = [{"type": "null"} if value is None else {"const": value} for value in self.empty]
        return {"anyOf": accepted, "description": f"Refused unless empty: {self.why}."}


def refuse(body: BaseModel, *args: str) -> None:
    """422 naming the first field of ``body`` that asks for what recloop does not do, if any: a
    :class:`Refused` field given a value, then what the body's own ``refused_field`` finds."""
    refused = _refused_marked(body)
    if refused is None and hasattr(body, "refused_field"):
        refused = body.refused_field(*args)
    if refused is not None:
        raise InvalidInput(f"{refused[0]}: {refused[1]}", field=refused[0])


def _refused_marked(body: BaseModel) -> tuple[str, str] | None:
    for name, info in type(body).model_fields.items():
        marker = next((m for m in info.metadata if isinstance(m, Refused)), None)
        value = getattr(body, name)
        if marker is not None and not any(
            value == empty and type(value) is type(empty) for empty in marker.empty
        ):
            return name, marker.why
    return None


class _Body(BaseModel):
    model_config = ConfigDict(extra="ignore")


# --- assistants ---------------------------------------------------------------------------------


class AssistantSearch(_Body):
    metadata: dict[str, Any] | None = None
    graph_id: str | None = Field(None, max_length=200)
    name: str | None = Field(None, max_length=200)
    limit: Limit = 10
    offset: Offset = 0
    sort_by: Literal["assistant_id", "graph_id", "name", "created_at", "updated_at"] | None = None
    sort_order: SortOrder | None = None


class AssistantCount(_Body):
    metadata: dict[str, Any] | None = None
    graph_id: str | None = Field(None, max_length=200)
    name: str | None = Field(None, max_length=200)
    limit: Annotated[Any, Refused("a count counts every match")] = None
    offset: Annotated[Any, Refused("a count counts every match")] = None


# --- threads ------------------------------------------------------------------------------------


class ThreadCreate(_Body):
    thread_id: Uuid | None = None
    metadata: dict[str, Any] = Field(
        default_factory=dict,
        description="`history` (required: the item ids the user consumed) and `user_id` seed the thread's "
        "session; any other keys are kept as they are. " + METADATA_DOC,
    )
    if_exists: Literal["raise", "do_nothing"] | None = None
    ttl: Annotated[
        dict[str, Any] | JsonInt | None,
        Refused("threads do not expire in recloop (`recloop db prune` removes idle ones)", (None, {}, 0)),
    ] = None
    supersteps: Annotated[
        list[Any] | None, Refused("a thread's state is what its loops write: it starts empty", (None, []))
    ] = None


class ThreadPatch(_Body):
    metadata: dict[str, Any] | None = Field(
        None,
        json_schema_extra={"properties": {"history": False, "user_id": False}},
        description="Merged into the thread's metadata, key by key. `history` and `user_id` are the "
        "session's: given, they must be what the thread has. " + METADATA_DOC,
    )
    ttl: Annotated[
        dict[str, Any] | JsonInt | None,
        Refused("threads do not expire in recloop (`recloop db prune` removes idle ones)", (None, {}, 0)),
    ] = None


class ThreadSearch(_Body):
    metadata: dict[str, Any] | None = Field(
        None, description="Threads whose metadata holds these. " + METADATA_DOC
    )
    ids: list[Uuid] | None = Field(None, max_length=1000)
    status: Literal["idle", "busy", "interrupted", "error"] | None = None
    values: Annotated[
        dict[str, Any] | None, Refused("threads are not searched by their state's values", (None, {}))
    ] = None
    limit: Limit = 10
    offset: Offset = 0
    sort_by: ThreadSortBy | None = Field(
        None,
        description="Default created_at; state_updated_at is updated_at (a loop's state write updates it).",
    )
    sort_order: SortOrder | None = Field(None, description="Default desc.")
    select: list[ThreadField] | None = Field(
        None, description="The fields of each thread to answer (default all)."
    )
    extract: Annotated[
        dict[str, Any] | None, Refused("threads are answered whole (`select` picks fields)", (None, {}))
    ] = None


class ThreadCount(_Body):
    metadata: dict[str, Any] | None = None
    values: Annotated[
        dict[str, Any] | None, Refused("threads are not searched by their state's values", (None, {}))
    ] = None
    status: Literal["idle", "busy", "interrupted", "error"] | None = None
    limit: Annotated[Any, Refused("a count counts every match")] = None
    offset: Annotated[Any, Refused("a count counts every match")] = None


class HistoryQuery(_Body):
    limit: Limit = 10
    before: CheckpointRef = Field(
        None, description="States older than this checkpoint (its id, or the checkpoint)."
    )
    checkpoint: CheckpointRef = Field(
        None, description="The states up to this checkpoint (its id, or the checkpoint)."
    )
    metadata: dict[str, Any] | None = Field(None, description="States whose checkpoint metadata holds these.")


class StateAtCheckpoint(_Body):
    checkpoint: CheckpointRef = None
    subgraphs: StrictBool = False


# --- runs -----------------------------------------------------------------------------------------


def _nothing(what: str) -> Any:
    """A Command field recloop accepts only when it asks for nothing (RemoteGraph always sends it)."""

    def check(value: Any) -> Any:
        if value not in (None, {}, [], ""):
            raise PydanticCustomError("command", what)
        return None

    empty = [{"type": "null"}, {"const": {}}, {"const": []}, {"const": ""}]
    return Annotated[Any, BeforeValidator(check), WithJsonSchema({"anyOf": empty, "description": what})]


NoUpdate = _nothing("not served: a thread's state is what its loop's nodes write")
NoGoto = _nothing("not served: the loop's graph decides its next node")
NoGraph = _nothing("not served: the loop runs no subgraph and has no parent")
JUDGEMENT_SCHEMA = {
    "type": "object",
    "required": ["decision", "reason"],
    "properties": {
        "decision": {"enum": ["accept", "reject"]},
        "reason": {"type": "string", "minLength": 1, "maxLength": 2000, "pattern": SOME_TEXT},
    },
    "description": "A person's judgement of the proposal the run waits on.",
}


class CommandBody(BaseModel):
    """LangGraph's Command as its clients send it (RemoteGraph: ``{"graph", "update", "resume", "goto"}``)."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={"required": ["resume"]})

    resume: Annotated[Any, WithJsonSchema(JUDGEMENT_SCHEMA)] = None
    update: NoUpdate = None
    goto: NoGoto = None
    graph: NoGraph = None


RUN_INPUT_SCHEMA = {
    "anyOf": [
        {
            "type": "object",
            "properties": {
                "candidates": {"type": "array", "items": {"type": "integer"}},
                "max_rounds": {"type": "integer", "minimum": 1, "maximum": 20},
                "history": False,
            },
            "description": "The loop's input: candidates and max_rounds (other keys are ignored, as a "
            "graph ignores keys outside its input; history is the thread's).",
        },
        {"type": "null"},
    ]
}


class RunConfig(BaseModel):
    """LangGraph's RunnableConfig, typed as LangGraph types it; the loop sets its own recursion limit
    (from ``max_rounds``), so ``recursion_limit``, ``tags``, ``run_name`` and the like change nothing."""

    model_config = ConfigDict(extra="ignore")

    tags: list[Annotated[str, Field(max_length=1000)]] | None = None
    metadata: dict[str, Any] | None = None
    run_name: str | None = Field(None, max_length=1000)
    run_id: Uuid | None = None
    max_concurrency: Annotated[JsonInt, Field(ge=1, le=1_000_000)] | None = None
    recursion_limit: Annotated[JsonInt, Field(ge=1, le=1_000_000)] | None = None
    configurable: dict[str, Any] | None = None

    def refused_field(self, thread_id: str) -> tuple[str, str] | None:
        configurable = self.configurable or {}
        given = configurable.get("thread_id")
        if given is not None and given != thread_id:
            return "config.configurable.thread_id", "the run's thread is the one in its path"
        for name in ("checkpoint_id", "checkpoint_ns", "checkpoint_map"):
            if configurable.get(name) not in (None, "", {}):
                return f"config.configurable.{name}", "forking from a checkpoint is not served"
        return None


class RunCreate(_Body):
    assistant_id: str = Field(max_length=200)
    input: Annotated[dict[str, Any] | None, WithJsonSchema(RUN_INPUT_SCHEMA)] = None
    command: CommandBody | None = None
    config: RunConfig | None = None
    context: Annotated[
        dict[str, Any] | None,
        Refused("the assistant sets the loop's context (its agents and judge)", (None, {})),
    ] = None
    metadata: Annotated[
        dict[str, Any] | None, Refused("a run's metadata is its loop's (loop_index, error)", (None, {}))
    ] = None
    stream_mode: StreamModes = "values"
    stream_subgraphs: StrictBool | None = None
    stream_resumable: StrictBool | None = None
    multitask_strategy: Annotated[
        Literal["reject", "interrupt", "rollback", "enqueue"] | None,
        WithJsonSchema({"enum": ["reject", None], "description": "Only 'reject' is served."}),
    ] = None
    if_not_exists: Literal["create", "reject"] | None = None
    """Accepted (RemoteGraph always sends "create"), but a missing thread is 404 all the same:
    a thread is created with its user's history (threads.create)."""
    interrupt_before: Annotated[
        Literal["*"] | list[str] | None, Refused("the loop pauses only at its human judge", (None, []))
    ] = None
    interrupt_after: Annotated[
        Literal["*"] | list[str] | None, Refused("the loop pauses only at its human judge", (None, []))
    ] = None
    checkpoint: Annotated[
        dict[str, Any] | None, Refused("forking from a checkpoint is not served", (None, {}))
    ] = None
    checkpoint_id: Annotated[Uuid | None, Refused("forking from a checkpoint is not served")] = None
    checkpoint_during: StrictBool | None = None
    durability: Literal["sync", "async", "exit"] | None = None
    webhook: Annotated[str | None, Refused("webhooks are not served", (None, "")), Field(max_length=2000)] = (
        None
    )
    after_seconds: Annotated[
        float | None, Refused("delayed runs are not served", (None, 0.0)), Field(ge=0)
    ] = None
    on_disconnect: Literal["cancel", "continue"] | None = None
    """A stream's client going away: ``cancel`` cancels the loop; by default it goes on."""
    on_completion: Literal["delete", "keep"] | None = None

    def stream_modes(self) -> list[str]:
        """As asked; app/api/protocol_stream.py says which modes send what."""
        return [self.stream_mode] if isinstance(self.stream_mode, str) else list(self.stream_mode)

    def refused_field(self, thread_id: str) -> tuple[str, str] | None:
        """The first field asking for something recloop's runs do not do, and why."""
        if self.multitask_strategy not in (None, "reject"):
            return "multitask_strategy", "only 'reject' is served: a busy thread answers 409"
        refused = self.config.refused_field(thread_id) if self.config is not None else None
        if refused is not None:
            return refused
        if self.command is not None and self.command.resume is None:
            return "command.resume", 'give the judgement: {"decision": "accept" | "reject", "reason": "..."}'
        if self.command is not None and self.input is not None:
            return "input", "give input (a new loop) or command.resume (answer a paused one), not both"
        return None
