"""agents "llm" over HTTP: the loop runs through an OpenAI-compatible server; usage is recorded."""

from __future__ import annotations

import httpx
import pytest
from fake_openai import FakeOpenAI, Reply

from app.main import create_app
from app.services.keys import create_key
from app.services.runtime import open_resources
from graph.deps import make_deps

pytestmark = pytest.mark.integration

CANDIDATES = [5, 10, 15, 20, 25, 30]


async def test_llm_agents_answer_over_http_and_their_usage_is_stored(
    service_settings, service_db_url, ml_dataset, ml_scorers
):
    scorer = ml_scorers["sasrec"]
    with FakeOpenAI() as server:
        settings = service_settings.model_copy(
            update={"llm_base_url": server.base_url, "llm_timeout_s": 20.0, "llm_max_retries": 1}
        )
        deps = {mode: make_deps(settings, ml_dataset, scorer, scorer, mode) for mode in ("offline", "llm")}
        # Round 1: the user agent rejects; round 2: the autoresponder accepts.
        server.enqueue(
            Reply.json({"thoughts": "t", "item_id": 10, "reason": "A classic."}),
            Reply.json({"thoughts": "t", "decision": "reject", "reason": "Seen it twice."}),
        )
        async with open_resources(
            settings, database_url=service_db_url, catalog=ml_dataset, loop_deps=deps
        ) as resources:
            key = await create_key(resources.sessionmaker, owner="llm")
            transport = httpx.ASGITransport(app=create_app(settings, resources=resources))
            headers = {"Authorization": f"Bearer {key.secret}"}
            async with httpx.AsyncClient(transport=transport, base_url="http://t", headers=headers) as api:
                session = await api.post("/v1/sessions", json={"user_id": "u", "history": [49, 180, 257]})
                url = f"/v1/sessions/{session.json()['id']}"
                response = await api.post(
                    f"{url}/recommendations",
                    json={"agents": "llm", "candidates": CANDIDATES, "max_rounds": 3},
                )
                assert response.status_code == 200, response.text
                body = response.json()
                stored = (await api.get(f"{url}/loops")).json()["data"][0]

    assert [(r["item"], r["decision"]) for r in body["rounds"]][0] == (10, "reject")
    assert body["rounds"][0]["user_reason"] == "Seen it twice." and body["rounds"][-1]["decision"] == "accept"
    assert body["stop_reason"] == "accepted" and body["item"]["id"] in CANDIDATES
    assert body["usage"]["calls"] == len(server.requests) >= 4
    assert body["usage"]["prompt_tokens"] > 0 and body["usage"]["completion_tokens"] > 0
    assert stored["params"]["agents"] == "llm"
    assert (stored["llm_calls"], stored["prompt_tokens"], stored["completion_tokens"]) == (
        body["usage"]["calls"],
        body["usage"]["prompt_tokens"],
        body["usage"]["completion_tokens"],
    )
