"""Steering over HTTP: command round trip, memory (merge, conflict, neutral, reset), history, isolation."""

from __future__ import annotations

import httpx
import pytest
from sqlalchemy import func, select

from app.db.models import SteeringCommand

pytestmark = pytest.mark.integration

HISTORY = [49, 180, 257, 293, 0]
TOY_STORY = 0


@pytest.fixture
async def steering_client(service_worker, make_api_client, monkeypatch):
    """Authenticated clients on the app with the offline parser and collaborative similarity
    (the text model would add seconds of loading to every run)."""
    monkeypatch.setattr(service_worker.settings, "steering_similarity", "collaborative")
    monkeypatch.setattr(service_worker.settings, "llm_base_url", None)
    return make_api_client


async def _session(client: httpx.AsyncClient) -> str:
    created = await client.post("/v1/sessions", json={"user_id": "u1", "history": HISTORY})
    assert created.status_code == 201, created.text
    return created.json()["id"]


async def test_command_round_trip_and_memory_consolidation(steering_client, ml_dataset):
    api = await steering_client("steer-owner")
    sid = await _session(api)
    assert (await api.get(f"/v1/sessions/{sid}/preferences")).json() == {
        "positive": {"genres": [], "year_range": None, "items": [], "soft": []},
        "negative": {"genres": [], "year_range": None, "items": [], "soft": []},
    }

    first = await api.post(f"/v1/sessions/{sid}/commands", json={"text": "No horror, from the 90s"})
    assert first.status_code == 200, first.text
    body = first.json()
    assert body["understood"] and body["unparsed"] == [] and body["parser"] == "offline"
    assert body["preferences"]["negative"]["genres"] == ["Horror"]
    assert body["preferences"]["positive"]["year_range"] == {"start": 1990, "end": 1999}
    recs = body["recommendations"]
    assert len(recs) == 20 and not {r["id"] for r in recs} & set(HISTORY)
    for rec in recs:
        item = ml_dataset.item(rec["id"])
        assert rec["title"] == item.title and "Horror" not in item.genres and 1990 <= item.year <= 1999

    # Conflict: lifting the exclusion replaces it; the year range (compatible) stays.
    second = (await api.post(f"/v1/sessions/{sid}/commands", json={"text": "horror is fine again"})).json()
    assert second["preferences"]["negative"]["genres"] == []
    assert second["preferences"]["positive"]["year_range"] == {"start": 1990, "end": 1999}

    # Merge a soft preference; it steers but never breaks the hard constraint.
    third = (await api.post(f"/v1/sessions/{sid}/commands", json={"text": "more like Toy Story"})).json()
    assert third["preferences"]["positive"]["soft"] == [{"text": "Toy Story", "item": TOY_STORY}]
    assert TOY_STORY not in {r["id"] for r in third["recommendations"]}
    assert all(1990 <= ml_dataset.item(r["id"]).year <= 1999 for r in third["recommendations"])

    # Neutral: not understood, nothing guessed, memory unchanged.
    fourth = (await api.post(f"/v1/sessions/{sid}/commands", json={"text": "make it snappier"})).json()
    assert not fourth["understood"] and "not a known genre" in fourth["unparsed"][0]
    assert fourth["preferences"] == third["preferences"]
    assert (await api.get(f"/v1/sessions/{sid}/preferences")).json() == third["preferences"]

    history = (await api.get(f"/v1/sessions/{sid}/commands")).json()
    assert history["count"] == 4
    assert [c["text"] for c in history["data"]] == [
        "No horror, from the 90s", "horror is fine again", "more like Toy Story", "make it snappier",
    ]  # fmt: skip
    assert history["data"][0]["recommendations"] == [r["id"] for r in recs]
    assert history["data"][2]["parsed"]["positive"]["soft"] == [{"text": "Toy Story", "item": TOY_STORY}]

    reset = await api.delete(f"/v1/sessions/{sid}/preferences")
    assert (
        reset.status_code == 200 and reset.json() == (await api.get(f"/v1/sessions/{sid}/preferences")).json()
    )
    assert reset.json()["positive"]["soft"] == [] and reset.json()["positive"]["year_range"] is None
    page = (await api.get(f"/v1/sessions/{sid}/commands", params={"offset": 4})).json()
    assert page["count"] == 5 and [c["kind"] for c in page["data"]] == ["reset"]


async def test_bad_commands_and_foreign_sessions_are_refused(steering_client, service_worker):
    owner, stranger = await steering_client("steer-a"), await steering_client("steer-b")
    sid = await _session(owner)
    empty = await owner.post(f"/v1/sessions/{sid}/commands", json={"text": "   "})
    assert empty.status_code == 422 and empty.json() == {
        "detail": "text: is blank or contains a NUL character",
        "field": "text",
    }
    too_long = await owner.post(f"/v1/sessions/{sid}/commands", json={"text": "no horror " * 100})
    assert too_long.status_code == 422 and too_long.json()["field"] == "text"
    missing = await owner.post(f"/v1/sessions/{sid}/commands", json={})
    assert missing.status_code == 422 and missing.json()["field"] == "text"

    for response in (
        await stranger.post(f"/v1/sessions/{sid}/commands", json={"text": "no horror"}),
        await stranger.get(f"/v1/sessions/{sid}/preferences"),
        await stranger.delete(f"/v1/sessions/{sid}/preferences"),
        await stranger.get(f"/v1/sessions/{sid}/commands"),
    ):
        assert response.status_code == 404 and response.json()["field"] == "session_id"
    assert (await owner.get(f"/v1/sessions/{sid}/commands")).json() == {"data": [], "count": 0}


async def test_commands_are_deleted_with_their_session(steering_client, service_worker):
    api = await steering_client("steer-del")
    sid = await _session(api)
    assert (await api.post(f"/v1/sessions/{sid}/commands", json={"text": "no war"})).status_code == 200

    async def count() -> int:
        async with service_worker.database.sessionmaker() as db:
            stmt = select(func.count()).select_from(SteeringCommand).where(SteeringCommand.session_id == sid)
            return int((await db.execute(stmt)).scalar_one())

    assert await count() == 1
    assert (await api.delete(f"/v1/sessions/{sid}")).status_code == 204
    assert await count() == 0


async def test_loop_candidates_follow_the_memory(steering_client, service_worker, ml_dataset):
    """What the recommendation service uses: steered candidates, filtered caller lists, clear errors."""
    from app.services import steering as service
    from app.services.errors import InvalidInput
    from app.services.steering import PreferencesUnsatisfiable
    from steering.preferences import Preferences, Side, YearRange

    api = await steering_client("steer-loop")
    sid = await _session(api)

    async def loop_preferences():  # what a loop on the session works under: its memory as read
        return service.loop_preferences((await api.get(f"/v1/sessions/{sid}/preferences")).json())

    assert await loop_preferences() is None
    assert await service.loop_candidates(service_worker.steering, None, HISTORY) is None
    assert await service.loop_candidates(service_worker.steering, None, HISTORY, [1, 2]) == [1, 2]

    await api.post(f"/v1/sessions/{sid}/commands", json={"text": "only comedies"})
    memory = await loop_preferences()
    assert memory == Preferences(positive=Side(genres=["Comedy"]))
    steered = await service.loop_candidates(service_worker.steering, memory, HISTORY)
    assert len(steered) == service_worker.settings.n_candidates
    assert all("Comedy" in ml_dataset.item(i).genres for i in steered)
    given = [0, 1, 2, 3, 4]  # Toy Story and Get Shorty are comedies; GoldenEye (1) is not
    kept = await service.loop_candidates(service_worker.steering, memory, HISTORY, given)
    assert kept == [i for i in given if "Comedy" in ml_dataset.item(i).genres] and 1 not in kept

    with pytest.raises(InvalidInput, match="every candidate violates") as bad:
        await service.loop_candidates(service_worker.steering, memory, HISTORY, [1])
    assert bad.value.field == "candidates"
    impossible = Preferences(positive=Side(genres=["Western"], year_range=YearRange(start=2100)))
    with pytest.raises(PreferencesUnsatisfiable, match="no unseen item satisfies") as none_left:
        await service.loop_candidates(service_worker.steering, impossible, HISTORY)
    assert none_left.value.status == 409


async def test_a_command_steers_the_next_recommendation(steering_client, ml_dataset):
    """Command -> memory -> the loop's candidates and every proposal obey it; the agents see it."""
    api = await steering_client("steer-recommend")
    sid = await _session(api)
    sent = await api.post(f"/v1/sessions/{sid}/commands", json={"text": "only comedies"})
    assert sent.status_code == 200, sent.text

    response = await api.post(f"/v1/sessions/{sid}/recommendations", json={"max_rounds": 3})
    assert response.status_code == 200, response.text
    body = response.json()
    assert "Comedy" in ml_dataset.item(body["item"]["id"]).genres
    assert all("Comedy" in ml_dataset.item(r["item"]).genres for r in body["rounds"])

    stored = (await api.get(f"/v1/sessions/{sid}/loops")).json()["data"][0]
    candidates = stored["params"]["candidates"]
    assert len(candidates) == 20 and all("Comedy" in ml_dataset.item(i).genres for i in candidates)

    # Candidates given by the caller are filtered by the memory, not trusted blindly.
    given = [1, 3, 4]  # GoldenEye (action), Get Shorty (comedy), Copycat (crime)
    filtered = await api.post(f"/v1/sessions/{sid}/recommendations", json={"candidates": given})
    assert filtered.status_code == 200, filtered.text
    assert filtered.json()["item"]["id"] == 3
    refused = await api.post(f"/v1/sessions/{sid}/recommendations", json={"candidates": [1]})
    assert refused.status_code == 422 and refused.json()["field"] == "candidates"
