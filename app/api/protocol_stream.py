"""A run's events as LangGraph's server streams them, one Server-Sent Event per part, per stream mode.

- ``values``: the state after each step (the last one carries ``__interrupt__`` if the loop paused,
  as LangGraph's values chunk does);
- ``updates``: each node's update (``{node: update}``; an interrupt is ``{"__interrupt__": [...]}``);
- ``tasks``, ``checkpoints``, ``debug``: LangGraph's own payloads of those modes, as the graph
  yields them (a debug checkpoint also with ``payload.checkpoint`` and ``parent_checkpoint``, the
  ids of its config and its parent's, as LangGraph's server adds them);
- ``events``: LangChain's ``astream_events`` (v2) shape, as LangGraph's server sends it:
  ``on_chain_start`` / ``on_chain_end`` for the run (named by its graph id, its input and its
  output) and ``on_chain_start`` / ``on_chain_stream`` / ``on_chain_end`` for each node (tagged
  ``graph:step:N``, with ``langgraph_step``, ``langgraph_node``, ``langgraph_triggers``,
  ``langgraph_path`` and ``langgraph_checkpoint_ns`` in its metadata), built from the graph's
  debug task starts and results (they carry the step);
- ``messages-tuple`` (event ``messages``: ``[message, metadata]``) and ``messages``
  (``messages/metadata`` then ``messages/complete``): the two agents' words, one AI message per
  proposal (the recommendation agent's reason) and per judgement (the user's reason). These are
  whole answers, not token streams: the loop asks an LLM for structured output, which it weighs
  (graph/README.md), so there are no chat tokens worth streaming. Their metadata is the node's,
  as in the events mode.

``custom``, ``tools`` and ``lifecycle`` are accepted and send nothing: the loop writes none.
"""

from __future__ import annotations

import json
from typing import Any

from sse_starlette import ServerSentEvent

from app.services.protocol import GRAPH_ID
from graph.runner import INTERRUPT, LoopEvent

GRAPH_MODES = {
    "values": {"values"},
    "updates": set(),
    "messages": {"debug"},
    "messages-tuple": {"debug"},
    "events": {"debug", "values"},
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


def served_modes(requested: list[str]) -> list[str]:
    return [mode for mode in requested if mode in GRAPH_MODES]


def graph_modes_for(modes: list[str] | frozenset[str]) -> frozenset[str]:
    """The graph's stream modes a run must record to serve ``modes``."""
    return frozenset(graph_mode for mode in modes for graph_mode in GRAPH_MODES.get(mode, ()))


def _sse(event: str, data: Any) -> ServerSentEvent:
    return ServerSentEvent(data=json.dumps(data), event=event)


def _checkpoint_ids(config: Any) -> dict[str, Any] | None:
    configurable = config.get("configurable") if isinstance(config, dict) else None
    if not isinstance(configurable, dict):
        return None
    return {k: configurable.get(k) for k in ("checkpoint_id", "thread_id", "checkpoint_ns")}


def _with_checkpoint_ids(debug: Any) -> Any:
    """A debug ``checkpoint`` event with ``payload.checkpoint`` and ``payload.parent_checkpoint``
    (``{checkpoint_id, thread_id, checkpoint_ns}`` of its config and its parent's), as LangGraph's
    server adds them."""
    if not isinstance(debug, dict) or debug.get("type") != "checkpoint":
        return debug
    payload = debug.get("payload")
    if not isinstance(payload, dict):
        return debug
    ids = {
        "checkpoint": _checkpoint_ids(payload.get("config")),
        "parent_checkpoint": _checkpoint_ids(payload.get("parent_config")),
    }
    return {**debug, "payload": {**payload, **ids}}


class ProtocolStream:
    """Turns one run's :class:`LoopEvent` s into the SSE parts of the modes a client asked for."""

    def __init__(
        self,
        modes: list[str],
        *,
        thread_id: str,
        run_id: str,
        assistant_id: str | None = None,
        run_input: Any = None,
    ):
        self.modes = set(served_modes(modes))
        self.thread_id, self.run_id = thread_id, run_id
        self.assistant_id, self.run_input = assistant_id, run_input
        self._values: dict[str, Any] = {}
        self._started = False
        self._messages = 0
        self._tasks: dict[str, dict[str, Any]] = {}
        """Each started task (node run) by id: its name, input, triggers and step."""
        self._node_task: dict[str, str] = {}
        """Each node's latest task id."""

    def _metadata(self, task: dict[str, Any] | None = None) -> dict[str, Any]:
        metadata = {"graph_id": GRAPH_ID, "run_id": self.run_id, "thread_id": self.thread_id}
        if self.assistant_id is not None:
            metadata["assistant_id"] = self.assistant_id
        if task is not None:
            name = task.get("name")
            metadata |= {
                "langgraph_step": task.get("step"),
                "langgraph_node": name,
                "langgraph_triggers": task.get("triggers", []),
                "langgraph_path": ["__pregel_pull", name],
                "langgraph_checkpoint_ns": f"{name}:{task.get('id')}",
            }
        return metadata

    def _run_started(self) -> list[ServerSentEvent]:
        if self._started or "events" not in self.modes:
            return []
        self._started = True
        start = {
            "event": "on_chain_start",
            "name": GRAPH_ID,
            "run_id": self.run_id,
            "tags": [],
            "metadata": self._metadata(),
            "data": {"input": self.run_input},
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
        elif event.mode == "debug":
            if "debug" in self.modes:
                out.append(_sse("debug", _with_checkpoint_ids(event.data)))
            out += self._task_parts(event.data)
        elif event.mode in self.modes:  # tasks, checkpoints
            out.append(_sse(event.mode, event.data))
        return out

    def _update_parts(self, event: LoopEvent) -> list[ServerSentEvent]:
        out = []
        if "updates" in self.modes:
            update = {INTERRUPT: event.interrupts} if event.is_interrupt else {event.node: event.data}
            out.append(_sse("updates", update))
        message = self._message(event)
        if message is not None:
            task = self._tasks.get(self._node_task.get(event.node or ""), {"name": event.node})
            metadata = {**self._metadata(task), "checkpoint_ns": f"{event.node}:{task.get('id')}"}
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

    def _task_parts(self, debug: Any) -> list[ServerSentEvent]:
        """A task start (debug ``task``) or result (``task_result``) of the graph: remembered for the
        messages' metadata, and in the events mode the node's ``on_chain_start``, or its
        ``on_chain_stream`` (its writes) and ``on_chain_end``, as astream_events (v2) has them."""
        if not isinstance(debug, dict) or not isinstance(debug.get("payload"), dict):
            return []
        payload, kind = debug["payload"], debug.get("type")
        if kind == "task":
            task = {**payload, "step": debug.get("step")}
            self._tasks[payload.get("id")] = task
            self._node_task[payload.get("name")] = payload.get("id")
            if "events" not in self.modes:
                return []
            return [self._chain_event("on_chain_start", task, {"input": payload.get("input")})]
        if kind != "task_result" or "events" not in self.modes:
            return []
        task = self._tasks.get(payload.get("id"), {**payload, "step": debug.get("step")})
        out = []
        if payload.get("error"):
            data = {"input": task.get("input"), "error": payload["error"]}
        else:
            result = payload.get("result")
            if result:
                out.append(self._chain_event("on_chain_stream", task, {"chunk": result}))
            data = {"output": result, "input": task.get("input")}
        out.append(self._chain_event("on_chain_end", task, data))
        return out

    def _chain_event(self, kind: str, task: dict[str, Any], data: dict[str, Any]) -> ServerSentEvent:
        return _sse(
            "events",
            {
                "event": kind,
                "name": task.get("name"),
                "run_id": task.get("id"),
                "tags": [f"graph:step:{task.get('step')}"],
                "metadata": self._metadata(task),
                "data": data,
                "parent_ids": [self.run_id],
            },
        )

    def finish(self, error: dict[str, str] | None) -> list[ServerSentEvent]:
        """The last parts: the run's own end (events mode), and an ``error`` if it did not finish."""
        out = []
        if self._started:
            end = {
                "event": "on_chain_end",
                "name": GRAPH_ID,
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
