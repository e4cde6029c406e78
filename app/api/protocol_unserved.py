"""LangGraph's calls recloop does not serve, by route: their 404 or 405 says so, and where the docs say why.

A LangGraph client calling one gets the status Starlette's routing gives (404: no such path here;
405: the path is served for other methods, listed in ``Allow``), with a body naming the call and
why recloop does not serve it, instead of a bare "Not Found" that reads like a wrong URL. Every
other unmatched path under the protocol's prefixes gets the same kind of answer without a name.
docs/langgraph.md lists every call, served or not, with the reason.
"""

from __future__ import annotations

import re

DOC = 'docs/langgraph.md lists it under "Served, and not"'
PROTOCOL_PREFIXES = ("/assistants", "/threads", "/runs", "/store")

_ID = r"[^/]+"
UNSERVED: list[tuple[str, str, str, str]] = [
    ("POST", r"/assistants", "assistants.create", "assistants are the loop's variants, fixed by the service"),
    (
        "PATCH",
        rf"/assistants/{_ID}",
        "assistants.update",
        "assistants are the loop's variants, fixed by the service",
    ),
    (
        "DELETE",
        rf"/assistants/{_ID}",
        "assistants.delete",
        "assistants are the loop's variants, fixed by the service",
    ),
    ("POST", rf"/assistants/{_ID}/versions", "assistants.get_versions", "an assistant has one version"),
    ("POST", rf"/assistants/{_ID}/latest", "assistants.set_latest", "an assistant has one version"),
    ("POST", r"/threads/prune", "threads.prune", "`recloop db prune` removes idle threads"),
    ("POST", rf"/threads/{_ID}/copy", "threads.copy", "a copy would duplicate a session's history and usage"),
    (
        "POST",
        rf"/threads/{_ID}/state",
        "threads.update_state",
        "a thread's state is what its loop's nodes write",
    ),
    (
        "PATCH",
        rf"/threads/{_ID}/state",
        "threads.patch_state",
        "a checkpoint's metadata is what the loop wrote",
    ),
    (
        "GET",
        rf"/threads/{_ID}/history",
        "threads.get_history (GET)",
        "POST /threads/{thread_id}/history is served",
    ),
    ("GET", rf"/threads/{_ID}/stream", "threads.join_stream", "runs.join_stream follows a run's events"),
    ("DELETE", rf"/threads/{_ID}/runs/{_ID}", "runs.delete", "a run is a loop of the thread's history, kept"),
    ("POST", rf"/threads/{_ID}/runs/crons", "crons.create_for_thread", "crons are not served"),
    ("POST", r"/runs", "runs.create (stateless)", "a loop needs a thread: its user's history"),
    ("POST", r"/runs/wait", "runs.wait (stateless)", "a loop needs a thread: its user's history"),
    ("POST", r"/runs/stream", "runs.stream (stateless)", "a loop needs a thread: its user's history"),
    ("POST", r"/runs/batch", "runs.create_batch", "a loop needs a thread: its user's history"),
    ("POST", r"/runs/cancel", "runs.cancel_many", "runs.cancel cancels a run of a thread"),
    (
        "GET",
        rf"/runs/{_ID}/stream",
        "runs.join_stream (without a thread)",
        "runs.join_stream takes the thread",
    ),
    ("POST", r"/runs/crons", "crons.create", "crons are not served"),
    ("POST", r"/runs/crons/search", "crons.search", "crons are not served"),
    ("POST", r"/runs/crons/count", "crons.count", "crons are not served"),
    ("PATCH", rf"/runs/crons/{_ID}", "crons.update", "crons are not served"),
    ("DELETE", rf"/runs/crons/{_ID}", "crons.delete", "crons are not served"),
    ("PUT", r"/store/items", "store.put_item", "the store is not served: a session keeps the user's memory"),
    ("GET", r"/store/items", "store.get_item", "the store is not served: a session keeps the user's memory"),
    (
        "DELETE",
        r"/store/items",
        "store.delete_item",
        "the store is not served: a session keeps the user's memory",
    ),
    (
        "POST",
        r"/store/items/search",
        "store.search_items",
        "the store is not served: a session keeps the user's memory",
    ),
    (
        "POST",
        r"/store/namespaces",
        "store.list_namespaces",
        "the store is not served: a session keeps the user's memory",
    ),
]
"""(method, path, the SDK's name of the call, why it is not served)."""
_COMPILED = [(method, re.compile(path), call, why) for method, path, call, why in UNSERVED]


def unserved_detail(method: str, path: str) -> str | None:
    """What a 404/405 on ``path`` says when it is one of LangGraph's calls; None for any other path."""
    for known_method, pattern, call, why in _COMPILED:
        if known_method == method and pattern.fullmatch(path):
            route = pattern.pattern.replace(_ID, "{id}")
            return f"recloop does not serve {call} ({method} {route}): {why}; {DOC}"
    if any(path == prefix or path.startswith(prefix + "/") for prefix in PROTOCOL_PREFIXES):
        return f"recloop does not serve {method} {path} of LangGraph's protocol; {DOC}"
    return None
