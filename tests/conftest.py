"""Shared fixtures: paths to the read-only shared data and an isolated data directory per test."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from app.settings import Settings

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("RECLOOP_SHARED_DATA", REPO_ROOT.parent / "shared" / "data"))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.fail(f"shared data not found at {SHARED_DATA} (set RECLOOP_SHARED_DATA)")
    return SHARED_DATA


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(data_dir=tmp_path / "data", _env_file=None)


# --- datasets (session-scoped: imported once from the shared LLaRA files) ---------------


@pytest.fixture(scope="session")
def datasets_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A session datasets directory; `ml_dataset` and `lastfm_dataset` are imported into it."""
    return tmp_path_factory.mktemp("datasets")


@pytest.fixture(scope="session")
def ml_dataset(shared_data: Path, datasets_dir: Path):
    """MovieLens-100k (LLaRA protocol) with genres/year item attributes; treat as read-only."""
    from app.data.importer import import_llara

    return import_llara(shared_data / "movielens", datasets_dir, "movielens")


@pytest.fixture(scope="session")
def lastfm_dataset(shared_data: Path, datasets_dir: Path):
    """LastFM (LLaRA protocol, titles only); treat as read-only."""
    from app.data.importer import import_llara

    return import_llara(shared_data / "lastfm", datasets_dir, "lastfm")


# --- models (session-scoped: tiny real models trained once on a MovieLens slice) ----------


@pytest.fixture(scope="session")
def ml_models_dir(ml_dataset, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A session models dir holding sasrec/gru4rec/caser at artifact_path(dir, "movielens", name).

    Trained on the first 3,000 MovieLens training rows for 2 epochs: real models, seconds to build,
    far from converged (use the artifacts in data/models for quality measurements).
    """
    from recmodels.registry import MODEL_NAMES
    from recmodels.training import train

    models_dir = tmp_path_factory.mktemp("models")
    for name in MODEL_NAMES:
        train(ml_dataset, name, models_dir=models_dir, epochs=2, max_train_rows=3000, progress=False)
    return models_dir


@pytest.fixture(scope="session")
def ml_scorers(ml_dataset, ml_models_dir: Path) -> dict:
    """dict model name -> Scorer, loaded through the real artifact path (fingerprint-checked)."""
    from recmodels.artifacts import load_latest_scorer
    from recmodels.registry import MODEL_NAMES

    return {name: load_latest_scorer(ml_models_dir, ml_dataset, name) for name in MODEL_NAMES}
