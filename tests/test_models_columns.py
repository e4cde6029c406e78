"""A split's rows as columns (recmodels.columns): the tensors training builds from them, and the
column file written once beside the dataset."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest
import torch

from recmodels.base import pad_histories
from recmodels.columns import RowColumns, columns_path, split_columns
from recmodels.dataset import MAX_HISTORY, Dataset, Row, compute_fingerprint
from recmodels.training import columns_tensors, training_tensors

PAD = 500


def _rows(n: int, seed: int = 0) -> list[Row]:
    rng = random.Random(seed)
    rows = []
    for _ in range(n):
        history = tuple(rng.randrange(PAD) for _ in range(rng.randint(0, MAX_HISTORY)))
        rows.append(Row(history, rng.randrange(PAD), max(1, len(history))))
    return rows


@pytest.mark.parametrize("max_len", [1, 4, MAX_HISTORY, 50])
@pytest.mark.parametrize("all_positions", [False, True])
def test_column_tensors_are_the_padded_histories_and_targets(max_len: int, all_positions: bool) -> None:
    rows = _rows(300)
    seqs, targets = training_tensors(rows, max_len, PAD, all_positions)
    # what training built before the columns: one padded list per row
    assert seqs.tolist() == pad_histories([r.history for r in rows], max_len, PAD).tolist()
    if all_positions:
        expected = pad_histories([[*r.history[1:], r.next] for r in rows], max_len, PAD)
    else:
        expected = torch.as_tensor([r.next for r in rows])
    assert targets.tolist() == expected.tolist()
    assert seqs.dtype == targets.dtype == torch.long
    compact = columns_tensors(RowColumns.of_rows(rows), max_len, PAD, all_positions)
    assert [t.dtype for t in compact] == [torch.int32, torch.int32]  # half the memory of a long log


def _write_dataset(root: Path, rows: list[Row]) -> Dataset:
    root.mkdir(parents=True)
    (root / "items.jsonl").write_text(
        "".join(json.dumps({"id": i, "title": f"t{i}"}) + "\n" for i in range(PAD))
    )
    for split in ("train", "val", "test"):
        lines = [json.dumps({"history": list(r.history), "next": r.next, "len_seq": r.len_seq}) for r in rows]
        (root / f"{split}.jsonl").write_text("\n".join(lines) + "\n")
    meta = {"name": "cols", "n_items": PAD, "fingerprint": compute_fingerprint(root)}
    (root / "meta.json").write_text(json.dumps(meta))
    return Dataset(root)


def test_split_columns_are_written_once_and_memory_mapped(tmp_path: Path) -> None:
    rows = _rows(120, seed=1)
    dataset = _write_dataset(tmp_path / "cols", rows)
    head = split_columns(dataset, "train", limit=7)  # a slice, read from the JSONL: no file yet
    assert not columns_path(dataset, "train").exists()
    assert head.matrix.tolist() == RowColumns.of_rows(rows[:7]).matrix.tolist()

    columns = split_columns(dataset, "train")
    assert columns_path(dataset, "train").is_file()
    assert isinstance(columns.matrix, np.memmap)
    assert columns.next_items.tolist() == [r.next for r in rows]
    assert columns.len_seq.tolist() == [r.len_seq for r in rows]
    assert split_columns(dataset, "train", limit=7).matrix.tolist() == head.matrix.tolist()
    kept = columns.where(columns.next_items % 2 == 0)
    assert kept.next_items.tolist() == [r.next for r in rows if r.next % 2 == 0]


def test_a_read_only_dataset_keeps_its_columns_in_memory(tmp_path: Path) -> None:
    rows = _rows(20, seed=2)
    dataset = _write_dataset(tmp_path / "cols", rows)
    (tmp_path / "cols" / "columns").write_text("not a directory")  # the file cannot be written
    columns = split_columns(dataset, "val")
    assert not isinstance(columns.matrix, np.memmap)
    assert columns.next_items.tolist() == [r.next for r in rows]
