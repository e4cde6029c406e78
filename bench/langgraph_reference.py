"""recloop's LangGraph-protocol answers beside those of LangGraph's own server, call by call.

One flow of ``langgraph-sdk`` calls (assistants, threads, runs, streams, an interrupt and its
resume, a 404 and a 409) runs against ``langgraph dev`` (LangGraph's in-memory server, serving a
tiny graph of the same shape as recloop's loop) and against recloop's own server. Each answer is
reduced to its *shape* (a dict: its keys and the shape of each value; a list: the shape of its
first element; a scalar: its JSON type; a stream: its event names and the shape of each event's
data), graph-specific values (the state inside ``values``, interrupt values, schemas) masked, and
the two shapes are compared: keys only in LangGraph's answer, keys only in recloop's, types that
differ (bench/langgraph_shapes.py).

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
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from bench.langgraph_shapes import compare, final_state_shape, markdown, shape, stream_shape

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
def langgraph_dev_process(
    venv: Path, workdir: Path, ready_s: float, *, env: dict[str, str], args: Sequence[str] = (), nice: int = 0
) -> Iterator[tuple[str, subprocess.Popen]]:
    """``langgraph dev`` (in-memory) on a free port, run in ``workdir`` (its langgraph.json), quiet (no
    analytics, version check or tracing; ``env`` adds to that); its URL and process, stopped on exit.
    Both LangGraph benchmarks start it here (this one and bench.langgraph_speed)."""
    from bench.ports import http_ready, reserved_port, wait_ready

    log = workdir / "langgraph-dev.log"
    quiet = {
        "LANGGRAPH_CLI_NO_ANALYTICS": "1",
        "LANGGRAPH_NO_VERSION_CHECK": "1",
        "LANGSMITH_TRACING": "false",
        "LANGCHAIN_TRACING_V2": "false",
    }
    with reserved_port() as port:
        command = [
            *(["nice", "-n", str(nice)] if nice else []), str(venv / "bin" / "langgraph"), "dev",
            "--no-browser", "--no-reload", "--host", "127.0.0.1", "--port", str(port),
            "--config", "langgraph.json", *args,
        ]  # fmt: skip
        with log.open("wb") as out:
            process = subprocess.Popen(
                command, cwd=workdir, env={**os.environ, **quiet, **env}, stdout=out, stderr=subprocess.STDOUT
            )
        url = f"http://127.0.0.1:{port}"
        try:
            wait_ready(
                process, http_ready(f"{url}/ok"), what="langgraph dev", timeout_s=ready_s, log_path=log
            )
        except BaseException:
            process.kill()
            raise
    try:
        yield url, process
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()


@contextlib.contextmanager
def langgraph_dev(venv: Path, workdir: Path, ready_s: float) -> Iterator[str]:
    """``langgraph dev`` (in-memory) serving the reference graph; its URL."""
    (workdir / "reference_graph.py").write_text(textwrap.dedent(REFERENCE_GRAPH))
    (workdir / "langgraph.json").write_text(json.dumps(LANGGRAPH_JSON, indent=2))
    with langgraph_dev_process(venv, workdir, ready_s, env={"PYTHONPATH": ""}, nice=10) as (url, _):
        yield url


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


def add_server_arguments(
    parser: argparse.ArgumentParser, *, venv: Path, database: str, data_dir_help: str
) -> None:
    """--venv (LangGraph's server's own venv), --database-url and --data-dir, as the LangGraph
    benchmarks (this one and bench.langgraph_speed) take them."""
    parser.add_argument(
        "--venv",
        type=Path,
        default=venv,
        help="The venv for LangGraph's server (created and filled if absent).",
    )
    parser.add_argument(
        "--database-url",
        default=os.environ.get("RECLOOP_BENCH_DATABASE_URL", database),
        help="A PostgreSQL server where a fresh database may be created and dropped.",
    )
    parser.add_argument(
        "--data-dir", type=Path, default=Path(os.environ.get("RECLOOP_DATA_DIR", "data")), help=data_dir_help
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_server_arguments(
        parser,
        venv=REPO / ".venv-langgraph-ref",
        database="postgresql://postgres@127.0.0.1:5432/test",
        data_dir_help="A recloop data dir whose datasets/movielens is copied (without --recloop-url).",
    )
    parser.add_argument("--recloop-url", help="A running `recloop serve` (else one is started here).")
    parser.add_argument("--api-key", help="A key of --recloop-url's server.")
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
