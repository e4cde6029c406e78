"""Import a directory of LLaRA-protocol files (as in ../shared/data/<name>) as a dataset.

Split files are copied byte for byte after validation, so the imported rows are exactly
the published ones; ``items.csv`` becomes ``items.jsonl`` (MovieLens items gain ``genres``
and ``year``).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lab.data import movielens
from lab.data.paper_files import paper_copy
from lab.data.store import check_name, staged_dataset_dir, write_jsonl, write_meta
from lab.data.validation import check_contiguous_ids, parse_int, read_csv_records, validate_split_file
from recmodels.dataset import Dataset, DatasetError, sha256_file

ITEMS_CSV = "items.csv"
ITEM_ID_COLUMN = "item_id"
TITLE_COLUMN = "title"
MOVIELENS_ID_COLUMN = "movielens_movie_id"
FULL_TRAIN = "train.jsonl"
# A sample of the training set (steam ships only train_sample1000.jsonl) is accepted when the
# full file is missing; meta.json then says train_complete: false.
PARTIAL_TRAIN_PATTERN = "train_*.jsonl"


@dataclass(frozen=True)
class ItemTable:
    records: list[dict[str, Any]]  # items.jsonl records ordered by id
    attributes: list[str]
    notes: list[str] = field(default_factory=list)


def import_llara(src: Path, datasets_dir: Path, name: str, *, force: bool = False) -> Dataset:
    """Validate and import ``src`` (items.csv, train/val/test JSONL) as ``datasets_dir/name``."""
    check_name(name)
    src = Path(src)
    if not src.is_dir():
        raise DatasetError(src, None, "not a directory")
    is_movielens = _looks_like_movielens(src, name)
    items = _read_items(src, is_movielens=is_movielens)
    n_items = len(items.records)

    train_file, train_complete, notes = _choose_train_file(src)
    split_files = {"train": train_file, "val": src / "val.jsonl", "test": src / "test.jsonl"}
    for split, path in split_files.items():
        if not path.is_file():
            raise DatasetError(path, None, f"missing {split} split file")

    with staged_dataset_dir(datasets_dir, name, force=force) as staging:
        write_jsonl(staging / "items.jsonl", items.records)
        split_counts: dict[str, tuple[int, int]] = {}
        for split, path in split_files.items():
            copy = staging / f"{split}.jsonl"
            shutil.copyfile(path, copy)
            # The copy is what gets validated (and hashed below), so nothing unchecked can slip
            # in if the source changes meanwhile; errors still name the source file.
            # Val/test hold one row per user, so a repeated row id there means a duplicated user.
            stats = validate_split_file(copy, n_items, unique_row_ids=split != "train", report_as=path)
            split_counts[split] = (stats.rows, stats.eval_rows)
        extra: dict[str, Any] = {}
        if is_movielens:
            verified = sha256_file(staging / "train.jsonl") == movielens.VERIFIED_TRAIN_SHA256
            extra["verified"] = verified
            notes.append(movielens.verification_note(verified))
        elif (paper := paper_copy(src)) is not None:
            extra["verified"] = True
            notes.append(f"every file is byte-identical to LLaRA's {paper} data (known SHA-256 digests)")
        write_meta(
            staging,
            name=name,
            n_items=n_items,
            source={"kind": "llara-import", "path": str(src.resolve()), "train_file": train_file.name},
            notes=notes + items.notes,
            train_complete=train_complete,
            attributes=items.attributes,
            extra=extra,
            split_counts=split_counts,
        )
    return Dataset.open(datasets_dir, name)


def _looks_like_movielens(src: Path, name: str) -> bool:
    if name.lower().startswith("movielens"):
        return True
    items_csv = src / ITEMS_CSV
    if not items_csv.is_file():
        return False
    with items_csv.open(encoding="utf-8") as fh:
        return MOVIELENS_ID_COLUMN in fh.readline().strip().split(",")


def _choose_train_file(src: Path) -> tuple[Path, bool, list[str]]:
    full = src / FULL_TRAIN
    if full.is_file():
        return full, True, []
    partial = sorted(src.glob(PARTIAL_TRAIN_PATTERN))
    if len(partial) != 1:
        found = ", ".join(p.name for p in partial) or "none"
        raise DatasetError(
            full,
            None,
            f"missing training file; expected {FULL_TRAIN} or exactly one {PARTIAL_TRAIN_PATTERN} "
            f"(found: {found})",
        )
    note = (
        f"the full training set is missing: train.jsonl is a copy of {partial[0].name}, "
        "a sample of the upstream training rows"
    )
    return partial[0], False, [note]


def _read_items(src: Path, *, is_movielens: bool) -> ItemTable:
    """items.csv -> items.jsonl records; extra columns become attributes."""
    path = src / ITEMS_CSV
    if not path.is_file():
        raise DatasetError(path, None, "missing item table")
    records: dict[int, dict[str, Any]] = {}
    id_lines: dict[int, int] = {}
    # items.jsonl's own "id" key: an extra column of that name would overwrite it.
    for line_no, record in read_csv_records(path, (ITEM_ID_COLUMN, TITLE_COLUMN), reserved=("id",)):
        item_id = parse_int(record.pop(ITEM_ID_COLUMN), path, line_no, ITEM_ID_COLUMN)
        if item_id < 0:
            raise DatasetError(path, line_no, f"negative item id {item_id}")
        if item_id in records:
            raise DatasetError(
                path, line_no, f"duplicate item id {item_id} (first on line {id_lines[item_id]})"
            )
        id_lines[item_id] = line_no
        records[item_id] = {"id": item_id, "title": record.pop(TITLE_COLUMN), **record}
    check_contiguous_ids(list(records), path, id_lines)
    ordered = [records[i] for i in range(len(records))]
    # The MovieLens attributes need the item table's release dates; a table without them (a
    # dataset merely *named* movielens) is imported as plain titles.
    if is_movielens and "release_date" in ordered[0]:
        return _movielens_items(ordered, path, id_lines, src / "raw" / "u.item")
    attributes = sorted({key for rec in ordered for key in rec if key not in ("id", "title")})
    return ItemTable(ordered, attributes)


def _movielens_items(
    records: list[dict[str, Any]], path: Path, id_lines: dict[int, int], u_item: Path
) -> ItemTable:
    """Add ``year`` (from release_date) and, when ``raw/u.item`` is present, ``genres``."""
    raw_items = movielens.read_u_item(u_item) if u_item.is_file() else None
    for rec in records:
        line = id_lines[rec["id"]]
        movie_id = parse_int(
            str(rec.get(MOVIELENS_ID_COLUMN, rec["id"] + 1)), path, line, MOVIELENS_ID_COLUMN
        )
        rec[MOVIELENS_ID_COLUMN] = movie_id
        rec["year"] = movielens.release_year(rec["release_date"])
        if raw_items is not None:
            if movie_id not in raw_items:
                raise DatasetError(u_item, None, f"movie id {movie_id} (items.csv line {line}) is missing")
            rec["genres"] = list(raw_items[movie_id].genres)
    notes: list[str] = []
    if raw_items is None:
        notes.append(f"no {u_item} next to items.csv: items have a year but no genres")
    attributes = sorted({key for rec in records for key in rec if key not in ("id", "title")})
    return ItemTable(records, attributes, notes)
