"""kill -9 through LangGraph's protocol: a `recloop serve` process is SIGKILLed while a human-judged
run waits on its interrupt; a new process serves the same thread, which still shows the interrupt,
and the official SDK resumes it with a Command to the end."""

from __future__ import annotations

import signal

import pytest
from langgraph_sdk import get_sync_client

from app.services.bootstrap import new_key
from app.settings import Settings
from bench.replicas import replicas
from bench.scale_common import create_database, drop_database
from postgres.urls import with_database

pytestmark = pytest.mark.integration

HISTORY = [49, 180, 257, 293, 0, 171]
CANDIDATES = [5, 10, 15, 20, 25, 30, 35, 40]


@pytest.fixture
def database(pg_server_url):
    server = with_database(pg_server_url, "postgres")
    url = create_database(server)
    yield url
    drop_database(server, url)


def test_a_paused_run_survives_sigkill_of_its_server_and_is_resumed_by_the_sdk(cli_data_dir, database):
    key = new_key(
        database, Settings(data_dir=cli_data_dir, database_url=database, _env_file=None), owner="kill"
    )

    with replicas(1, database, cli_data_dir) as [(port, process)]:
        with get_sync_client(url=f"http://127.0.0.1:{port}", api_key=key.secret) as client:
            thread = client.threads.create(metadata={"history": HISTORY})
            paused = client.runs.wait(thread["thread_id"], "recloop-human", input={"candidates": CANDIDATES})
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
    proposal = paused["__interrupt__"][0]["value"]
    assert proposal["item"] in CANDIDATES

    with (
        replicas(1, database, cli_data_dir) as [(port, _)],
        get_sync_client(url=f"http://127.0.0.1:{port}", api_key=key.secret) as client,
    ):
        state = client.threads.get_state(thread["thread_id"])
        assert state["interrupts"][0]["value"]["item"] == proposal["item"]
        assert client.threads.get(thread["thread_id"])["status"] == "interrupted"
        done = client.runs.wait(
            thread["thread_id"],
            "recloop-human",
            command={"resume": {"decision": "accept", "reason": "after the crash"}},
        )
        assert done["final_item"] == proposal["item"] and done["stop_reason"] == "accepted"
        runs = client.runs.list(thread["thread_id"])
        assert [(r["metadata"]["loop_index"], r["status"]) for r in runs] == [(1, "success")]
        assert client.threads.get(thread["thread_id"])["status"] == "idle"
