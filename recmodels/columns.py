"""A split's rows as columns: what training reads instead of one Python object per row.

Training on a log of ten million interactions held 7.97M :class:`recmodels.dataset.Row` objects
(7.6 GB) to build two integer tensors. :class:`RowColumns` keeps the same rows as one int32 matrix,
``[R, MAX_HISTORY + 2]``: the history left-padded with -1 (oldest first, as in the JSONL), then
the next item, then ``len_seq`` (44 bytes a row: 350 MB for those 7.97M rows).

A split's columns are written once beside the dataset, ``columns/<split>-<fingerprint>.npy``, and
memory-mapped after that, so every training run and every process reads one copy from the page
cache. The name carries the dataset's fingerprint: a rebuilt dataset never reads old columns. Where
the dataset's directory is read-only, the columns are built in memory each time instead.
"""

from __future__ import annotations

import json
import logging
import os
from array import array
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import islice
from pathlib import Path

import numpy as np

from recmodels.dataset import MAX_HISTORY, Dataset, Row

log = logging.getLogger(__name__)

WIDTH = MAX_HISTORY + 2  # history columns, next, len_seq
NEXT, LEN_SEQ = MAX_HISTORY, MAX_HISTORY + 1
NO_ITEM = -1  # padding of a history shorter than MAX_HISTORY


@dataclass(frozen=True)
class RowColumns:
    """Rows of one split as an int32 matrix [R, WIDTH] (memory-mapped when read from the cache)."""

    matrix: np.ndarray

    def __len__(self) -> int:
        return self.matrix.shape[0]

    @property
    def histories(self) -> np.ndarray:
        """[R, MAX_HISTORY], left-padded with ``NO_ITEM``."""
        return self.matrix[:, :MAX_HISTORY]

    @property
    def next_items(self) -> np.ndarray:
        return self.matrix[:, NEXT]

    @property
    def len_seq(self) -> np.ndarray:
        return self.matrix[:, LEN_SEQ]

    def where(self, keep: np.ndarray) -> RowColumns:
        """The rows where ``keep`` [R] is true, in order (a copy)."""
        return RowColumns(self.matrix[keep])

    @classmethod
    def of_rows(cls, rows: Iterable[Row]) -> RowColumns:
        """Columns of rows already in memory (tests, slices)."""
        return cls(_matrix(_flat_values((r.history, r.next, r.len_seq) for r in rows)))


def split_columns(dataset: Dataset, split: str, limit: int | None = None) -> RowColumns:
    """The rows of ``split`` as columns: memory-mapped from the dataset's column file (written on
    first use), or only the first ``limit`` rows, read from the JSONL when no column file exists
    yet (a quick slice of a large log never parses the rest of it)."""
    path = columns_path(dataset, split)
    if path.is_file():
        columns = RowColumns(np.load(path, mmap_mode="r"))
        return columns if limit is None else RowColumns(columns.matrix[:limit])
    if limit is not None:
        return RowColumns(_matrix(_flat_values(islice(_raw_rows(dataset, split), limit))))
    matrix = _matrix(_flat_values(_raw_rows(dataset, split)))
    if _write_atomically(path, matrix):
        return RowColumns(np.load(path, mmap_mode="r"))
    return RowColumns(matrix)


def columns_path(dataset: Dataset, split: str) -> Path:
    return dataset.root / "columns" / f"{split}-{dataset.fingerprint[:16]}.npy"


def _raw_rows(dataset: Dataset, split: str) -> Iterable[tuple[Sequence[int], int, int]]:
    """(history, next, len_seq) per line, as ``Dataset.iter_rows`` reads them, without the Row."""
    with (dataset.root / f"{split}.jsonl").open() as fh:
        for line in fh:
            raw = json.loads(line)
            history = raw["history"]
            yield history, raw["next"], int(raw.get("len_seq", max(1, len(history))))


def _flat_values(rows: Iterable[tuple[Sequence[int], int, int]]) -> array:
    """Every row's WIDTH values one after another (the newest MAX_HISTORY of a longer history)."""
    values = array("i")
    padding = [NO_ITEM] * MAX_HISTORY
    for history, next_item, len_seq in rows:
        kept = list(history[-MAX_HISTORY:]) if history else []
        values.extend(padding[: MAX_HISTORY - len(kept)])
        values.extend(kept)
        values.append(next_item)
        values.append(len_seq)
    return values


def _matrix(values: array) -> np.ndarray:
    return (
        np.frombuffer(values, dtype=np.int32).reshape(-1, WIDTH) if values else np.empty((0, WIDTH), np.int32)
    )


def _write_atomically(path: Path, matrix: np.ndarray) -> bool:
    """Write ``matrix`` to ``path`` through a temporary file; False where the directory is
    read-only (the caller keeps the matrix in memory)."""
    try:
        path.parent.mkdir(exist_ok=True)
        partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
        with partial.open("wb") as fh:
            np.save(fh, matrix)
        os.replace(partial, path)
    except OSError as exc:
        log.info("columns of %s kept in memory: %s", path.parent.parent, exc)
        return False
    return True
