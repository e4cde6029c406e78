"""The on-disk dataset format every part of recloop reads.

A dataset lives in ``<data_dir>/datasets/<name>/``::

    meta.json      name, n_items, source, row counts, fingerprint, notes
    items.jsonl    one item per line: {"id": int, "title": str, ...attributes}
    train.jsonl    one row per line: {"history": [int, ...], "next": int, ...}
    val.jsonl
    test.jsonl

Item ids are 0-based and contiguous (0 .. n_items-1), as in the LLaRA files.
``history`` is oldest first, padding removed, at most ``MAX_HISTORY`` items.
Rows may carry extra keys (``row``, ``len_seq``, ``seq_padded``, ratings, ``user``);
readers ignore what they do not need, so imported LLaRA files stay byte-identical.
Item attributes are optional: MovieLens items carry ``genres`` (list of names)
and ``year`` (int or null).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from recmodels.items import CatalogItems, ItemColumns
from recmodels.items import Item as Item  # its home is recmodels.items; callers read it from here too

MAX_HISTORY = 10
SPLITS = ("train", "val", "test")
MIN_EVAL_LEN_SEQ = 3  # LLaRA/AFL loaders drop rows with len_seq < 3 before use


class DatasetError(ValueError):
    """Bad dataset input; the message names the file, the line and the reason."""

    def __init__(self, path: Path | str, line: int | None, reason: str):
        where = f"{path}:{line}" if line is not None else str(path)
        super().__init__(f"{where}: {reason}")
        self.path, self.line, self.reason = str(path), line, reason


class DatasetNotFound(LookupError):
    pass


@dataclass(frozen=True)
class Row:
    history: tuple[int, ...]
    next: int
    len_seq: int
    extra: dict[str, Any] = field(default_factory=dict, compare=False)


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


class Dataset:
    """Read-only view of one dataset directory. Cheap to construct; loads lazily."""

    def __init__(self, root: Path):
        self.root = Path(root)
        if not (self.root / "meta.json").is_file():
            raise DatasetNotFound(
                f"no dataset at {self.root} (missing meta.json); "
                "create one with `recloop data import` or `recloop data build`"
            )

    @classmethod
    def open(cls, datasets_dir: Path, name: str) -> Dataset:
        return cls(Path(datasets_dir) / name)

    @cached_property
    def meta(self) -> dict[str, Any]:
        return json.loads((self.root / "meta.json").read_text())

    @property
    def name(self) -> str:
        return self.meta["name"]

    @property
    def n_items(self) -> int:
        return int(self.meta["n_items"])

    @property
    def fingerprint(self) -> str:
        return self.meta["fingerprint"]

    @cached_property
    def item_columns(self) -> ItemColumns:
        """The items as columns (titles, genres, years): what the dataset keeps of ``items.jsonl``."""
        return ItemColumns.read(self.root / "items.jsonl")

    @property
    def items(self) -> CatalogItems:
        """Every item in id order, each made when read: iterate or index it as the list it was, and
        read :attr:`item_columns` instead where a whole column will do (10^6 items)."""
        return CatalogItems(self.item_columns)

    def item(self, item_id: int) -> Item:
        return self.item_columns.item(item_id)

    def title(self, item_id: int) -> str:
        return self.item_columns.title(item_id)

    def iter_rows(self, split: str) -> Iterator[Row]:
        if split not in SPLITS:
            raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
        with (self.root / f"{split}.jsonl").open() as fh:
            for line in fh:
                raw = json.loads(line)
                history = tuple(raw.pop("history"))
                nxt = raw.pop("next")
                len_seq = int(raw.pop("len_seq", max(1, len(history))))
                yield Row(history, nxt, len_seq, raw)

    def rows(self, split: str, *, min_len_seq: int = 0) -> list[Row]:
        return [r for r in self.iter_rows(split) if r.len_seq >= min_len_seq]

    def eval_rows(self, split: str) -> tuple[list[Row], int]:
        """Rows used for evaluation (len_seq >= 3, as upstream) and how many were dropped."""
        every = self.rows(split)
        kept = [r for r in every if r.len_seq >= MIN_EVAL_LEN_SEQ]
        return kept, len(every) - len(kept)


def compute_fingerprint(root: Path) -> str:
    """SHA-256 over items and splits: identifies the exact data a model was trained on."""
    digest = hashlib.sha256()
    for name in ("items.jsonl", *(f"{s}.jsonl" for s in SPLITS)):
        digest.update(name.encode())
        digest.update(sha256_file(root / name).encode())
    return digest.hexdigest()
