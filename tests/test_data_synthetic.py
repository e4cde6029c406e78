"""`recloop data build synthetic`: a seeded catalog and log in the normal dataset format, with what real
logs have (a power law, drift, repeats, one-off users, cold items, repeated titles)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli import cli
from lab.data.movielens import GENRES
from lab.data.synthetic import SYNTHETIC_GENRES, SyntheticSpec, build_synthetic
from lab.data.validation import validate_split_file
from recmodels.dataset import SPLITS, Dataset

SPEC = SyntheticSpec(items=2000, users=1500, interactions=40_000, seed=11)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Dataset:
    return build_synthetic(tmp_path_factory.mktemp("syn"), "syn", SPEC)


def _users(dataset: Dataset) -> Counter:
    """Training rows per user: each training user gives one row per interaction."""
    return Counter(row.extra["user"] for row in dataset.iter_rows("train"))


def test_the_files_are_the_dataset_format_and_valid(built: Dataset):
    assert built.n_items == SPEC.items
    for split in SPLITS:
        stats = validate_split_file(built.root / f"{split}.jsonl", built.n_items, unique_row_ids=True)
        assert stats.rows == built.meta["split_rows"][split]
    assert built.meta["split_rows"]["val"] == built.meta["split_rows"]["test"] == SPEC.users // 10
    train_users = _users(built)
    assert len(train_users) == int(0.8 * SPEC.users)
    assert built.meta["source"]["kind"] == "synthetic"
    assert any("never use it for accuracy claims" in note for note in built.meta["notes"])


def test_the_same_seed_gives_the_same_files_and_another_seed_others(built: Dataset, tmp_path: Path):
    again = build_synthetic(tmp_path, "again", SPEC)
    assert again.fingerprint == built.fingerprint
    other = build_synthetic(tmp_path, "other", SyntheticSpec(**{**SPEC.__dict__, "seed": 12}))
    assert other.fingerprint != built.fingerprint


def test_items_have_titles_genres_the_lexicon_reads_and_years(built: Dataset):
    known = {genre.casefold() for genre in SYNTHETIC_GENRES}
    for item in built.items:
        assert item.title and 1 <= len(item.genres) <= 2 and set(map(str.casefold, item.genres)) <= known
        assert 1925 <= item.year <= 2024
    assert set(SYNTHETIC_GENRES) <= set(GENRES)  # MovieLens' names: what the steering lexicon reads
    titles = Counter(item.title for item in built.items)
    assert len(titles) > 0.9 * built.n_items  # mostly distinct...
    assert any(count > 1 for count in titles.values())  # ...and some repeat (remakes)


def test_the_log_has_a_power_law_repeats_one_off_users_and_cold_items(built: Dataset):
    per_item = Counter(row.next for row in built.iter_rows("train"))
    counts = sorted(per_item.values(), reverse=True)
    top_share = sum(counts[: len(counts) // 100]) / sum(counts)
    assert top_share > 0.05  # the top 1 % of items take far more than 1 % of the interactions
    assert built.n_items - len(per_item) > 0.03 * built.n_items  # items nobody consumed (in training)
    lengths = _users(built).values()
    assert min(lengths) == 1 and max(lengths) > 100
    repeats = sum(row.next in row.history for row in built.iter_rows("train"))
    assert repeats > 0.05 * built.meta["split_rows"]["train"]


def test_users_drift_between_clusters_of_genres(built: Dataset):
    """Consecutive items share a genre far more often than two random items do."""
    genres = [set(item.genres) for item in built.items]
    rows = [row for row in built.iter_rows("train") if row.history]
    same = sum(bool(genres[row.history[-1]] & genres[row.next]) for row in rows) / len(rows)
    assert same > 0.5 and same < 0.99


def test_the_command_builds_and_refuses_bad_sizes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from app.settings import get_settings

    monkeypatch.setenv("RECLOOP_DATA_DIR", str(tmp_path / "data"))
    get_settings.cache_clear()
    try:
        runner = CliRunner()
        args = ["data", "build", "synthetic", "--items", "50", "--users", "30", "--interactions", "400"]
        result = runner.invoke(cli, [*args, "--seed", "3", "--name", "tiny"])
        assert result.exit_code == 0, result.output
        meta = json.loads((tmp_path / "data" / "datasets" / "tiny" / "meta.json").read_text())
        assert meta["source"] | {"seed": 3} == meta["source"] and meta["n_items"] == 50
        bad = runner.invoke(
            cli, ["data", "build", "synthetic", "--items", "50", "--users", "30", "--interactions", "20"]
        )
        assert bad.exit_code == 1
        assert "--interactions (20) must be at least --users (30)" in bad.output
    finally:
        get_settings.cache_clear()
