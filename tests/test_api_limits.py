"""Per-key limits across workers: a request rate (429 + Retry-After) and a daily LLM-token budget."""

from __future__ import annotations

import dataclasses

import httpx
import pytest
from fake_openai import FakeOpenAI, Reply
from sqlalchemy import func, select

from app.db.models import Loop
from app.main import create_app
from app.services.keys import create_key
from app.services.runtime import open_worker
from graph.agents.llm_evidence import LLMWeights
from lab.calibration.deps import calibrated_deps
from tests.api_client import authed_client

pytestmark = pytest.mark.integration


def obeyed(mode: str) -> LLMWeights | None:
    """LLM agents whose valid answers decide: these tests are about the calls and their records."""
    return LLMWeights.obey() if mode == "llm" else None


async def test_the_request_rate_is_counted_across_workers(
    service_settings, service_worker, service_db_url, ml_dataset, service_loop_deps
):
    settings = service_settings.model_copy(update={"rate_limit_per_minute": 4})
    key = await create_key(service_worker.database.sessionmaker, owner="rate")
    headers = {"Authorization": f"Bearer {key.secret}"}
    worker_a = create_app(settings, worker=dataclasses.replace(service_worker, settings=settings))
    async with open_worker(
        settings, database_url=service_db_url, catalog=ml_dataset, loop_deps=service_loop_deps
    ) as worker_b:
        clients = [
            httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t", headers=headers)
            for app in (worker_a, create_app(settings, worker=worker_b))
        ]
        statuses = [
            (await clients[i % 2].get("/v1/items", params={"q": "toy"})).status_code for i in range(4)
        ]
        assert statuses == [200] * 4
        refused = await clients[0].get("/v1/items", params={"q": "toy"})
        for client in clients:
            await client.aclose()
    if refused.status_code == 200:  # the minute turned between the requests: a new window began
        pytest.skip("crossed a minute boundary")
    assert refused.status_code == 429
    assert 1 <= int(refused.headers["retry-after"]) <= 60
    assert refused.json() == {
        "detail": f"rate limit of 4 requests per minute for this API key reached; retry in "
        f"{refused.headers['retry-after']} s",
        "field": None,
    }


async def test_the_daily_llm_token_budget_stops_llm_requests_only(
    service_settings, service_db_url, ml_dataset, ml_scorers
):
    scorer = ml_scorers["sasrec"]
    with FakeOpenAI() as server:
        settings = service_settings.model_copy(
            update={"llm_base_url": server.base_url, "llm_max_retries": 0, "llm_token_budget_per_day": 1}
        )
        deps = {
            mode: await calibrated_deps(
                settings.loop_config(), ml_dataset, scorer, scorer, mode, llm_weights=obeyed(mode)
            )
            for mode in ("offline", "llm")
        }
        server.enqueue(
            Reply.json({"thoughts": "t", "item_id": 10, "reason": "A classic."}),
            Reply.json({"thoughts": "t", "decision": "accept", "reason": "Yes."}),
        )
        async with (
            open_worker(settings, database_url=service_db_url, catalog=ml_dataset, loop_deps=deps) as worker,
            await authed_client(settings, worker, "budget") as api,
        ):
            session = await api.post("/v1/sessions", json={"user_id": "u", "history": [49, 180, 257]})
            url = f"/v1/sessions/{session.json()['id']}/recommendations"
            body = {"agents": "llm", "candidates": [5, 10, 15, 20], "max_rounds": 1}
            first = await api.post(url, json=body)
            assert first.status_code == 200 and first.json()["usage"]["prompt_tokens"] > 0
            refused = await api.post(url, json=body)
            offline = await api.post(url, json={**body, "agents": "offline"})
            async with worker.database.sessionmaker() as db:
                loops = (await db.execute(select(func.count()).select_from(Loop))).scalar_one()

    assert refused.status_code == 429 and refused.json()["field"] is None
    detail = refused.json()["detail"]
    assert detail.startswith("daily LLM-token budget of 1 tokens for this API key is used up")
    assert "it resets at " in detail and detail.count("T00:00:00Z") == 1
    assert 1 <= int(refused.headers["retry-after"]) <= 86_400
    assert offline.status_code == 200 and offline.json()["loop_index"] == 2  # the refused one ran nothing
    assert loops >= 2
