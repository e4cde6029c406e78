"""The shape comparison of bench/langgraph_reference.py and bench/langgraph_shapes.py (no server: their
pure functions)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from bench.langgraph_reference import LANGGRAPH_JSON, REFERENCE_GRAPH, REFERENCE_PINS, header_shape
from bench.langgraph_shapes import (
    compare,
    diff,
    final_state_shape,
    grouped,
    markdown,
    sequence_diff,
    shape,
    stream_shape,
)


def test_a_shape_keeps_keys_and_types_and_masks_graph_values():
    state = {
        "values": {"final_item": 3},
        "next": ["judge"],
        "tasks": [{"id": "t", "interrupts": [{"id": "i", "value": {"item": 3}}]}],
        "metadata": {"step": 2},
        "interrupts": [],
        "created_at": None,
    }
    assert shape(state) == {
        "values": "object",
        "next": ["string"],
        "tasks": [{"id": "string", "interrupts": [{"id": "string", "value": "object"}]}],
        "metadata": {"step": "<masked>"},
        "interrupts": [],
        "created_at": "null",
    }
    thread = {"interrupts": {"task-1": [{"id": "i", "value": 1}]}}
    assert shape(thread) == {"interrupts": {"<id>": [{"id": "string", "value": "integer"}]}}


def test_a_diff_names_keys_on_one_side_and_types_that_differ():
    ref = shape({"a": 1, "b": {"c": "x"}, "list": [{"k": 1}], "only_ref": True})
    ours = shape({"a": "1", "b": {"c": "x", "d": 2}, "list": [], "only_ours": None})
    assert diff(ref, ours) == {
        "only_langgraph": ["only_ref"],
        "only_recloop": ["only_ours", "b.d"],
        "type_mismatch": ["a: integer vs string"],
    }
    assert diff(ref, ref) == {"only_langgraph": [], "only_recloop": [], "type_mismatch": []}


def test_waits_and_streams_compare_the_envelope_not_the_state():
    paused = {"rounds": [], "__interrupt__": [{"id": "i", "value": {"item": 1}}]}
    assert final_state_shape(paused) == {
        "<state>": "object",
        "__interrupt__": [{"id": "string", "value": "object"}],
    }
    parts = [
        SimpleNamespace(event="metadata", data={"run_id": "r", "attempt": 1}),
        SimpleNamespace(event="values", data={"x": 1}),
        SimpleNamespace(event="updates", data={"recommend": {"proposal": 1}}),
        SimpleNamespace(event="updates", data={"score": {"verdict": 1}}),
    ]
    assert stream_shape(parts) == {
        "events": ["metadata", "values", "updates:recommend", "updates:score"],
        "data": {
            "metadata": {"run_id": "string", "attempt": "integer"},
            "values": {"<state>": "object"},
            "updates": {"recommend": "<masked>", "score": "<masked>"},
        },
    }
    row = {"call": "runs.get", "only_langgraph": ["kwargs"], "only_recloop": [], "type_mismatch": []}
    table = markdown([{**row, "note": ""}])
    assert "| runs.get | `kwargs` | - | - | - |" in table


def test_stream_parts_are_compared_per_kind_with_the_state_masked_and_their_order_too():
    message = {"type": "ai", "id": "m1", "content": "because", "additional_kwargs": {"item": 5}}
    metadata = {"langgraph_step": 3, "langgraph_node": "recommend"}
    parts = [
        SimpleNamespace(event="metadata", data={"run_id": "r", "attempt": 1}),
        SimpleNamespace(
            event="events", data={"event": "on_chain_start", "name": "recloop", "data": {"input": {}}}
        ),
        SimpleNamespace(
            event="events",
            data={
                "event": "on_chain_start",
                "name": "recommend",
                "metadata": metadata,
                "data": {"input": {"x": 1}},
            },
        ),
        SimpleNamespace(event="messages", data=[message, metadata]),
        SimpleNamespace(event="messages/metadata", data={"m1": {"metadata": metadata}}),
        SimpleNamespace(event="messages/complete", data=[message]),
        SimpleNamespace(event="debug", data={"type": "task", "step": 3, "payload": {"input": {"x": 1}}}),
    ]
    shaped = stream_shape(parts)
    assert shaped["events"] == [
        "metadata", "on_chain_start:recloop", "on_chain_start:recommend", "messages",
        "messages/metadata", "messages/complete", "debug (task)",
    ]  # fmt: skip
    data = shaped["data"]
    assert data["events on_chain_start (node)"]["data"] == {"input": "object"}
    assert data["events on_chain_start (node)"]["metadata"] == {
        "langgraph_step": "<masked>",
        "langgraph_node": "<masked>",
    }
    assert set(data) >= {"events on_chain_start (run)", "debug (task)"}
    assert data["messages"]["[0] message"] == {
        "type": "string", "id": "string", "content": "string", "additional_kwargs": "object"
    }  # fmt: skip
    assert data["messages"]["[1] metadata"] == {"langgraph_step": "<masked>", "langgraph_node": "<masked>"}
    assert data["messages/metadata"] == {
        "<id>": {"metadata": {"langgraph_step": "<masked>", "langgraph_node": "<masked>"}}
    }
    assert data["debug (task)"]["payload"] == {"input": "object"}

    assert sequence_diff(["a", "b", "c"], ["a", "b", "c"]) == []
    assert sequence_diff(["a", "x", "b", "c"], ["a", "c", "b"]) == [
        "only LangGraph's: x",
        "order: a b c vs a c b",
    ]
    ref, ours = {"s": {"events": ["a", "x"], "data": {}}}, {"s": {"events": ["a"], "data": {}}}
    assert compare(ref, ours)[0]["sequence"] == ["only LangGraph's: x"]


def test_stream_headers_are_compared_as_patterns_and_key_paths_grouped_by_parent():
    headers = {"Location": "/threads/T/runs/R/stream", "Content-Location": "/threads/T/runs/R"}
    assert header_shape(headers, {"thread_id": "T", "run_id": "R"}) == {
        "Location: /threads/<thread_id>/runs/<run_id>/stream": "string",
        "Content-Location: /threads/<thread_id>/runs/<run_id>": "string",
    }
    assert header_shape({}, {}) == {"Location: (absent)": "null", "Content-Location: (absent)": "null"}
    assert grouped(["a.m.x", "a.m.y", "b", "c"]) == ["a.m.{x, y}", "{b, c}"]


def test_the_reference_graph_names_recloops_nodes_and_the_pins_hold_the_sdk_of_the_dev_venv():
    from graph.builder import NODE_NAMES

    for node in NODE_NAMES:
        assert f'add_node("{node}"' in REFERENCE_GRAPH
    assert "interrupt(" in REFERENCE_GRAPH
    # The agents speak through a chat model, so LangGraph's server streams message events.
    assert "FakeListChatModel(" in REFERENCE_GRAPH and "recommendation_agent.ainvoke(" in REFERENCE_GRAPH
    assert set(LANGGRAPH_JSON["graphs"]) == {"recloop", "recloop-human"}
    pyproject = (Path(__file__).parents[1] / "pyproject.toml").read_text()
    sdk = next(p for p in REFERENCE_PINS if p.startswith("langgraph-sdk=="))
    assert f'"{sdk}"' in pyproject


async def test_the_reference_graph_runs_a_loop_and_its_human_variant_pauses(tmp_path, monkeypatch):
    import importlib.util
    import sys

    from langgraph.checkpoint.memory import InMemorySaver

    path = tmp_path / "reference_graph.py"  # a module, as `langgraph dev` loads it (its types resolve)
    path.write_text(REFERENCE_GRAPH)
    spec = importlib.util.spec_from_file_location("reference_graph", path)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "reference_graph", module)
    spec.loader.exec_module(module)
    state = await module.recloop.ainvoke({"candidates": [5, 10], "max_rounds": 3})
    assert state["final_item"] == 10 and state["stop_reason"] == "accepted" and len(state["rounds"]) == 2
    assert state["final_reason"] == "second time lucky"  # the user agent's chat model said it
    human = module.recloop_human.builder.compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    paused = await human.ainvoke({"candidates": [5]}, config)
    assert paused["__interrupt__"][0].value["item"] == 5
