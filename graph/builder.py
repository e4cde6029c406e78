"""The graph factory: dependencies in, an *uncompiled* StateGraph out.

Compile it where it is used: the service with its PostgreSQL saver, tests with
an in-memory saver, the evaluation without a checkpointer (see graph.runner).
"""

from __future__ import annotations

from langchain_core.runnables import RunnableLambda
from langgraph.graph import END, START, StateGraph

from graph.context import LoopDeps
from graph.nodes import LoopNodes, route_after_memory_update
from graph.state import LoopInput, LoopState

NODE_NAMES = ("recommend", "score", "judge", "memory_update")


def build_graph(deps: LoopDeps) -> StateGraph:
    """recommend -> score -> judge -> memory_update -> (recommend | END)."""
    nodes = LoopNodes(deps)
    graph = StateGraph(LoopState, input_schema=LoopInput)
    # One node, two bodies: `invoke` runs the sync one, `ainvoke` the async one (LLM calls don't block).
    graph.add_node("recommend", RunnableLambda(nodes.recommend, afunc=nodes.arecommend, name="recommend"))
    graph.add_node("score", nodes.score)
    graph.add_node("judge", RunnableLambda(nodes.judge, afunc=nodes.ajudge, name="judge"))
    graph.add_node("memory_update", nodes.memory_update)
    graph.add_edge(START, "recommend")
    graph.add_edge("recommend", "score")
    graph.add_edge("score", "judge")
    graph.add_edge("judge", "memory_update")
    graph.add_conditional_edges("memory_update", route_after_memory_update, ["recommend", END])
    return graph
