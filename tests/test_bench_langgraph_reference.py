"""The shape comparison of bench/langgraph_reference.py (no server: its pure functions)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from bench.langgraph_reference import (
    LANGGRAPH_JSON,
    REFERENCE_GRAPH,
    REFERENCE_PINS,
    diff,
    final_state_shape,
    markdown,
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
        "events": ["metadata", "values", "updates"],
        "data": {
            "metadata": {"run_id": "string", "attempt": "integer"},
            "values": {"<state>": "object"},
            "updates": {"recommend": "<masked>", "score": "<masked>"},
        },
    }
    row = {"call": "runs.get", "only_langgraph": ["kwargs"], "only_recloop": [], "type_mismatch": []}
    table = markdown([{**row, "note": ""}])
    assert "| runs.get | `kwargs` | - | - |" in table


def test_the_reference_graph_names_recloops_nodes_and_the_pins_hold_the_sdk_of_the_dev_venv():
    from graph.builder import NODE_NAMES

    for node in NODE_NAMES:
        assert f'add_node("{node}"' in REFERENCE_GRAPH
    assert "interrupt(" in REFERENCE_GRAPH
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
    human = module.recloop_human.builder.compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    paused = await human.ainvoke({"candidates": [5]}, config)
    assert paused["__interrupt__"][0].value["item"] == 5
