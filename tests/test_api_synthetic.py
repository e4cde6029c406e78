"""The service on data the tests make themselves: a synthetic catalog whose log repeats items (as real
listening and shopping logs do) is trained on, calibrated and served, a recommendation and a steering
command included (issues 45 and 46)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from app.settings import Settings
from lab import prepare

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def synthetic_models_dir(synthetic_dataset, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from recmodels.training import train

    models_dir = tmp_path_factory.mktemp("synthetic-models")
    train(synthetic_dataset, "sasrec", models_dir=models_dir, epochs=2, progress=False)
    return models_dir


@pytest.fixture
async def synthetic_api(synthetic_dataset, synthetic_models_dir: Path, service_db_url: str, tmp_path: Path):
    from app.main import create_app
    from app.services.runtime import load_loop_deps, open_worker
    from tests.api_client import authed_client

    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "models").symlink_to(synthetic_models_dir, target_is_directory=True)
    settings = Settings(
        data_dir=tmp_path / "data",
        _env_file=None,
        dataset=synthetic_dataset.name,
        rate_limit_per_minute=0,
        steering_similarity="collaborative",
        llm_base_url=None,
    )
    # `recloop prepare`'s calibration fit, repeats and all (a worker only reads it)
    await asyncio.to_thread(prepare.ensure_calibration, settings, synthetic_dataset, lambda _line: None)
    deps = await load_loop_deps(settings, synthetic_dataset)
    async with open_worker(
        settings, database_url=service_db_url, catalog=synthetic_dataset, loop_deps=deps
    ) as worker:
        client = await authed_client(settings, worker, "synthetic", app=create_app(settings, worker=worker))
        async with client:
            yield client


def _history_with_a_repeat(dataset) -> list[int]:
    """A validation user's history in which an item comes back."""
    for row in dataset.iter_rows("val"):
        if len(set(row.history)) < len(row.history):
            return list(row.history)
    pytest.fail("the synthetic log has no validation history with a repeat")


async def test_a_synthetic_catalog_with_repeats_is_served_and_steered(synthetic_api, synthetic_dataset):
    history = _history_with_a_repeat(synthetic_dataset)
    created = await synthetic_api.post("/v1/sessions", json={"user_id": "u1", "history": history})
    assert created.status_code == 201, created.text
    sid = created.json()["id"]

    run = await synthetic_api.post(f"/v1/sessions/{sid}/recommendations", json={})
    assert run.status_code == 200, run.text
    assert 0 <= run.json()["item"]["id"] < synthetic_dataset.n_items

    genre = synthetic_dataset.item(history[-1]).genres[0]  # the genre the user is in
    command = await synthetic_api.post(
        f"/v1/sessions/{sid}/commands", json={"text": f"no more {genre.lower()}"}
    )
    assert command.status_code == 200, command.text
    body = command.json()
    assert body["understood"] and body["preferences"]["negative"]["genres"] == [genre]
    recs = body["recommendations"]
    assert recs and not {r["id"] for r in recs} & set(history)
    assert all(genre not in synthetic_dataset.item(r["id"]).genres for r in recs)

    found = await synthetic_api.get("/v1/items", params={"q": synthetic_dataset.title(recs[0]["id"])})
    assert found.status_code == 200 and recs[0]["id"] in {item["id"] for item in found.json()["data"]}
