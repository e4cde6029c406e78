"""The OpenAPI schema is a contract: schemathesis (``--checks all``) finds no request it misjudges.

schemathesis runs against the real app on a real uvicorn and PostgreSQL, with a fixed seed and a
bounded number of cases per operation, so CI gets the same run every time in about a minute.
"""

from __future__ import annotations

import asyncio
import os
import re
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

CONFIG = Path(__file__).with_name("schemathesis.toml")
HOOKS = Path(__file__).with_name("schemathesis_hooks.py")
SEED = 20261130
MAX_EXAMPLES = 50


async def _schemathesis(
    served, tmp_path: Path, schema_path: str, checks: str, env: dict[str, str] | None = None
) -> tuple[int, str]:
    """One fixed-seed schemathesis run against the served document at ``schema_path``: its exit code
    and its summary (every operation of the document selected and tested, as asserted here)."""
    started = time.monotonic()
    process = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "schemathesis.cli", "--config-file", str(CONFIG)),
        *("run", f"{served.base_url}{schema_path}"),
        *("--checks", checks, "--seed", str(SEED), "--max-examples", str(MAX_EXAMPLES), "--workers", "1"),
        *("--header", f"Authorization: {served.headers['Authorization']}"),
        *("--report", "junit", "--report-dir", str(tmp_path)),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        env={**os.environ, "NO_COLOR": "1", "SCHEMATHESIS_HOOKS": str(HOOKS), **(env or {})},
        cwd=tmp_path,  # schemathesis keeps a cache of past failures in its working directory: none here
    )
    output = (await process.communicate())[0].decode(errors="replace")
    summary = output[output.rfind("SUMMARY") :]
    print(f"schemathesis {schema_path}: {time.monotonic() - started:.0f} s\n{summary}")
    assert process.returncode == 0, output[-20_000:]
    selected = re.search(r"Selected: (\d+)/(\d+)", summary)
    assert selected and selected[1] == selected[2], summary  # every operation of the schema...
    assert f"Tested: {selected[1]}" in summary  # ...was tested
    return process.returncode, summary


async def test_schemathesis_finds_no_failure(served, service_worker, tmp_path: Path):
    from app.services.steering import warm_up

    await warm_up(service_worker.steering)  # as a worker's start-up does (the text model takes seconds)
    _, summary = await _schemathesis(served, tmp_path, "/openapi.json", "all")
    counts = re.search(r"(\d+) generated, (\d+) passed\s*$", summary, re.MULTILINE)
    assert counts and counts[1] == counts[2] and int(counts[1]) >= 1000, summary  # all passed


PROTOCOL_CHECKS = "not_a_server_error,negative_data_rejection,content_type_conformance,use_after_free"


async def test_schemathesis_finds_no_server_error_on_the_protocol_routes(served, tmp_path: Path):
    """LangGraph's protocol routes, swept through their own document (/langgraph/openapi.json): no
    5xx, invalid input refused. A third of the generated thread ids stay random (404); the rest are
    real threads, so the runs' routes do their work (tests/schemathesis_hooks.py)."""
    threads = []
    for n in range(3):
        body = {"metadata": {"history": [49, 180, 257, 293], "sweep": n}}
        threads.append((await served.post("/threads", json=body)).json()["thread_id"])
    for thread_id in threads:  # a run each, so the run ids the hooks pick exist
        await served.post(f"/threads/{thread_id}/runs/wait", json={"assistant_id": "recloop", "input": {}})
    env = {"RECLOOP_SWEEP_THREADS": ",".join(threads)}
    _, summary = await _schemathesis(served, tmp_path, "/langgraph/openapi.json", PROTOCOL_CHECKS, env)
    counts = re.search(r"(\d+) generated, (\d+) passed\s*$", summary, re.MULTILINE)
    assert counts and counts[1] == counts[2] and int(counts[1]) >= 500, summary


async def test_405_lists_every_method_of_the_path(api):
    response = await api.put("/v1/sessions")
    assert response.status_code == 405
    assert response.headers["allow"] == "GET, HEAD, POST"
    assert response.json() == {"detail": "Method Not Allowed", "field": None}
    response = await api.post("/v1/sessions/00000000-0000-0000-0000-000000000000/preferences")
    assert response.status_code == 405 and response.headers["allow"] == "DELETE, GET, HEAD"


async def test_a_body_that_is_not_utf8_gets_the_usual_422(api):
    response = await api.post(
        "/v1/sessions",
        content=b'{"user_id": "\xff\xfe", "history": [1]}',
        headers={"Content-Type": "application/json"},
    )
    assert response.status_code == 422
    assert response.json() == {"detail": "malformed body: not UTF-8 encoded JSON", "field": "body"}


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"created_before": "0.5"}, "created_before"),
        ({"created_after": "2026-11-30"}, "created_after"),
        ({"created_after": "2026-11-30T10:00:00"}, "created_after"),  # no time zone
        ({"created_after": 1764500000}, "created_after"),
        ({"offset": 10**12}, "offset"),
        ({"user_id": "a\x00b"}, "user_id"),
    ],
)
async def test_session_filters_the_schema_forbids_are_refused(api, params, field):
    response = await api.get("/v1/sessions", params=params)
    assert response.status_code == 422, response.text
    assert response.json()["field"] == field


async def test_the_schema_states_the_catalog_and_settings_limits(api, service_settings):
    schemas = (await api.get("/openapi.json")).json()["components"]["schemas"]
    history = schemas["SessionCreate"]["properties"]["history"]
    assert history["minItems"] == 1 and history["maxItems"] == service_settings.max_history_items
    assert history["items"] == {"type": "integer", "minimum": 0, "maximum": 1681}
    candidates = schemas["RecommendationCreate"]["properties"]["candidates"]["anyOf"][0]
    assert candidates["minItems"] == 2 and candidates["uniqueItems"] is True
    assert schemas["RecommendationCreate"]["properties"]["agents"]["enum"] == ["offline"]  # no LLM configured


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"user_id": "u", "history": [True]}, "history[0]"),
        ({"user_id": "u", "history": ["5"]}, "history[0]"),
        ({"user_id": "u", "history": [5.5]}, "history[0]"),
        ({"user_id": "a\x00b", "history": [5]}, "user_id"),
    ],
)
async def test_values_json_schema_does_not_call_integers_or_storable_text_are_refused(
    api, service_worker, body, field
):
    response = await api.post("/v1/sessions", json=body)
    assert response.status_code == 422 and response.json()["field"] == field
    accepted = await api.post("/v1/sessions", json={"user_id": "u", "history": [5.0, 7]})
    assert accepted.status_code == 201 and accepted.json()["history"] == [5, 7]


async def test_usage_dates_are_dates(api):
    response = await api.get("/v1/usage", params={"until": "0"})
    assert response.status_code == 422
    assert response.json() == {"detail": "until: must look like 2026-11-30", "field": "until"}
    assert (await api.get("/v1/usage", params={"until": "2026-11-30"})).status_code == 200
    empty = await api.get("/v1/usage", params={"since": "2026-12-01", "until": "2026-11-30"})
    assert empty.status_code == 200 and empty.json()["data"] == []
