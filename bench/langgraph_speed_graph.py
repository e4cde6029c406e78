"""The graph bench/langgraph_speed.py has LangGraph's development server serve: recloop's own loop
graph, compiled from the same builder, each run given the offline :class:`graph.context.LoopDeps` a
recloop worker builds at start-up.

Loaded by ``langgraph dev`` (a two-line file that its ``langgraph.json`` names calls
``with_deps(service_deps())``; in the benchmark's own venv, this checkout first on ``PYTHONPATH``),
never by recloop. The deps come from the same ``RECLOOP_*``
settings and the same function as the service's (:func:`app.services.runtime.load_loop_deps`: the
same models, calibration and offline agents), once, when the server loads the graph.

Why a subclass: the loop's nodes read their models and agents from LangGraph's runtime *context*
(``runtime.context``), which the service passes to every run (``context=deps``). LangGraph's server
builds a run's context from JSON (the run's ``context``, else its ``configurable``) and coerces it
into the graph's ``context_schema``; models cannot travel as JSON. So the served graph is the
compiled graph with one override: every stream it starts (``ainvoke`` and ``astream_events`` go
through ``astream``) gets this process's deps as its context, as every run of a recloop worker does.
Its nodes, channels and state are the compiled graph's own; its checkpointer is the server's.
"""

from __future__ import annotations

import asyncio
from typing import Any

from langgraph.graph.state import CompiledStateGraph

from graph.builder import build_graph
from graph.context import LoopDeps


class LoopGraphWithDeps(CompiledStateGraph):
    """A compiled loop graph whose every run gets ``loop_deps`` as its runtime context."""

    def __init__(self, *, loop_deps: LoopDeps, **compiled: Any) -> None:
        super().__init__(**compiled)
        self.loop_deps = loop_deps  # in __dict__: Pregel.copy (the server copies per run) keeps it

    def astream(self, input: Any, config: Any = None, *, context: Any = None, **kwargs: Any) -> Any:
        # ``context``: what the server made of the run's JSON; the loop's deps are objects.
        return super().astream(input, config, context=self.loop_deps, **kwargs)


def with_deps(deps: LoopDeps) -> LoopGraphWithDeps:
    """recloop's loop graph compiled (no checkpointer: the server gives its own), bound to ``deps``."""
    compiled = build_graph().compile()
    attrs = {k: v for k, v in compiled.__dict__.items() if k != "__orig_class__"}
    return LoopGraphWithDeps(loop_deps=deps, **attrs)


def service_deps() -> LoopDeps:
    """The offline deps as a recloop worker builds them from its settings (RECLOOP_* environment)."""
    from app.services.runtime import load_loop_deps
    from app.settings import Settings
    from graph.caches import LoopCaches
    from recmodels.dataset import Dataset

    settings = Settings()
    catalog = Dataset.open(settings.datasets_dir, settings.dataset)
    # The server imports graphs in a worker thread (no running loop there).
    return asyncio.run(load_loop_deps(settings, catalog, LoopCaches()))["offline"]
