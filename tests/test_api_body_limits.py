"""Every request body has limits: its size (413 before it is read), its fields (unknown ones are
refused by name) and the length of its strings and lists (stated in the OpenAPI schema)."""

from __future__ import annotations

import uuid

import httpx
import pytest
from sqlalchemy import func, select

from app.db.models import Session as SessionRow

pytestmark = pytest.mark.integration

HISTORY = [49, 180, 257, 293]
TOO_LARGE = {
    "detail": "request body too large: at most 1048576 bytes are accepted (RECLOOP_MAX_BODY_BYTES)",
    "field": "body",
}


async def _sessions(worker) -> int:
    async with worker.database.sessionmaker() as db:
        return int((await db.execute(select(func.count()).select_from(SessionRow))).scalar_one())


@pytest.mark.parametrize("keyed", [False, True])
async def test_a_30_mb_body_is_413_and_stores_nothing(served, service_worker, keyed):
    before = await _sessions(service_worker)
    body = b'{"user_id": "big", "history": [' + b"1, " * 10_000_000 + b"1]}"
    headers = {"Content-Type": "application/json"} | ({"Idempotency-Key": str(uuid.uuid4())} if keyed else {})
    try:
        response = await served.post("/v1/sessions", content=body, headers=headers)
    except httpx.WriteError:  # the server answered and closed before the client finished sending
        pytest.fail("the 413 did not reach the client")
    assert response.status_code == 413 and response.json() == TOO_LARGE
    assert await _sessions(service_worker) == before


async def test_a_chunked_body_over_the_limit_is_413(served, service_worker):
    before = await _sessions(service_worker)

    async def chunks():  # no Content-Length: the limit is counted as the body arrives
        yield b'{"user_id": "chunked", "history": ['
        for _ in range(200):
            yield b"1, " * 2000
        yield b"1]}"

    headers = {"Content-Type": "application/json", "Idempotency-Key": str(uuid.uuid4())}
    response = await served.post("/v1/sessions", content=chunks(), headers=headers)
    assert response.status_code == 413 and response.json() == TOO_LARGE
    assert await _sessions(service_worker) == before


async def test_unknown_fields_are_refused_on_every_body(api, service_worker):
    created = await api.post("/v1/sessions", json={"user_id": "u", "history": HISTORY})
    url = f"/v1/sessions/{created.json()['id']}"
    before = await _sessions(service_worker)
    cases = [
        ("/v1/sessions", {"user_id": "u", "history": HISTORY, "colour": "red"}),
        (f"{url}/consumed", {"items": [1], "colour": "red"}),
        (f"{url}/commands", {"text": "no horror", "colour": "red"}),
        (f"{url}/recommendations", {"max_rounds": 1, "colour": "red"}),
        (f"{url}/feedback", {"decision": "accept", "reason": "fine", "colour": "red"}),
    ]
    for path, body in cases:
        response = await api.post(path, json=body)
        assert response.status_code == 422, (path, response.text)
        assert response.json() == {"detail": "colour: Extra inputs are not permitted", "field": "colour"}
    assert await _sessions(service_worker) == before
    state = (await api.get(url)).json()
    assert state["history"] == HISTORY and state["n_loops"] == 0


async def test_the_schema_names_a_maximum_for_every_string_and_list_of_a_request_body(api):
    schema = (await api.get("/openapi.json")).json()
    bodies = {
        op["requestBody"]["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]
        for path in schema["paths"].values()
        for op in path.values()
        if "requestBody" in op
    }
    assert bodies >= {"SessionCreate", "ConsumptionCreate", "CommandCreate", "RecommendationCreate"}
    for name in bodies:
        component = schema["components"]["schemas"][name]
        assert component.get("additionalProperties") is False, name
        for field, spec in component["properties"].items():
            for option in spec.get("anyOf", [spec]):
                if option.get("type") == "string" and "enum" not in option:
                    assert "maxLength" in option, (name, field)
                if option.get("type") == "array":
                    assert "maxItems" in option, (name, field)
