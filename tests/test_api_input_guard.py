"""What PostgreSQL cannot store is refused before any handler, on both APIs (app/api/input_guard.py),
and only the two documented forms of the API key are accepted."""

from __future__ import annotations

import asyncio
import json

import pytest

from app.services.keys import create_key

pytestmark = pytest.mark.integration

HISTORY = [49, 180, 257]
TOO_BIG = 2**63


def _raw(text: str) -> dict:
    """A body sent as written (httpx would refuse to encode a lone surrogate)."""
    return {"content": text.encode("utf-8", "surrogatepass"), "headers": {"Content-Type": "application/json"}}


@pytest.mark.parametrize(
    ("path", "body", "field", "says"),
    [
        ("/v1/sessions", '{"user_id": "a\\u0000b", "history": [1]}', "user_id", "NUL"),
        ("/v1/sessions", '{"user_id": "a\\ud800", "history": [1]}', "user_id", "surrogate"),
        ("/v1/sessions", f'{{"user_id": "u", "history": [1, {TOO_BIG}]}}', "history[1]", "64 bits"),
        ("/v1/sessions", '{"user_id": "u", "history": [NaN]}', "history[0]", "finite"),
        ("/threads", '{"metadata": {"history": [1], "title": "x\\u0000"}}', "metadata.title", "NUL"),
        ("/threads", '{"metadata": {"history": [1], "ti\\u0000tle": "x"}}', "metadata", "key"),
        ("/threads", '{"metadata": {"history": [1], "\\udfff": 1}}', "metadata", "surrogate"),
        ("/threads/search", '{"metadata": {"a": "\\u0000"}}', "metadata.a", "NUL"),
        ("/threads/search", f'{{"offset": {TOO_BIG}}}', "offset", "64 bits"),
        ("/threads/search", '{"metadata": {"n": -1e999}}', "metadata.n", "finite"),
    ],
)
async def test_text_and_numbers_postgresql_refuses_are_422_naming_the_field(api, path, body, field, says):
    response = await api.post(path, **_raw(body))
    assert response.status_code == 422, response.text
    assert response.json()["field"] == field and says in response.json()["detail"]


async def test_a_nul_in_a_query_string_is_422_naming_the_parameter(api):
    response = await api.get("/v1/sessions", params={"user_id": "a\x00b"})
    assert response.status_code == 422 and response.json()["field"] == "user_id"
    thread = (await api.post("/threads", json={"metadata": {"history": HISTORY}})).json()
    response = await api.get(f"/threads/{thread['thread_id']}/runs", params={"status": "\x00"})
    assert response.status_code == 422 and response.json()["field"] == "status"


async def test_json_nested_past_the_cap_gets_its_own_message(api, service_settings):
    deep = "[" * 10_000 + "]" * 10_000
    for path in ("/v1/sessions", "/threads", "/threads/search"):
        response = await api.post(path, **_raw(deep))
        assert response.status_code == 422
        assert response.json() == {
            "detail": f"body: nested deeper than {service_settings.max_json_depth} arrays and objects "
            "(RECLOOP_MAX_JSON_DEPTH)",
            "field": "body",
        }
    nested = {"history": HISTORY, "a": {"b": {"c": [[[]]]}}}
    assert (await api.post("/threads", json={"metadata": nested})).status_code == 200
    too_deep: dict = {"history": HISTORY}
    level = too_deep
    for _ in range(service_settings.max_json_depth):
        level["x"] = {}
        level = level["x"]
    response = await api.post("/threads", json={"metadata": too_deep})
    assert response.status_code == 422 and response.json()["field"].startswith("metadata.x.x")


async def test_a_refused_request_leaves_its_keep_alive_connection_usable(served):
    host, port = served.base_url.host, served.base_url.port
    reader, writer = await asyncio.open_connection(host, port)
    auth = served.headers["Authorization"]

    async def ask(body: bytes) -> tuple[int, dict]:
        writer.write(
            b"POST /threads/search HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            + f"Authorization: {auth}\r\nContent-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        await writer.drain()
        head = await reader.readuntil(b"\r\n\r\n")
        status = int(head.split(b" ", 2)[1])
        length = int(
            next(h for h in head.split(b"\r\n") if h.lower().startswith(b"content-length")).split(b":")[1]
        )
        assert b"connection: close" not in head.lower()
        return status, json.loads(await reader.readexactly(length))

    try:
        for bad in (b'{"metadata": {"a": "\\u0000"}}', f'{{"offset": {TOO_BIG}}}'.encode(), b"[" * 5000):
            status, body = await ask(bad)
            assert status == 422, body
            status, body = await ask(b'{"limit": 1}')  # the same connection, the next request
            assert status == 200 and isinstance(body, list)
    finally:
        writer.close()


async def test_only_bearer_or_x_api_key_carry_the_key(served, service_worker):
    key = (await create_key(service_worker.database.sessionmaker, owner="auth-forms")).secret
    base = str(served.base_url)
    import httpx

    async with httpx.AsyncClient(base_url=base) as client:
        for headers in (
            {"Authorization": f"Bearer {key}"},
            {"Authorization": f"bearer {key}"},
            {"x-api-key": key},
        ):
            assert (await client.get("/v1/sessions", headers=headers)).status_code == 200
            assert (await client.post("/threads/search", json={}, headers=headers)).status_code == 200
        for headers in (
            {"Authorization": key},
            {"Authorization": f"Token {key}"},
            {"Authorization": "Bearer"},
        ):
            for response in (
                await client.get("/v1/sessions", headers=headers),
                await client.post("/threads/search", json={}, headers=headers),
            ):
                assert response.status_code == 401
                assert (
                    response.json()["field"] == "Authorization"
                    and "Bearer <key>" in response.json()["detail"]
                )
