"""Sessions survive restarts: stop the app (its pools and saver), start a new one, continue the thread."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import pytest

from app.main import create_app
from app.services import steering as steering_service
from app.services.keys import create_key
from app.services.runtime import open_worker

pytestmark = pytest.mark.integration

HISTORY = [49, 180, 257, 293, 0, 171]
CANDIDATES = [5, 10, 15, 20, 25, 30, 35, 40]


@asynccontextmanager
async def _running_app(settings, **worker_kwargs) -> AsyncIterator[tuple[httpx.AsyncClient, object]]:
    async with open_worker(settings, **worker_kwargs) as worker:
        transport = httpx.ASGITransport(app=create_app(settings, worker=worker))
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            yield client, worker


async def test_a_session_continues_after_a_restart_with_memory_and_history_intact(
    service_settings, service_db_url, ml_dataset, service_loop_deps
):
    kwargs = {"database_url": service_db_url, "catalog": ml_dataset, "loop_deps": service_loop_deps}
    async with _running_app(service_settings, **kwargs) as (client, worker):
        key = await create_key(worker.database.sessionmaker, owner="restart")
        client.headers["Authorization"] = f"Bearer {key.secret}"
        session_id = (await client.post("/v1/sessions", json={"user_id": "u", "history": HISTORY})).json()[
            "id"
        ]
        url = f"/v1/sessions/{session_id}"
        first = (await client.post(f"{url}/recommendations", json={"candidates": CANDIDATES})).json()
        await client.post(f"{url}/consumed", json={"items": [first["item"]["id"]]})
        before = (await client.get(url)).json()

    # Everything of the first app is closed now; a new one starts from the database alone.
    async with _running_app(service_settings, **kwargs) as (client, _):
        client.headers["Authorization"] = f"Bearer {key.secret}"
        after = (await client.get(url)).json()
        assert after == before
        assert after["history"] == [*HISTORY, first["item"]["id"]]

        second = (await client.post(f"{url}/recommendations", json={"candidates": CANDIDATES})).json()
        assert second["loop_index"] == 2
        state = (await client.get(url)).json()
        n_rejected = sum(r["decision"] == "reject" for r in second["rounds"])
        assert state["rec_memory"][: len(before["rec_memory"])] == before["rec_memory"]
        assert len(state["rec_memory"]) == len(before["rec_memory"]) + n_rejected
        loops = (await client.get(f"{url}/loops")).json()
        assert [loop["loop_index"] for loop in loops["data"]] == [2, 1]
        assert loops["data"][1]["rounds"] == first["rounds"]


async def test_the_app_lifespan_loads_models_from_disk_and_serves_a_paused_loop_after_restart(
    service_settings, service_db_url, datasets_dir: Path, ml_models_dir: Path, ml_dataset, tmp_path: Path
):
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    (data_dir / "datasets").symlink_to(datasets_dir)
    (data_dir / "models").symlink_to(ml_models_dir)
    settings = service_settings.model_copy(
        update={"data_dir": data_dir, "database_url": service_db_url, "steering_similarity": "collaborative"}
    )

    @asynccontextmanager
    async def lifespan_app() -> AsyncIterator[httpx.AsyncClient]:
        app = create_app(settings)
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
                yield client

    async with lifespan_app() as client:
        assert (await client.get("/readyz")).json()["checks"] == {"database": "ok", "models": "ok"}
        # The start-up warm-up built the steering similarity; commands reuse that very object.
        state = client._transport.app.state
        warmed = await state.steering_warmup
        assert warmed is not None and warmed.name == "collaborative"
        worker = state.worker
        assert (
            steering_service._similarity(worker.steering, worker.runner.loop_deps["offline"].rec_scorer)
            is warmed
        )
        key = await create_key(client._transport.app.state.worker.database.sessionmaker, owner="lifespan")
        client.headers["Authorization"] = f"Bearer {key.secret}"
        session_id = (await client.post("/v1/sessions", json={"user_id": "u", "history": HISTORY})).json()[
            "id"
        ]
        url = f"/v1/sessions/{session_id}"
        paused = await client.post(
            f"{url}/recommendations", json={"candidates": CANDIDATES, "judge_mode": "human"}
        )
        proposal = paused.json()["pending"]

    async with lifespan_app() as client:
        client.headers["Authorization"] = f"Bearer {key.secret}"
        assert (await client.get(url)).json()["pending"] == proposal
        done = (
            await client.post(f"{url}/feedback", json={"decision": "accept", "reason": "after restart"})
        ).json()
        assert done["status"] == "completed" and done["item"]["id"] == proposal["item"]
        assert done["rounds"][0]["user_reason"] == "after restart"
