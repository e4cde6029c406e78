"""recloop's LangGraph-protocol answers beside those of LangGraph's own server, call by call.

One flow of ``langgraph-sdk`` calls (assistants, threads, runs, streams, an interrupt and its
resume, a 404 and a 409) runs against ``langgraph dev`` (LangGraph's in-memory server, serving a
tiny graph of the same shape as recloop's loop) and against recloop's own server. Each answer is
reduced to its *shape* (a dict: its keys and the shape of each value; a list: the shape of its
first element; a scalar: its JSON type; a stream: its event names and the shape of each event's
data), graph-specific values (the state inside ``values``, interrupt values, schemas) masked, and
the two shapes are compared: keys only in LangGraph's answer, keys only in recloop's, types that
differ.

    python -m bench.langgraph_reference                        # starts both servers
    python -m bench.langgraph_reference --recloop-url URL --api-key KEY   # a running `recloop serve`
    python -m bench.langgraph_reference --json                 # last stdout line: one JSON object

LangGraph's server (``langgraph-api``, ``langgraph-runtime-inmem``) is under the Elastic License
2.0, not an OSI licence: it is never a dependency of recloop. This script installs it, with
``langgraph-cli[inmem]`` (MIT), into a venv of its own (``--venv``, default
``.venv-langgraph-ref/``), only when it is run. Without ``--recloop-url`` it starts recloop's
server the way bench/service.py does: on a fresh database of the PostgreSQL at
``--database-url`` (dropped at the end), with the dataset of ``--data-dir`` (copied) and a tiny
SASRec trained once under ``--venv`` (quality is irrelevant here, only the answers' shapes are).
"""

from __future__ import annotations

import argparse
import contextlib
import fnmatch
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

REPO = Path(__file__).resolve().parents[1]
REFERENCE_PINS = (
    "langgraph-cli[inmem]==0.4.40",  # MIT
    "langgraph-api==0.16.7",  # Elastic License 2.0: in this venv only, never recloop's dependency
    "langgraph-runtime-inmem==0.36.7",  # Elastic License 2.0
    "langgraph-sdk==0.4.14",  # MIT; the version recloop's dev extra pins (pyproject.toml)
)
HISTORY = [49, 180, 257, 293, 0, 171]  # MovieLens item ids (tests/test_api_langgraph.py)
CANDIDATES = [5, 10, 15, 20, 25, 30, 35, 40]

REFERENCE_GRAPH = '''
"""A graph of the same shape as recloop's loop (graph/builder.py), with trivial nodes."""
import asyncio
import operator
from typing import Annotated, Any

from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt
from typing_extensions import NotRequired, TypedDict

# The two agents' words come from a chat model, as a LangGraph node's would, so the server streams
# them as message events (messages, messages-tuple, events). Whole messages, not tokens
# (disable_streaming), as recloop's agents give one reasoned answer each.
recommendation_agent = FakeListChatModel(
    responses=["the next candidate"], name="recommendation_agent", disable_streaming=True
)
user_agent = FakeListChatModel(responses=["second time lucky"], name="user_agent", disable_streaming=True)


class LoopInput(TypedDict):
    candidates: NotRequired[list[int]]
    max_rounds: NotRequired[int]
    delay_s: NotRequired[float]


class LoopState(TypedDict):
    history: NotRequired[list[int]]
    candidates: NotRequired[list[int]]
    max_rounds: NotRequired[int]
    delay_s: NotRequired[float]
    loop_index: NotRequired[int]
    proposal: NotRequired[dict[str, Any] | None]
    verdict: NotRequired[dict[str, Any] | None]
    judgement: NotRequired[dict[str, Any] | None]
    rounds: NotRequired[Annotated[list[dict[str, Any]], operator.add]]
    final_item: NotRequired[int | None]
    final_reason: NotRequired[str | None]
    stop_reason: NotRequired[str | None]


async def recommend(state: LoopState) -> dict[str, Any]:
    await asyncio.sleep(state.get("delay_s") or 0)
    candidates = state.get("candidates") or [1, 2, 3]
    item = candidates[len(state.get("rounds") or []) % len(candidates)]
    said = await recommendation_agent.ainvoke(f"Which of {candidates} next, and why?")
    return {"proposal": {"item": item, "reason": said.content}, "loop_index": 1}


async def score(state: LoopState) -> dict[str, Any]:
    return {"verdict": {"score": 0.5, "rank": 1}}


async def judge(state: LoopState) -> dict[str, Any]:
    decision = "accept" if len(state.get("rounds") or []) >= 1 else "reject"
    said = await user_agent.ainvoke(f"Would you watch {state['proposal']['item']}?")
    return {"judgement": {"decision": decision, "reason": said.content}}


async def human_judge(state: LoopState) -> dict[str, Any]:
    answer = interrupt(
        {
            "round": len(state.get("rounds") or []) + 1,
            "item": state["proposal"]["item"],
            "expects": {"decision": "accept | reject", "reason": "str"},
        }
    )
    return {"judgement": {"decision": answer["decision"], "reason": answer.get("reason", "")}}


async def memory_update(state: LoopState) -> dict[str, Any]:
    rounds = state.get("rounds") or []
    record = {"round": len(rounds) + 1, "item": state["proposal"]["item"], **state["judgement"]}
    update: dict[str, Any] = {"rounds": [record]}
    if record["decision"] == "accept" or record["round"] >= (state.get("max_rounds") or 3):
        update.update(
            final_item=record["item"],
            final_reason=record["reason"],
            stop_reason="accepted" if record["decision"] == "accept" else "max_rounds",
        )
    return update


def route_after_memory_update(state: LoopState) -> str:
    last = state["rounds"][-1]
    done = last["decision"] == "accept" or last["round"] >= (state.get("max_rounds") or 3)
    return END if done else "recommend"


def _build(judge_node):
    graph = StateGraph(LoopState, input_schema=LoopInput)
    graph.add_node("recommend", recommend)
    graph.add_node("score", score)
    graph.add_node("judge", judge_node)
    graph.add_node("memory_update", memory_update)
    graph.add_edge(START, "recommend")
    graph.add_edge("recommend", "score")
    graph.add_edge("score", "judge")
    graph.add_edge("judge", "memory_update")
    graph.add_conditional_edges("memory_update", route_after_memory_update, ["recommend", END])
    return graph.compile()


recloop = _build(judge)
recloop_human = _build(human_judge)
'''

LANGGRAPH_JSON = {
    "dependencies": ["."],
    "graphs": {
        "recloop": "./reference_graph.py:recloop",
        "recloop-human": "./reference_graph.py:recloop_human",
    },
}


def echo(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# --- shapes ------------------------------------------------------------------------------------

MASKED = "<masked>"
# fnmatch patterns over a value's path ("tasks[].interrupts[].value"): how much of it is compared.
# "type": only its JSON type (graph-specific content); "keys": its keys, not their values; "dyn":
# a dict keyed by ids (its keys are data), compared by the shape of its first value.
RULES: dict[str, str] = {
    "values": "type",
    "[].values": "type",
    "*value": "type",
    "*_schema": "type",
    "metadata": "keys",
    "[].metadata": "keys",
    "nodes[].data": "type",
    "interrupts": "dyn",
    "[].interrupts": "dyn",
    "kwargs": "keys",
    "[].kwargs": "keys",
    "*.state": "type",
    "*.result": "type",
}


def json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list | tuple):
        return "array"
    return type(value).__name__


def _rule(path: str, rules: dict[str, str]) -> str | None:
    return next((mode for pattern, mode in rules.items() if fnmatch.fnmatchcase(path, pattern)), None)


def shape(value: Any, path: str = "", rules: dict[str, str] = RULES) -> Any:
    """A JSON value's shape: dict -> {key: shape}, list -> [shape of the first] ([] if empty), scalar
    -> its JSON type name; masked where ``rules`` say so."""
    mode = _rule(path, rules) if path else None
    if mode == "type":
        return json_type(value)
    if mode == "keys" and isinstance(value, dict):
        return {k: MASKED for k in value}
    if mode == "dyn" and isinstance(value, dict):
        return {"<id>": shape(next(iter(value.values())), f"{path}.<id>", rules)} if value else {}
    if isinstance(value, dict):
        return {k: shape(v, f"{path}.{k}" if path else k, rules) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [shape(value[0], f"{path}[]", rules)] if value else []
    return json_type(value)


def final_state_shape(values: Any) -> Any:
    """A wait's or join's answer is the graph's state: only its type and ``__interrupt__`` are protocol."""
    if not isinstance(values, dict):
        return json_type(values)
    out: dict[str, Any] = {"<state>": "object"}
    if "__interrupt__" in values:
        out["__interrupt__"] = shape(values["__interrupt__"], "__interrupt__")
    return out


NODES = ("recommend", "score", "judge", "memory_update")
RUN_NAME = "recloop"  # the run's own name in the events mode: its graph id, on both servers
# How much of a streamed part's data is compared, beyond RULES (paths inside the part's data).
PART_RULES: dict[str, str] = {
    **RULES,
    "input": "type",
    "result": "type",
    "*.input": "type",
    "*.output": "type",
    "*.chunk": "type",
    "*.values": "type",
    "*.metadata": "keys",
    "*content": "type",
    "*additional_kwargs": "type",
    "*.writes": "type",
}


def part_key(event: str, payload: Any) -> str:
    """What a part is compared as: its event name, split by kind where one name carries several
    (the events mode's LangChain events, for the run, a node or something else; debug's types)."""
    if event == "events" and isinstance(payload, dict):
        name = payload.get("name")
        who = "run" if name == RUN_NAME else "node" if name in NODES else name
        return f"events {payload.get('event')} ({who})"
    if event == "debug" and isinstance(payload, dict):
        return f"debug ({payload.get('type')})"
    return event


def message_shape(message: Any) -> Any:
    return shape(message, "", PART_RULES | {"id": "type", "name": "type"})


def part_shape(event: str, payload: Any) -> Any:
    """A streamed part's data shape, graph-specific state masked."""
    if event.startswith("values"):
        return final_state_shape(payload)
    if event.startswith("updates") and isinstance(payload, dict):
        return {k: shape(v, "__interrupt__") if k == "__interrupt__" else MASKED for k, v in payload.items()}
    if event == "messages" and isinstance(payload, list | tuple) and len(payload) == 2:
        return {"[0] message": message_shape(payload[0]), "[1] metadata": shape(payload[1], "metadata")}
    if event == "messages/metadata" and isinstance(payload, dict):
        return {"<id>": shape(next(iter(payload.values()), {}), "", {"metadata": "keys"})}
    if event.startswith("messages/") and isinstance(payload, list):
        return [message_shape(payload[0])] if payload else []
    return shape(payload, "", PART_RULES)


def sequence_item(event: str, payload: Any) -> str:
    if event == "events" and isinstance(payload, dict):
        return f"{payload.get('event')}:{payload.get('name')}"
    if event == "updates" and isinstance(payload, dict):
        return f"updates:{'|'.join(payload)}"
    return part_key(event, payload)


def stream_shape(parts: list[Any]) -> dict[str, Any]:
    """A stream: its event names (consecutive repeats collapsed; the events mode's as
    ``event:name``, updates' as ``updates:node``) and each kind of part's data shape (merged)."""
    order: list[str] = []
    data: dict[str, Any] = {}
    for part in parts:
        event, payload = part.event, part.data
        item = sequence_item(event, payload)
        if not order or order[-1] != item:
            order.append(item)
        key = part_key(event, payload)
        data[key] = merge(data.get(key), part_shape(event, payload))
    return {"events": order, "data": data}


def sequence_diff(ref: list[str], ours: list[str]) -> list[str]:
    """How two streams' event sequences differ: names only in one, or the same names in another order."""
    if ref == ours:
        return []
    out = [f"only LangGraph's: {x}" for x in dict.fromkeys(ref) if x not in ours]
    out += [f"only recloop's: {x}" for x in dict.fromkeys(ours) if x not in ref]
    common_ref = [x for x in ref if x in ours]
    common_ours = [x for x in ours if x in ref]
    if common_ref != common_ours:
        out.append(f"order: {' '.join(common_ref)} vs {' '.join(common_ours)}")
    return out


def merge(a: Any, b: Any) -> Any:
    """The union of two shapes (an event's data over all its events)."""
    if a is None:
        return b
    if isinstance(a, dict) and isinstance(b, dict):
        return {k: merge(a.get(k), b.get(k)) if k in a and k in b else a.get(k, b.get(k)) for k in a | b}
    if isinstance(a, list) and isinstance(b, list):
        return [merge(a[0], b[0])] if a and b else (a or b)
    return a


def diff(ref: Any, ours: Any, path: str = "") -> dict[str, list[str]]:
    """Keys only in the reference's shape, only in ours, and values whose types differ."""
    out: dict[str, list[str]] = {"only_langgraph": [], "only_recloop": [], "type_mismatch": []}

    def walk(a: Any, b: Any, at: str) -> None:
        if isinstance(a, dict) and isinstance(b, dict):
            for k in sorted(a.keys() - b.keys()):
                out["only_langgraph"].append(f"{at}.{k}" if at else k)
            for k in sorted(b.keys() - a.keys()):
                out["only_recloop"].append(f"{at}.{k}" if at else k)
            for k in sorted(a.keys() & b.keys()):
                walk(a[k], b[k], f"{at}.{k}" if at else k)
        elif isinstance(a, list) and isinstance(b, list):
            if a and b:
                walk(a[0], b[0], f"{at}[]")
        elif a == MASKED or b == MASKED:
            return
        elif _type_of(a) != _type_of(b):
            out["type_mismatch"].append(f"{at or '(answer)'}: {_type_of(a)} vs {_type_of(b)}")

    walk(ref, ours, path)
    return out


def _type_of(s: Any) -> str:
    if isinstance(s, dict):
        return "object"
    if isinstance(s, list):
        return "array"
    return str(s)


# --- the flow ----------------------------------------------------------------------------------


def _error(exc: Exception) -> dict[str, Any]:
    response = getattr(exc, "response", None)
    if response is None:
        return {"exception": type(exc).__name__, "message": str(exc)[:200]}
    try:
        body = response.json()
    except ValueError:
        body = response.text[:200]
    return {"status_code": response.status_code, "body": body}


STREAM_MODES = ("events", "messages-tuple", "messages", "tasks", "checkpoints", "debug")
"""The modes streamed one by one, beyond values and updates."""


def header_shape(headers: Any, ids: dict[str, str]) -> dict[str, Any]:
    """A stream's ``Location`` and ``Content-Location``, ids replaced by their names (the pattern is
    the key, so a different one shows as a key on one side)."""
    out: dict[str, Any] = {}
    for name in ("Location", "Content-Location"):
        value = headers.get(name)
        if value is None:
            out[f"{name}: (absent)"] = "null"
            continue
        for what, id_ in ids.items():
            value = value.replace(id_, f"<{what}>")
        out[f"{name}: {value}"] = "string"
    return out


def status_values(answer: Any) -> dict[str, str]:
    """A run list's or a thread's statuses as keys, so that the comparison (of keys) shows them."""
    items = answer if isinstance(answer, list) else [answer]
    return {f"status={item.get('status')}": "string" for item in items if isinstance(item, dict)}


def run_flow(client: Any, raw: dict[str, Any] | None = None) -> dict[str, Any]:
    """The same calls, in the same order, on one server: call name -> its answer's shape.

    An answer that is an HTTP error becomes ``{"status_code", "body"}`` (its shape compared too).
    ``raw``, if given, gets each stream's parts as they came (``[event, data]``)."""
    answers: dict[str, Any] = {}
    raw = {} if raw is None else raw

    def parts_of(name: str, parts: Any) -> list[Any]:
        parts = list(parts)
        raw[name] = [[part.event, part.data] for part in parts]
        return parts

    def call(name: str, fn: Callable[[], Any], transform: Callable[[Any], Any] = shape) -> Any:
        try:
            result = fn()
        except Exception as exc:  # an error answer is an answer: its shape is compared
            answers[name] = {"error": shape(_error(exc), "", {"body.detail": "type", "body.message": "type"})}
            answers[name]["error"]["status_code"] = _error(exc).get("status_code", "none")
            return None
        answers[name] = transform(result)
        return result

    def stream(name: str, thread_id: str, mode: Any, assistant: str = "recloop", **kwargs: Any) -> None:
        kwargs.setdefault("input", {"candidates": CANDIDATES})
        call(
            name,
            lambda: parts_of(name, client.runs.stream(thread_id, assistant, stream_mode=mode, **kwargs)),
            stream_shape,
        )

    tag = uuid.uuid4().hex
    metadata = {"user_id": "reference", "history": HISTORY, "tag": tag}
    run_input = {"candidates": CANDIDATES, "max_rounds": 3}

    found = call("assistants.search", lambda: client.assistants.search(graph_id="recloop")) or []
    # By id: LangGraph's server takes a graph id in runs, but only an assistant id (a UUID) here.
    aid = next((a["assistant_id"] for a in found if a.get("name") == "recloop"), None)
    aid = aid or (found[0]["assistant_id"] if found else "recloop")
    call("assistants.get", lambda: client.assistants.get(aid))
    call("assistants.get_graph", lambda: client.assistants.get_graph(aid))
    call("assistants.get_schemas", lambda: client.assistants.get_schemas(aid))

    thread = call("threads.create", lambda: client.threads.create(metadata=metadata))
    if thread is None:
        return answers
    tid = thread["thread_id"]
    call("threads.get (new)", lambda: client.threads.get(tid))
    call("threads.search", lambda: client.threads.search(metadata={"tag": tag}))
    call("threads.get_state (new)", lambda: client.threads.get_state(tid))

    call("runs.wait", lambda: client.runs.wait(tid, "recloop", input=run_input), final_state_shape)
    stream('runs.stream "values"', tid, "values")
    stream('runs.stream "updates"', tid, "updates")
    stream('runs.stream ["values","updates"]', tid, ["values", "updates"])
    for mode in STREAM_MODES:
        stream(f'runs.stream "{mode}"', tid, mode, input=run_input)

    def stream_headers() -> dict[str, Any]:
        body = {"assistant_id": "recloop", "input": run_input, "stream_mode": ["values"]}
        with client.http.client.stream("POST", f"/threads/{tid}/runs/stream", json=body) as response:
            response.raise_for_status()
            events = [line for line in response.iter_lines() if line.startswith("event:")]
            run_id = (response.headers.get("Content-Location") or "").rstrip("/").rsplit("/", 1)[-1]
            return {**header_shape(response.headers, {"thread_id": tid, "run_id": run_id}),
                    "content-type": response.headers.get("content-type", "").split(";")[0],
                    "events": len(events) > 0}  # fmt: skip

    call("runs.stream (response headers)", stream_headers, lambda h: h)
    # A background run, then a client joining its stream. LangGraph's server streams to a join only
    # the modes the run was created with (and only what comes after the join): both get the modes,
    # and the reference graph's first node waits a second (recloop's agents take longer anyway).
    joined = call(
        "runs.create (to join)",
        lambda: client.runs.create(
            tid, "recloop", input={**run_input, "delay_s": 1}, stream_mode=["values", "updates"]
        ),
    )
    if joined is not None:
        name = 'runs.join_stream ["values","updates"]'
        call(
            name,
            lambda: parts_of(
                name, client.runs.join_stream(tid, joined["run_id"], stream_mode=["values", "updates"])
            ),
            stream_shape,
        )
        with contextlib.suppress(Exception):
            client.runs.join(tid, joined["run_id"])
    run = call("runs.create", lambda: client.runs.create(tid, "recloop", input=run_input))
    if run is not None:
        call("runs.join", lambda: client.runs.join(tid, run["run_id"]), final_state_shape)
        call("runs.get", lambda: client.runs.get(tid, run["run_id"]))
    call("runs.list", lambda: client.runs.list(tid))
    call("threads.get (after runs)", lambda: client.threads.get(tid))
    call("threads.get_state", lambda: client.threads.get_state(tid))
    call("threads.get_history(limit=2)", lambda: client.threads.get_history(tid, limit=2))
    call("threads.update", lambda: client.threads.update(tid, metadata={"title": "renamed"}))
    call(
        "threads.search (sort_by updated_at asc)",
        lambda: client.threads.search(metadata={"tag": tag}, sort_by="updated_at", sort_order="asc"),
    )
    call("threads.search (sort_by bogus: 422)", lambda: client.threads.search(sort_by="bogus"))
    call("threads.count", lambda: client.threads.count(metadata={"tag": tag}))

    human = client.threads.create(metadata={**metadata, "human": True})
    hid = human["thread_id"]
    call(
        "runs.wait (human: interrupt)",
        lambda: client.runs.wait(hid, "recloop-human", input=run_input),
        final_state_shape,
    )
    call("threads.get (interrupted)", lambda: client.threads.get(hid))
    call("threads.get_state (interrupted)", lambda: client.threads.get_state(hid))
    call(
        "runs.wait (human: resume)",
        lambda: client.runs.wait(
            hid, "recloop-human", command={"resume": {"decision": "accept", "reason": "fits"}}
        ),
        final_state_shape,
    )

    streamed = client.threads.create(metadata={**metadata, "human": "streamed"})
    sid = streamed["thread_id"]
    stream('runs.stream "updates" (human: interrupt)', sid, "updates", "recloop-human", input=run_input)
    stream(
        'runs.stream "updates" (human: resume)',
        sid,
        "updates",
        "recloop-human",
        input=None,
        command={"resume": {"decision": "accept", "reason": "fits"}},
    )

    # A paused run: its status, cancelling it, and its thread then (statuses compared as values).
    cancelled = client.threads.create(metadata={**metadata, "human": "cancelled"})
    cid = cancelled["thread_id"]
    stream('runs.stream "values" (human: interrupt)', cid, "values", "recloop-human", input=run_input)
    call("runs.list (human: paused; statuses)", lambda: client.runs.list(cid), status_values)
    paused_runs = client.runs.list(cid)
    if paused_runs:
        call("runs.cancel (human: paused)", lambda: client.runs.cancel(cid, paused_runs[0]["run_id"]))
    call("threads.get (a paused run cancelled; status)", lambda: client.threads.get(cid), status_values)

    call("threads.get (404)", lambda: client.threads.get(str(uuid.uuid4())))
    busy = client.threads.create(metadata={**metadata, "busy": True})
    bid = busy["thread_id"]
    slow = {**run_input, "delay_s": 3}  # the reference graph waits; recloop ignores the key
    first = call(
        "runs.create (first, reject)",
        lambda: client.runs.create(bid, "recloop", input=slow, multitask_strategy="reject"),
    )
    call(
        "runs.create (second, reject: 409)",
        lambda: client.runs.create(bid, "recloop", input=slow, multitask_strategy="reject"),
    )
    if first is not None:
        with contextlib.suppress(Exception):
            client.runs.join(bid, first["run_id"])

    call("threads.delete", lambda: client.threads.delete(tid))
    call("threads.get (deleted: 404)", lambda: client.threads.get(tid))
    for other in (hid, bid, sid, cid):
        with contextlib.suppress(Exception):
            client.threads.delete(other)
    return answers


def compare(reference: dict[str, Any], ours: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for name in list(reference) + [n for n in ours if n not in reference]:
        if name not in reference or name not in ours:
            missing = "LangGraph" if name not in reference else "recloop"
            rows.append({"call": name, "only_langgraph": [], "only_recloop": [], "type_mismatch": [],
                         "note": f"not answered by {missing}"})  # fmt: skip
            continue
        ref, our = reference[name], ours[name]
        streams = all(isinstance(a, dict) and isinstance(a.get("events"), list) for a in (ref, our))
        if streams:  # the data by kind of part; the event names as a sequence
            row = {"call": name, **diff(ref["data"], our["data"], "data"), "note": ""}
            row["sequence"] = sequence_diff(ref["events"], our["events"])
        else:
            row = {"call": name, **diff(ref, our), "note": ""}
        rows.append(row)
    return rows


def grouped(paths: list[str]) -> list[str]:
    """Key paths with a common parent as one: ``a.b.x``, ``a.b.y`` -> ``a.b.{x, y}``."""
    parents: dict[str, list[str]] = {}
    for path in paths:
        parent, _, key = path.rpartition(".")
        parents.setdefault(parent, []).append(key)
    return [
        (f"{parent}." if parent else "") + (keys[0] if len(keys) == 1 else "{" + ", ".join(keys) + "}")
        for parent, keys in parents.items()
    ]


def markdown(rows: list[dict[str, Any]]) -> str:
    def cell(items: list[str], group: bool = False) -> str:
        return "<br>".join(f"`{i}`" for i in (grouped(items) if group else items)) or "-"

    lines = [
        "| call | only in LangGraph's answer | only in recloop's | types (LangGraph vs recloop) "
        "| event names |",
        "|---|---|---|---|---|",
    ]
    for row in rows:
        name = row["call"] + (f" ({row['note']})" if row["note"] else "")
        lines.append(
            f"| {name} | {cell(row['only_langgraph'], True)} | {cell(row['only_recloop'], True)} "
            f"| {cell(row['type_mismatch'])} | {cell(row.get('sequence', []))} |"
        )
    return "\n".join(lines)


# --- the servers -------------------------------------------------------------------------------


def ensure_reference_venv(venv: Path) -> Path:
    """The venv holding LangGraph's server (installed once; re-pinned if REFERENCE_PINS changed)."""
    python = venv / "bin" / "python"
    stamp = venv / "recloop-reference-pins.txt"
    wanted = "\n".join(REFERENCE_PINS)
    if not python.exists():
        echo(f"creating {venv} ...")
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    if not stamp.exists() or stamp.read_text() != wanted:
        echo(f"installing {', '.join(REFERENCE_PINS)} into {venv} (Elastic-2.0 parts stay in this venv) ...")
        subprocess.run(
            ["nice", "-n", "10", str(python), "-m", "pip", "install", "-q", *REFERENCE_PINS], check=True
        )
        stamp.write_text(wanted)
    return venv


def installed_versions(venv: Path) -> dict[str, str]:
    code = (
        "import json, importlib.metadata as m; print(json.dumps({n: m.version(n) for n in "
        "('langgraph-cli', 'langgraph-api', 'langgraph-runtime-inmem', 'langgraph-sdk', 'langgraph', "
        "'langgraph-checkpoint')}))"
    )
    done = subprocess.run(
        [str(venv / "bin" / "python"), "-c", code], check=True, capture_output=True, text=True
    )
    return json.loads(done.stdout)


@contextlib.contextmanager
def langgraph_dev(venv: Path, workdir: Path, ready_s: float) -> Iterator[str]:
    """``langgraph dev`` (in-memory) serving the reference graph; its URL."""
    from bench.ports import http_ready, reserved_port, wait_ready

    (workdir / "reference_graph.py").write_text(textwrap.dedent(REFERENCE_GRAPH))
    (workdir / "langgraph.json").write_text(json.dumps(LANGGRAPH_JSON, indent=2))
    log = workdir / "langgraph-dev.log"
    env = {
        **os.environ,
        "LANGGRAPH_CLI_NO_ANALYTICS": "1",
        "LANGGRAPH_NO_VERSION_CHECK": "1",
        "LANGSMITH_TRACING": "false",
        "LANGCHAIN_TRACING_V2": "false",
        "PYTHONPATH": "",
    }
    with reserved_port() as port:
        command = [
            "nice", "-n", "10", str(venv / "bin" / "langgraph"), "dev", "--no-browser", "--no-reload",
            "--host", "127.0.0.1", "--port", str(port), "--config", "langgraph.json",
        ]  # fmt: skip
        with log.open("wb") as out:
            process = subprocess.Popen(command, cwd=workdir, env=env, stdout=out, stderr=subprocess.STDOUT)
        url = f"http://127.0.0.1:{port}"
        try:
            wait_ready(
                process, http_ready(f"{url}/ok"), what="langgraph dev", timeout_s=ready_s, log_path=log
            )
        except BaseException:
            process.kill()
            raise
    try:
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()


def _recloop_data_dir(source: Path, work: Path, dataset: str, model: str) -> Path:
    """A data dir with a copy of ``dataset`` from ``source`` and a tiny ``model`` (trained once)."""
    from recmodels.artifacts import artifact_path
    from recmodels.dataset import Dataset

    data_dir = work / "recloop-data"
    if not (data_dir / "datasets" / dataset).exists():
        if not (source / "datasets" / dataset).is_dir():
            raise SystemExit(
                f"no dataset {dataset!r} under {source}/datasets: pass --data-dir (a recloop data dir, "
                "e.g. one that `recloop data import` filled), or --recloop-url of a running server"
            )
        shutil.copytree(source / "datasets" / dataset, data_dir / "datasets" / dataset)
    ds = Dataset.open(data_dir / "datasets", dataset)
    if not artifact_path(data_dir / "models", ds.name, model).is_file():
        from recmodels.training import train

        echo(f"training a tiny {model} (once; quality is irrelevant here) ...")
        train(ds, model, models_dir=data_dir / "models", epochs=1, max_train_rows=3000, progress=False)
    return data_dir


@contextlib.contextmanager
def recloop_server(args: argparse.Namespace) -> Iterator[tuple[str, str]]:
    """recloop's server on a fresh database (as bench/service.py starts one); its URL and a key."""
    from bench.service import start_variant, stop_variant

    data_dir = _recloop_data_dir(args.data_dir, args.venv, "movielens", "sasrec")
    options = SimpleNamespace(accept_top_k=1, reward_model="sasrec", concurrency=[1], workers=1)
    server = start_variant(
        "postgres",
        args.database_url,
        data_dir,
        options,
        extra_env={"RECLOOP_DATASET": "movielens", "RECLOOP_REC_MODEL": "sasrec"},
        ready_s=args.ready_s,
    )
    try:
        yield f"http://127.0.0.1:{server.port}", server.key
    finally:
        stop_variant(server, args.database_url)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--venv",
        type=Path,
        default=REPO / ".venv-langgraph-ref",
        help="The venv for LangGraph's server (created and filled if absent).",
    )
    parser.add_argument("--recloop-url", help="A running `recloop serve` (else one is started here).")
    parser.add_argument("--api-key", help="A key of --recloop-url's server.")
    parser.add_argument(
        "--database-url",
        default=os.environ.get("RECLOOP_BENCH_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/test"),
        help="A PostgreSQL server where a fresh database may be created and dropped (without --recloop-url).",
    )
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=Path(os.environ.get("RECLOOP_DATA_DIR", "data")),
        help="A recloop data dir whose datasets/movielens is copied (without --recloop-url).",
    )
    parser.add_argument("--ready-s", type=float, default=180, help="How long a server may take to start.")
    parser.add_argument("--json", action="store_true", help="Last stdout line: one JSON object.")
    parser.add_argument(
        "--raw", type=Path, help="Write every stream's parts, as both servers sent them, here."
    )
    args = parser.parse_args()
    if args.recloop_url and not args.api_key:
        parser.error("--recloop-url needs --api-key")
    args.venv = args.venv.resolve()

    from langgraph_sdk import get_sync_client

    venv = ensure_reference_venv(args.venv)
    versions = installed_versions(venv)
    echo(f"reference: {versions}")
    with contextlib.ExitStack() as stack:
        workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="langgraph-ref-")))
        reference_url = stack.enter_context(langgraph_dev(venv, workdir, args.ready_s))
        if args.recloop_url:
            recloop_url, key = args.recloop_url, args.api_key
        else:
            echo("starting recloop's server ...")
            recloop_url, key = stack.enter_context(recloop_server(args))
        started = time.monotonic()
        echo(f"flow on LangGraph's server at {reference_url} ...")
        raw: dict[str, Any] = {"langgraph": {}, "recloop": {}}
        reference = run_flow(get_sync_client(url=reference_url, api_key=None), raw["langgraph"])
        echo(f"flow on recloop at {recloop_url} ...")
        ours = run_flow(get_sync_client(url=recloop_url, api_key=key), raw["recloop"])
        echo(f"both flows: {time.monotonic() - started:.1f} s")
    if args.raw:
        args.raw.write_text(json.dumps(raw, indent=1, default=str))
    rows = compare(reference, ours)
    print(f"LangGraph's server: {', '.join(f'{k} {v}' for k, v in versions.items())}")
    print(markdown(rows))
    if args.json:
        print(json.dumps({"versions": versions, "rows": rows, "langgraph": reference, "recloop": ours}))


if __name__ == "__main__":
    main()
