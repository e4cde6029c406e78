"""`recloop data fetch lastfm|steam`: LLaRA's files verified against the known fingerprints, and with no
network a message that says what was tried and how to import a local copy."""

from __future__ import annotations

import dataclasses
import shutil
import socket
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli import cli
from lab.data.paper_files import PAPER_DATASETS, mismatches
from recmodels.dataset import Dataset


def _run(*args: str):
    return CliRunner().invoke(cli, ["data", *args])


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]  # nothing listens there once the probe is closed


@pytest.mark.parametrize("name", ["lastfm", "steam"])
def test_without_network_fetch_says_what_it_tried_and_how_to_import_a_copy(data_dir, monkeypatch, name):
    unreachable = f"http://127.0.0.1:{_closed_port()}/{name}-archive.zip"
    monkeypatch.setitem(
        PAPER_DATASETS, name, dataclasses.replace(PAPER_DATASETS[name], public_url=unreachable)
    )
    result = _run("fetch", name)
    assert result.exit_code == 1
    error = result.output.strip().splitlines()[-1]
    files = ", ".join(PAPER_DATASETS[name].files)
    assert error.startswith(f"error: could not fetch {name}: tried {unreachable} (")
    assert "): unreachable (" in error
    assert f"No package registry carries LLaRA's {name} files." in error
    assert f"put its {files} in a directory DIR and run `recloop data fetch {name} --from-dir DIR`" in error
    assert f"`recloop data import DIR --name {name}`" in error
    assert not (data_dir / "datasets" / name).exists()


def test_the_known_counts_match_the_fingerprinted_files():
    for spec in PAPER_DATASETS.values():
        assert set(spec.rows) == {"train", "val", "test"} and spec.items > 0
        assert all(len(digest) == 64 for digest in spec.digests.values())


def test_fetch_from_a_local_copy_verifies_imports_and_keeps_it(data_dir, shared_data):
    result = _run("fetch", "lastfm", "--from-dir", str(shared_data / "lastfm"))
    assert result.exit_code == 0, result.output
    assert "verified  true" in result.output
    dataset = Dataset.open(data_dir / "datasets", "lastfm")
    spec = PAPER_DATASETS["lastfm"]
    assert dataset.n_items == spec.items and dataset.meta["split_rows"] == spec.rows
    assert not mismatches(data_dir / "downloads" / "llara-lastfm", spec)  # a later fetch needs no directory
    shutil.rmtree(data_dir / "datasets" / "lastfm")
    again = _run("fetch", "lastfm")
    assert again.exit_code == 0, again.output
    assert Dataset.open(data_dir / "datasets", "lastfm").fingerprint == dataset.fingerprint


def test_fetch_refuses_a_copy_that_is_not_llaras_and_names_the_file(data_dir, shared_data, tmp_path: Path):
    copy = tmp_path / "steam"
    shutil.copytree(shared_data / "steam", copy)
    with (copy / "val.jsonl").open("a") as fh:
        fh.write('{"history": [1, 2, 3], "next": 4}\n')
    result = _run("fetch", "steam", "--from-dir", str(copy))
    assert result.exit_code == 1
    assert "is not LLaRA's steam data: val.jsonl differs from LLaRA's" in result.output
    assert f"`recloop data import {copy} --name steam` imports other files unverified" in result.output
    assert not (data_dir / "datasets" / "steam").exists()


def test_importing_llaras_steam_files_marks_them_verified(data_dir, shared_data):
    assert _run("import", str(shared_data / "steam"), "--name", "games").exit_code == 0
    meta = Dataset.open(data_dir / "datasets", "games").meta
    assert meta["verified"] is True and meta["train_complete"] is False
