"""The graph factory: the one loop graph, *uncompiled*; its dependencies come with each run.

Compile it where it is used, once: the service with its PostgreSQL saver, tests with an
in-memory saver, the evaluation and the CLI without a checkpointer (see graph.runner). Every run
passes its :class:`graph.context.LoopDeps` as LangGraph's runtime context
(``await graph.ainvoke(input, config, context=deps)``); the nodes read it as ``runtime.context``.
The graph is async only: run it with ``ainvoke`` / ``astream``.
"""

from __future__ import annotations

from langgraph.graph import END, START, StateGraph

from graph.context import LoopDeps
from graph.nodes import judge, memory_update, recommend, route_after_memory_update, score
from graph.state import LoopInput, LoopState

NODE_NAMES = ("recommend", "score", "judge", "memory_update")


def build_graph() -> StateGraph:
    """recommend -> score -> judge -> memory_update -> (recommend | END)."""
    graph = StateGraph(LoopState, context_schema=LoopDeps, input_schema=LoopInput)
    graph.add_node("recommend", recommend)
    graph.add_node("score", score)
    graph.add_node("judge", judge)
    graph.add_node("memory_update", memory_update)
    graph.add_edge(START, "recommend")
    graph.add_edge("recommend", "score")
    graph.add_edge("score", "judge")
    graph.add_edge("judge", "memory_update")
    graph.add_conditional_edges("memory_update", route_after_memory_update, ["recommend", END])
    return graph
