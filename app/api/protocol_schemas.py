"""Request bodies and answers of LangGraph's server protocol, as ``langgraph-sdk`` sends and reads them.

The SDK's own code is the contract (langgraph_sdk/_async/{assistants,threads,runs}.py and
langgraph_sdk/schema.py): the bodies name the fields it sends; fields recloop does not act on
are accepted and ignored where ignoring them changes nothing, and refused (422, naming the
field) where it would (forking from a checkpoint, interrupt_before/after, webhooks, delays).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

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


class _Body(BaseModel):
    model_config = ConfigDict(extra="ignore")


class AssistantSearch(_Body):
    metadata: dict[str, Any] | None = None
    graph_id: str | None = None
    name: str | None = None
    limit: int = Field(10, ge=1, le=1000)
    offset: int = Field(0, ge=0)


class ThreadCreate(_Body):
    thread_id: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    if_exists: Literal["raise", "do_nothing"] | None = None


class ThreadSearch(_Body):
    metadata: dict[str, Any] | None = None
    ids: list[str] | None = Field(None, max_length=1000)
    status: Literal["idle", "busy", "interrupted", "error"] | None = None
    limit: int = Field(10, ge=1, le=1000)
    offset: int = Field(0, ge=0)


class HistoryQuery(_Body):
    limit: int = Field(10, ge=1, le=1000)
    before: str | dict[str, Any] | None = None


class StateAtCheckpoint(_Body):
    checkpoint: dict[str, Any] = Field(default_factory=dict)
    subgraphs: bool = False


class CommandBody(_Body):
    resume: Any = None
    update: Any = None
    goto: Any = None


class RunCreate(_Body):
    assistant_id: str
    input: dict[str, Any] | None = None
    command: CommandBody | None = None
    stream_mode: ProtocolStreamMode | list[ProtocolStreamMode] = "values"
    multitask_strategy: Literal["reject", "interrupt", "rollback", "enqueue"] | None = None
    if_not_exists: Literal["create", "reject"] | None = None
    """Accepted (RemoteGraph always sends "create"), but a missing thread is 404 all the same:
    a thread is created with its user's history (threads.create)."""
    interrupt_before: Any = None
    interrupt_after: Any = None
    checkpoint: dict[str, Any] | None = None
    checkpoint_id: str | None = None
    webhook: str | None = None
    after_seconds: int | None = None
    on_disconnect: Literal["cancel", "continue"] | None = None
    """A stream's client going away: ``cancel`` cancels the loop; by default it goes on."""

    def stream_modes(self) -> list[str]:
        """As asked; app/api/protocol_stream.py says which modes send what."""
        return [self.stream_mode] if isinstance(self.stream_mode, str) else list(self.stream_mode)

    def refused_field(self) -> tuple[str, str] | None:
        """The first field asking for something recloop's runs do not do, and why."""
        if self.multitask_strategy not in (None, "reject"):
            return "multitask_strategy", "only 'reject' is served: a busy thread answers 409"
        for name in ("interrupt_before", "interrupt_after", "checkpoint", "checkpoint_id", "webhook"):
            if getattr(self, name):
                return name, "not served by recloop's runs"
        if self.after_seconds:
            return "after_seconds", "delayed runs are not served"
        if self.command is not None and (self.command.update is not None or self.command.goto is not None):
            return "command", "only command.resume is served"
        if self.command is not None and self.input is not None:
            return "input", "give input (a new loop) or command.resume (answer a paused one), not both"
        return None
