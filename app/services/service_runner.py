"""What runs the service's loops in a worker: the graph compiled on the service's saver, the agents'
dependencies, and the loops this worker runs now (app/services/loops.py runs them,
app/services/recovery.py resumes what is left). The evaluation's runner, with no saver, is
graph.runner.LoopRunner."""

from __future__ import annotations

import asyncio
import os
import uuid
from dataclasses import dataclass, field

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph.state import CompiledStateGraph

from app.settings import Settings
from graph.caches import LoopCaches
from graph.config import AgentMode
from graph.context import LoopDeps

LoopKey = tuple[uuid.UUID, int]
"""A loop: (session id, loop number)."""


@dataclass(frozen=True, eq=False)
class ServiceRunner:
    settings: Settings
    saver: BaseCheckpointSaver
    loop_deps: dict[AgentMode, LoopDeps]
    """The loop's dependencies by agent mode: a run passes one as the graph's runtime context."""
    graph: CompiledStateGraph | None = None
    """The loop graph compiled once on the saver (None: no models loaded); every agent mode runs it."""
    loop_caches: LoopCaches = field(default_factory=LoopCaches)
    """What this worker's loops computed once (calibrations, text item vectors)."""
    worker_id: str = field(default_factory=lambda: f"{os.getpid()}:{uuid.uuid4().hex[:24]}")
    """This worker process, as its loops name it (app/services/recovery.py): its pid (for people
    reading the history) and a random part (unique across machines and restarts)."""
    inflight: set[LoopKey] = field(default_factory=set)
    """The loops this worker runs right now."""
    unrecorded: dict[LoopKey, str] = field(default_factory=dict)
    """Loops whose failure could not be written (the database was gone), with the error to record."""
    tasks: set[asyncio.Future] = field(default_factory=set)
    """Runs in tasks of their own that still run (referenced here so they are not collected)."""

    @property
    def models_loaded(self) -> bool:
        return self.graph is not None and "offline" in self.loop_deps

    @property
    def agent_modes(self) -> list[AgentMode]:
        """The agent modes loops can run with (``llm`` needs an endpoint), sorted."""
        return sorted(self.loop_deps) if self.graph is not None else []
