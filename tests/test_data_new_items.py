"""New items (text, no interactions) through `recloop data import|build --new-items` and `data add-items`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli import cli
from recmodels.dataset import Dataset


def _run(*args: str):
    return CliRunner().invoke(cli, ["data", *args])


def _write(path: Path, *records: dict) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_import_with_new_items_keeps_the_splits_and_the_base_fingerprint(data_dir, shared_data, tmp_path):
    assert _run("import", str(shared_data / "lastfm"), "--name", "plain").exit_code == 0
    plain = Dataset.open(data_dir / "datasets", "plain")
    new = _write(tmp_path / "new.jsonl", {"title": "Brand New Band"}, {"id": 4607, "title": "Another One"})
    result = _run("import", str(shared_data / "lastfm"), "--name", "lastfm", "--new-items", str(new))
    assert result.exit_code == 0, result.output
    assert "new items 2 (text, no interactions; ids from 4,606)" in result.output
    grown = Dataset.open(data_dir / "datasets", "lastfm")
    assert grown.n_items == 4608 and [grown.title(4606), grown.title(4607)] == [
        "Brand New Band",
        "Another One",
    ]
    assert grown.meta["base_fingerprint"] == plain.fingerprint != grown.fingerprint
    assert grown.meta["base_n_items"] == 4606 and grown.meta["new_items"] == 2
    for split in ("train", "val", "test"):
        assert (grown.root / f"{split}.jsonl").read_bytes() == (plain.root / f"{split}.jsonl").read_bytes()
    more = _write(tmp_path / "more.jsonl", {"title": "Third", "genres": ["Rock"]})
    assert _run("add-items", "lastfm", str(more)).exit_code == 0
    again = Dataset.open(data_dir / "datasets", "lastfm")
    assert again.n_items == 4609 and again.item(4608).genres == ["Rock"]
    assert again.meta["base_fingerprint"] == plain.fingerprint and again.meta["new_items"] == 3


def test_build_csv_accepts_new_items(data_dir, tmp_path):
    from test_data_build import INTERACTIONS_CSV, ITEMS_CSV  # the CSV build tests' tiny files

    inter, items = tmp_path / "inter.csv", tmp_path / "items.csv"
    inter.write_text(INTERACTIONS_CSV)
    items.write_text(ITEMS_CSV)
    new = _write(tmp_path / "new.jsonl", {"title": "Fresh item", "genre": "x"})
    args = ["build", "csv", "--interactions", str(inter), "--items", str(items), "--name", "mine"]
    result = _run(*args, "--new-items", str(new))
    assert result.exit_code == 0, result.output
    built = Dataset.open(data_dir / "datasets", "mine")
    assert built.n_items == 5 and built.title(4) == "Fresh item" and built.meta["new_items"] == 1


@pytest.mark.parametrize(
    ("record", "message"),
    [({"genres": ["x"]}, "needs a non-empty string 'title'"), ({"id": 3, "title": "x"}, "take the next ids")],
)
def test_bad_new_items_are_refused_with_the_line(data_dir, shared_data, tmp_path, record, message):
    assert _run("import", str(shared_data / "lastfm"), "--name", "lastfm").exit_code == 0
    before = Dataset.open(data_dir / "datasets", "lastfm").fingerprint
    bad = _write(tmp_path / "bad.jsonl", {"title": "fine"}, record)
    result = _run("add-items", "lastfm", str(bad))
    assert result.exit_code == 1 and "bad.jsonl:2: " in result.output and message in result.output
    assert Dataset.open(data_dir / "datasets", "lastfm").fingerprint == before  # untouched
