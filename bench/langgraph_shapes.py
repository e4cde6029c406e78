"""How bench/langgraph_reference.py compares two servers' answers: each answer reduced to its *shape*
(a dict: its keys and the shape of each value; a list: the shape of its first element; a scalar:
its JSON type; a stream: its event names and the shape of each event's data), graph-specific values
masked, and two shapes diffed into the rows of its table. Pure functions, no server."""

from __future__ import annotations

import fnmatch
from typing import Any

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


# --- the comparison ------------------------------------------------------------------------------


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
