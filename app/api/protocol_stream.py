"""A run's events as LangGraph's server streams them, one Server-Sent Event per part, per stream mode.

- ``values``: the state after each step (the last one carries ``__interrupt__`` if the loop paused);
- ``updates``: each node's update (``{node: update}``; an interrupt is ``{"__interrupt__": [...]}``);
- ``tasks``, ``checkpoints``, ``debug``: LangGraph's own payloads of those modes, as the graph
  yields them;
- ``events``: LangChain's ``astream_events`` (v2) shape, ``on_chain_start`` / ``on_chain_end``, for
  the run (name ``LangGraph``) and each node, built from the graph's task starts and results;
- ``messages-tuple`` (event ``messages``: ``[message, metadata]``) and ``messages``
  (``messages/metadata`` then ``messages/complete``): the two agents' words, one AI message per
  proposal (the recommendation agent's reason) and per judgement (the user's reason). These are
  whole answers, not token streams: the loop asks an LLM for structured output, which it weighs
  (graph/README.md), so there are no chat tokens worth streaming.

``custom``, ``tools`` and ``lifecycle`` are accepted and send nothing: the loop writes none.
"""

from __future__ import annotations

import json
from typing import Any

from sse_starlette import ServerSentEvent

from graph.runner import INTERRUPT, LoopEvent

GRAPH_MODES = {
    "values": {"values"},
    "updates": set(),
    "messages": set(),
    "messages-tuple": set(),
    "events": {"tasks", "values"},
    "tasks": {"tasks"},
    "checkpoints": {"checkpoints"},
    "debug": {"debug"},
}
"""For each protocol stream mode, the graph's stream modes (beyond updates) it is made from."""
BACKGROUND_MODES = frozenset(GRAPH_MODES)
"""What a background run records for the clients that join it: every mode (LangGraph's default)."""
SPEAKERS = {
    "recommend": ("proposal", "recommendation_agent"),
    "judge": ("judgement", "user_agent"),
}
"""The nodes whose update carries an agent's words: node -> (key of the answer, speaker)."""
RUN_NAME = "LangGraph"


def served_modes(requested: list[str]) -> list[str]:
    return [mode for mode in requested if mode in GRAPH_MODES]


def graph_modes_for(modes: list[str] | frozenset[str]) -> frozenset[str]:
    """The graph's stream modes a run must record to serve ``modes``."""
    return frozenset(graph_mode for mode in modes for graph_mode in GRAPH_MODES.get(mode, ()))


def _sse(event: str, data: Any) -> ServerSentEvent:
    return ServerSentEvent(data=json.dumps(data), event=event)


class ProtocolStream:
    """Turns one run's :class:`LoopEvent` s into the SSE parts of the modes a client asked for."""

    def __init__(self, modes: list[str], *, thread_id: str, run_id: str):
        self.modes = set(served_modes(modes))
        self.thread_id, self.run_id = thread_id, run_id
        self._values: dict[str, Any] = {}
        self._started = False
        self._messages = 0

    def _metadata(self, node: str | None = None) -> dict[str, Any]:
        metadata = {"thread_id": self.thread_id, "run_id": self.run_id, "graph_id": RUN_NAME}
        if node is not None:
            metadata["langgraph_node"] = node
        return metadata

    def _run_started(self) -> list[ServerSentEvent]:
        if self._started or "events" not in self.modes:
            return []
        self._started = True
        start = {
            "event": "on_chain_start",
            "name": RUN_NAME,
            "run_id": self.run_id,
            "tags": [],
            "metadata": self._metadata(),
            "data": {"input": None},
            "parent_ids": [],
        }
        return [_sse("events", start)]

    def parts(self, position: int, event: LoopEvent) -> list[ServerSentEvent]:
        """The SSE parts of the run's event at ``position`` of its log; the last one carries the
        position as its id, so a client resuming after it (Last-Event-ID) misses nothing."""
        out = self._parts(event)
        if out:
            out[-1].id = str(position)
        return out

    def _parts(self, event: LoopEvent) -> list[ServerSentEvent]:
        out = self._run_started()
        if event.mode == "values":
            self._values = event.data
            if "values" in self.modes:
                out.append(_sse("values", event.data))
        elif event.mode == "updates":
            out += self._update_parts(event)
        elif event.mode == "tasks":
            if "tasks" in self.modes:
                out.append(_sse("tasks", event.data))
            if "events" in self.modes:
                out.append(_sse("events", self._chain_event(event.data)))
        elif event.mode in self.modes:  # checkpoints, debug
            out.append(_sse(event.mode, event.data))
        return out

    def _update_parts(self, event: LoopEvent) -> list[ServerSentEvent]:
        out = []
        if event.is_interrupt and "values" in self.modes:
            out.append(_sse("values", {**self._values, INTERRUPT: event.interrupts}))
        if "updates" in self.modes:
            update = {INTERRUPT: event.interrupts} if event.is_interrupt else {event.node: event.data}
            out.append(_sse("updates", update))
        message = self._message(event)
        if message is not None:
            metadata = self._metadata(event.node)
            if "messages-tuple" in self.modes:
                out.append(_sse("messages", [message, metadata]))
            if "messages" in self.modes:
                out.append(_sse("messages/metadata", {message["id"]: {"metadata": metadata}}))
                out.append(_sse("messages/complete", [message]))
        return out

    def _message(self, event: LoopEvent) -> dict[str, Any] | None:
        """The agent's answer in a node's update as an AI message (LangChain's serialised form)."""
        if not ({"messages", "messages-tuple"} & self.modes) or event.node not in SPEAKERS:
            return None
        key, speaker = SPEAKERS[event.node]
        answer = event.data.get(key) if isinstance(event.data, dict) else None
        if not isinstance(answer, dict) or not answer.get("reason"):
            return None
        self._messages += 1
        details = {k: answer[k] for k in ("item", "decision", "preferred_items", "fallback") if k in answer}
        return {
            "type": "ai",
            "id": f"{self.run_id}:{self._messages}",
            "name": speaker,
            "content": answer["reason"],
            "additional_kwargs": details,
            "response_metadata": {},
            "tool_calls": [],
            "invalid_tool_calls": [],
            "usage_metadata": None,
        }

    def _chain_event(self, task: dict[str, Any]) -> dict[str, Any]:
        """A task start (``input``) or result (``result``) of the graph as an astream_events event."""
        ended = "result" in task or "error" in task
        data: dict[str, Any] = {}
        if ended:
            data["output"] = task.get("result")
            if task.get("error"):
                data["error"] = task["error"]
        else:
            data["input"] = task.get("input")
        metadata = {**self._metadata(task.get("name")), "langgraph_triggers": task.get("triggers", [])}
        return {
            "event": "on_chain_end" if ended else "on_chain_start",
            "name": task.get("name"),
            "run_id": task.get("id"),
            "tags": [],
            "metadata": metadata,
            "data": data,
            "parent_ids": [self.run_id],
        }

    def finish(self, error: dict[str, str] | None) -> list[ServerSentEvent]:
        """The last parts: the run's own end (events mode), and an ``error`` if it did not finish."""
        out = []
        if self._started:
            end = {
                "event": "on_chain_end",
                "name": RUN_NAME,
                "run_id": self.run_id,
                "tags": [],
                "metadata": self._metadata(),
                "data": {"output": self._values} if error is None else {"error": error["message"]},
                "parent_ids": [],
            }
            out.append(_sse("events", end))
        if error is not None:
            out.append(_sse("error", error))
        return out
