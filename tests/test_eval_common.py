"""Run directories, the resumable row store and the candidate sources of the evaluation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lab.eval.common import (
    EvalError,
    RowStore,
    RunDir,
    Unit,
    file_candidate_rows,
    run_units,
    sampled_candidate_rows,
)
from recmodels.dataset import DatasetError


def test_row_store_survives_a_torn_last_line(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_text('{"key": "a", "v": 1}\n{"key": "b", "v": 2}\n{"key": "c", "v"')
    store = RowStore(path)
    assert sorted(r["key"] for r in store.records()) == ["a", "b"]
    store.append({"key": "c", "v": 3})
    assert [json.loads(line)["key"] for line in path.read_text().splitlines()] == ["a", "b", "c"]


def test_row_store_names_the_line_of_a_corrupt_row(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_text('{"key": "a"}\nnot json\n{"key": "b"}\n')
    with pytest.raises(EvalError, match=r"rows.jsonl:2: not valid JSON"):
        RowStore(path)


def test_interrupted_run_resumes_without_recomputing_done_rows(tmp_path: Path) -> None:
    units = [Unit(f"row{i}", {"x": i}) for i in range(6)]
    calls: list[str] = []

    async def crash_after_three(unit: Unit) -> dict[str, int]:
        if len(calls) == 3:
            raise KeyboardInterrupt
        calls.append(unit.key)
        return {"square": unit.params["x"] ** 2}

    run = RunDir(tmp_path / "run", {"experiment": "t"})
    with pytest.raises(KeyboardInterrupt):
        run_units(units, crash_after_three, run.rows, progress=False)
    assert calls == ["row0", "row1", "row2"]

    calls.clear()
    resumed = RunDir(tmp_path / "run", {"experiment": "t"})

    async def square(unit: Unit) -> dict[str, int]:
        calls.append(unit.key)
        return {"square": unit.params["x"] ** 2}

    records = run_units(units, square, resumed.rows, concurrency=2, progress=False)
    assert sorted(calls) == ["row3", "row4", "row5"]
    assert [r["square"] for r in records] == [0, 1, 4, 9, 16, 25]


def test_resume_refuses_different_settings(tmp_path: Path) -> None:
    RunDir(tmp_path / "run", {"experiment": "t", "seeds": [0, 1]})
    with pytest.raises(EvalError, match=r"seeds: \[0, 1\] -> \[0, 1, 2\]"):
        RunDir(tmp_path / "run", {"experiment": "t", "seeds": [0, 1, 2]})


def test_shared_seed303_file_is_a_candidate_source(lastfm_dataset, shared_data: Path) -> None:
    rows, _ = lastfm_dataset.eval_rows("test")
    from_file = file_candidate_rows(
        shared_data / "lastfm" / "test_candidates_seed303.jsonl", rows, lastfm_dataset.n_items
    )
    assert len(from_file) == 122
    first = json.loads((shared_data / "lastfm" / "test_candidates_seed303.jsonl").open().readline())
    assert list(from_file[0].candidates) == first["candidates"]
    assert all(r.target in r.candidates and len(r.candidates) == 20 for r in from_file)
    # Sampling with the reference seed reproduces AFL's lists row by row.
    assert sampled_candidate_rows(rows, lastfm_dataset.n_items, seed=303) == from_file


def test_candidate_file_errors_name_file_line_and_field(lastfm_dataset, tmp_path: Path) -> None:
    rows, _ = lastfm_dataset.eval_rows("test")
    good = {"history": list(rows[0].history), "next": rows[0].next}
    bad = tmp_path / "cands.jsonl"
    bad.write_text(json.dumps({**good, "candidates": [rows[0].next, 99999]}) + "\n")
    with pytest.raises(DatasetError, match=r"cands.jsonl:1: field 'candidates' has unknown item ids"):
        file_candidate_rows(bad, rows, lastfm_dataset.n_items)
    bad.write_text(json.dumps({**good, "candidates": [0, 1]}) + "\n")
    with pytest.raises(DatasetError, match=r"cands.jsonl:1: field 'candidates' lacks the target"):
        file_candidate_rows(bad, rows, lastfm_dataset.n_items)
    bad.write_text(json.dumps(good) + "\n")
    with pytest.raises(DatasetError, match=r"cands.jsonl:1: missing field 'candidates'"):
        file_candidate_rows(bad, rows, lastfm_dataset.n_items)


def test_runs_started_in_the_same_second_get_directories_of_their_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A quick evaluation and the next one with other settings, within one second, had shared a
    # directory and the second refused to "resume" the first's settings.
    import lab.eval.common as common

    class _FrozenClock:
        @staticmethod
        def now(tz: object) -> object:
            from datetime import UTC, datetime

            return datetime(2026, 12, 6, 18, 30, 25, tzinfo=UTC)

    monkeypatch.setattr(common, "datetime", _FrozenClock)
    first = RunDir.create(None, tmp_path / "runs", "model-movielens", {"cold_seeds": 1})
    second = RunDir.create(None, tmp_path / "runs", "model-movielens", {"cold_seeds": 2})
    assert first.path.name == "model-movielens-20261206T183025Z"
    assert second.path.name == "model-movielens-20261206T183025Z-2"
    assert json.loads((second.path / "config.json").read_text()) == {"cold_seeds": 2}
    resumed = RunDir.create(first.path, tmp_path / "runs", "model-movielens", {"cold_seeds": 1})
    assert resumed.path == first.path  # an explicit --run-dir still resumes
