"""agents "llm" over HTTP: the loop runs through an OpenAI-compatible server; usage is recorded."""

from __future__ import annotations

import httpx
import pytest
from fake_openai import FakeOpenAI, Reply

from app.main import create_app
from app.services.keys import create_key
from app.services.runtime import open_worker
from graph.agents.llm_evidence import LLMWeights
from lab.calibration.deps import calibrated_deps
from tests.api_client import authed_client

pytestmark = pytest.mark.integration

CANDIDATES = [5, 10, 15, 20, 25, 30]


def obeyed(mode: str) -> LLMWeights | None:
    """LLM agents whose valid answers decide: these tests are about the calls and their records."""
    return LLMWeights.obey() if mode == "llm" else None


async def test_llm_agents_answer_over_http_and_their_usage_is_stored(
    service_settings, service_db_url, ml_dataset, ml_scorers
):
    scorer = ml_scorers["sasrec"]
    with FakeOpenAI() as server:
        settings = service_settings.model_copy(
            update={"llm_base_url": server.base_url, "llm_timeout_s": 20.0, "llm_max_retries": 1}
        )
        deps = {
            mode: await calibrated_deps(
                settings.loop_config(), ml_dataset, scorer, scorer, mode, llm_weights=obeyed(mode)
            )
            for mode in ("offline", "llm")
        }
        # Round 1: the user agent rejects; round 2: the autoresponder accepts.
        server.enqueue(
            Reply.json({"thoughts": "t", "item_id": 10, "reason": "A classic."}),
            Reply.json({"thoughts": "t", "decision": "reject", "reason": "Seen it twice."}),
        )
        async with (
            open_worker(settings, database_url=service_db_url, catalog=ml_dataset, loop_deps=deps) as worker,
            await authed_client(settings, worker, "llm") as api,
        ):
            session = await api.post("/v1/sessions", json={"user_id": "u", "history": [49, 180, 257]})
            url = f"/v1/sessions/{session.json()['id']}"
            response = await api.post(
                f"{url}/recommendations",
                json={"agents": "llm", "candidates": CANDIDATES, "max_rounds": 3},
            )
            assert response.status_code == 200, response.text
            body = response.json()
            stored = (await api.get(f"{url}/loops")).json()["data"][0]
            ready = (await api.get("/readyz")).json()

    assert [(r["item"], r["decision"]) for r in body["rounds"]][0] == (10, "reject")
    assert body["rounds"][0]["user_reason"] == "Seen it twice." and body["rounds"][-1]["decision"] == "accept"
    assert body["stop_reason"] == "accepted" and body["item"]["id"] in CANDIDATES
    assert body["usage"]["calls"] == len(server.requests) >= 4
    assert body["usage"]["prompt_tokens"] > 0 and body["usage"]["completion_tokens"] > 0
    assert stored["params"]["agents"] == "llm"
    # how each answer was weighed, in the answer and in the loop history alike
    weighed = body["rounds"][0]["llm_evidence"]
    assert weighed["rec"]["llm"] == 10 and weighed["rec"]["decided_by"] in ("llm", "both")
    assert weighed["rec"]["weight"] is None and weighed["rec"]["form"] == "pick"  # obeyed: no finite weight
    assert weighed["user"]["llm"] == "reject" and weighed["user"]["decided_by"] in ("llm", "both")
    assert weighed["rec"]["weights"].startswith("set by the caller")
    assert stored["rounds"] == body["rounds"]
    assert (
        ready["details"]["llm_weights"].startswith("set by the caller")
        and ready["checks"]["database"] == "ok"
    )
    assert (stored["llm_calls"], stored["prompt_tokens"], stored["completion_tokens"]) == (
        body["usage"]["calls"],
        body["usage"]["prompt_tokens"],
        body["usage"]["completion_tokens"],
    )


FAILURES = {
    "cut_off": (Reply.cut_off(), "length"),
    "content_filter": (Reply.content_filtered(), "content_filter"),
    "http_500": (Reply.error(500), "http"),
    "garbage_json": (Reply.content("I think the answer is 42."), "invalid"),
    "not_a_completion": (Reply.raw({"object": "list"}), "invalid"),
    "timeout": (Reply.json({"item_id": 5}).delayed(1.5), "timeout"),
}


@pytest.mark.parametrize("failure", sorted(FAILURES))
async def test_llm_failures_over_http_complete_the_loop_with_the_fallback_and_its_cause_recorded(
    service_settings, service_db_url, ml_dataset, ml_scorers, failure
):
    reply, kind = FAILURES[failure]
    scorer = ml_scorers["sasrec"]
    with FakeOpenAI(default=lambda request: reply) as server:
        settings = service_settings.model_copy(
            update={"llm_base_url": server.base_url, "llm_timeout_s": 0.5, "llm_max_retries": 1}
        )
        deps = {
            mode: await calibrated_deps(
                settings.loop_config(), ml_dataset, scorer, scorer, mode, llm_weights=obeyed(mode)
            )
            for mode in ("offline", "llm")
        }
        async with (
            open_worker(settings, database_url=service_db_url, catalog=ml_dataset, loop_deps=deps) as worker,
            await authed_client(settings, worker, f"llm-{failure}") as api,
        ):
            session = await api.post("/v1/sessions", json={"user_id": "u", "history": [49, 180, 257]})
            url = f"/v1/sessions/{session.json()['id']}"
            response = await api.post(
                f"{url}/recommendations",
                json={"agents": "llm", "candidates": CANDIDATES, "max_rounds": 2},
            )
            stored = (await api.get(f"{url}/loops")).json()["data"][0]
            state = (await api.get(url)).json()
            per_key = (await api.get("/v1/usage")).json()
            metrics = (await api.get("/metrics")).text

    assert response.status_code == 200, response.text
    body = response.json()
    assert body["status"] == "completed" and body["item"]["id"] in CANDIDATES
    first = body["rounds"][0]
    assert first["rec_fallback"] and first["rec_fallback_cause"].startswith(f"{kind}: ")
    assert first["user_fallback"] and first["user_fallback_cause"].startswith(f"{kind}: ")
    assert first["rec_usage"]["calls"] == 2 and first["user_usage"]["calls"] == 2  # one retry each
    assert [a["agent"] for a in first["llm_attempts"]] == ["rec", "rec", "user", "user"]
    assert all(not a["ok"] and a["failure"].startswith(kind) for a in first["llm_attempts"])
    # stored as answered, and summed per loop, per session and per key
    assert stored["rounds"] == body["rounds"] and stored["usage"] == body["usage"]
    assert body["usage"]["calls"] == len(server.requests) == sum(r["usage"]["calls"] for r in body["rounds"])
    assert state["usage"] == body["usage"]
    assert per_key["total"]["calls"] == body["usage"]["calls"]
    assert per_key["total"]["prompt_tokens"] == body["usage"]["prompt_tokens"] > 0
    assert per_key["data"][0]["fallbacks"] == sum(
        r["rec_fallback"] + r["user_fallback"] for r in body["rounds"]
    )
    assert f'recloop_fallbacks_total{{agent="rec",cause="{kind}"}}' in metrics
    assert 'recloop_llm_calls_total{agent="user"}' in metrics


async def test_usage_of_a_key_survives_deleting_its_sessions_and_a_reversed_range_is_empty(
    service_settings, service_db_url, ml_dataset, ml_scorers
):
    scorer = ml_scorers["sasrec"]
    with FakeOpenAI() as server:
        settings = service_settings.model_copy(
            update={"llm_base_url": server.base_url, "llm_timeout_s": 20.0}
        )
        deps = {
            mode: await calibrated_deps(
                settings.loop_config(), ml_dataset, scorer, scorer, mode, llm_weights=obeyed(mode)
            )
            for mode in ("offline", "llm")
        }
        async with open_worker(
            settings, database_url=service_db_url, catalog=ml_dataset, loop_deps=deps
        ) as worker:
            owner = await create_key(worker.database.sessionmaker, owner="keep")
            other = await create_key(worker.database.sessionmaker, owner="other")
            app = create_app(settings, worker=worker)

            def client(secret: str) -> httpx.AsyncClient:
                transport = httpx.ASGITransport(app=app)
                headers = {"Authorization": f"Bearer {secret}"}
                return httpx.AsyncClient(transport=transport, base_url="http://t", headers=headers)

            async with client(owner.secret) as api, client(other.secret) as stranger:
                session = (await api.post("/v1/sessions", json={"user_id": "u", "history": [1, 2, 3]})).json()
                url = f"/v1/sessions/{session['id']}"
                loop = (
                    await api.post(f"{url}/recommendations", json={"agents": "llm", "max_rounds": 1})
                ).json()
                assert (await api.delete(url)).status_code == 204
                kept = (await api.get("/v1/usage")).json()
                theirs = (await stranger.get("/v1/usage")).json()
                reversed_range = await api.get(
                    "/v1/usage", params={"since": "2026-12-02", "until": "2026-12-01"}
                )

    assert loop["usage"]["calls"] >= 2
    assert kept["total"]["calls"] == loop["usage"]["calls"]
    assert kept["total"]["completion_tokens"] == loop["usage"]["completion_tokens"]
    assert theirs == {"data": [], "total": theirs["total"]} and theirs["total"]["calls"] == 0
    # since > until: a valid query (the schema cannot relate two parameters) with no day in it.
    assert reversed_range.status_code == 200 and reversed_range.json()["data"] == []
    assert reversed_range.json()["total"]["calls"] == 0
