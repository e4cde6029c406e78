"""Operations endpoints, catalog look-up, and 503 + self-recovery while the database is away."""

from __future__ import annotations

import pytest
from sqlalchemy.engine import make_url

from app.services.runtime import open_worker
from postgres.urls import sqlalchemy_url
from tests.api_client import authed_client
from tests.tcp_proxy import TcpProxy

pytestmark = pytest.mark.integration


async def test_healthz_and_readyz_report_up_and_ready(api):
    assert (await api.get("/healthz")).json() == {"status": "ok"}
    ready = await api.get("/readyz")
    assert ready.status_code == 200
    assert ready.json() == {
        "status": "ready",
        "checks": {"database": "ok", "models": "ok"},
        # which parser reads commands, and that no learned one is trained for this data directory
        "details": {"steering": {"parser": "offline", "learned": "absent"}},
    }


async def test_metrics_count_requests_loops_and_rounds(api):
    session_id = (await api.post("/v1/sessions", json={"user_id": "u", "history": [1, 2, 3]})).json()["id"]
    body = (
        await api.post(f"/v1/sessions/{session_id}/recommendations", json={"candidates": [5, 6, 7]})
    ).json()
    text = (await api.get("/metrics")).text
    assert (
        'recloop_http_request_duration_seconds_count{method="POST",route="/v1/sessions",status="201"}' in text
    )
    assert f'recloop_loops_total{{stop_reason="{body["stop_reason"]}"}}' in text
    assert 'recloop_rounds_total{decision="' in text
    for name in ("recloop_llm_calls_total", "recloop_llm_tokens_total", "recloop_fallbacks_total"):
        assert name in text


async def test_catalog_search_finds_titles_and_items_by_id(api, ml_dataset):
    found = (await api.get("/v1/items", params={"q": "toy story", "limit": 5})).json()
    assert found["count"] >= 1
    assert all("toy story" in item["title"].lower() for item in found["data"])
    first = found["data"][0]
    assert first["title"] == ml_dataset.title(first["id"])
    assert "genres" in first["attributes"]

    by_id = (await api.get(f"/v1/items/{first['id']}")).json()
    assert by_id["title"] == first["title"]
    missing = await api.get("/v1/items/99999")
    assert missing.status_code == 404 and missing.json()["field"] == "item_id"
    blank = await api.get("/v1/items", params={"q": ""})
    assert blank.status_code == 422 and blank.json()["field"] == "q"


async def test_database_outage_gives_503_with_retry_after_and_the_service_recovers(
    service_settings, service_db_url, ml_dataset, service_loop_deps
):
    url = make_url(sqlalchemy_url(service_db_url))
    if not url.host:
        pytest.skip("the test database is on a Unix socket (embedded); the proxy needs TCP")
    proxy = TcpProxy(url.host, url.port or 5432)
    await proxy.start()
    proxied = url.set(host="127.0.0.1", port=proxy.port).render_as_string(hide_password=False)
    settings = service_settings.model_copy(update={"db_connect_timeout_s": 1.0})
    async with (
        open_worker(
            settings, database_url=proxied, catalog=ml_dataset, loop_deps=service_loop_deps
        ) as worker,
        await authed_client(settings, worker, "outage") as client,
    ):
        session_id = (await client.post("/v1/sessions", json={"user_id": "u", "history": [1, 2]})).json()[
            "id"
        ]

        await proxy.stop()
        down = await client.get(f"/v1/sessions/{session_id}")
        assert down.status_code == 503
        assert down.headers["Retry-After"] == str(settings.db_retry_after_s)
        assert "database is unreachable" in down.json()["detail"]
        not_ready = await client.get("/readyz")
        assert not_ready.status_code == 503 and not_ready.json()["checks"]["database"] != "ok"
        assert (await client.get("/healthz")).status_code == 200

        await proxy.start()  # same port: the database is back
        recovered = await client.get(f"/v1/sessions/{session_id}")
        assert recovered.status_code == 200 and recovered.json()["history"] == [1, 2]
        loop = await client.post(f"/v1/sessions/{session_id}/recommendations", json={"candidates": [5, 6, 7]})
        assert loop.status_code == 200, loop.text
    await proxy.stop()
