"""Writing dataset directories: all or nothing.

Every importer and builder stages its files in a hidden temporary directory next
to the target and renames it into place only when everything validated, so a
failed run never leaves a half-written dataset behind.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from recmodels.dataset import MIN_EVAL_LEN_SEQ, SPLITS, Dataset, compute_fingerprint, sha256_file

META_FORMAT_VERSION = 1
_NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


class DatasetExistsError(FileExistsError):
    """The target dataset directory exists and replacing it was not requested."""


def check_name(name: str) -> str:
    """A dataset name is one safe path component (it becomes a directory name)."""
    if not _NAME_PATTERN.fullmatch(name):
        raise ValueError(
            f"invalid dataset name {name!r}: use 1-64 letters, digits, '_', '.', '-' "
            "and start with a letter or digit"
        )
    return name


@contextmanager
def staged_dataset_dir(datasets_dir: Path, name: str, *, force: bool) -> Iterator[Path]:
    """Yield an empty staging directory; on normal exit it becomes ``datasets_dir/name``.

    On any exception the staging directory is removed and an existing dataset is untouched.
    """
    target = Path(datasets_dir) / check_name(name)
    if target.exists() and not force:
        raise DatasetExistsError(f"dataset {name!r} already exists at {target}; pass --force to replace it")
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".staging-{name}-", dir=target.parent))
    try:
        yield staging
        _swap_into_place(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def _swap_into_place(staging: Path, target: Path) -> None:
    # rename() is atomic on one filesystem; the old copy is moved aside first so that a
    # crash between the two renames leaves either the old or the new dataset, never a mix.
    retired: Path | None = None
    if target.exists():
        retired = Path(tempfile.mkdtemp(prefix=f".retired-{target.name}-", dir=target.parent))
        retired.rmdir()
        target.rename(retired)
    staging.rename(target)
    if retired is not None:
        shutil.rmtree(retired, ignore_errors=True)


def write_jsonl(path: Path, records: Iterable[dict[str, Any]]) -> int:
    """Write one compact JSON object per line (the LLaRA files' ``json.dumps`` layout)."""
    count = 0
    with path.open("w", encoding="utf-8") as fh:
        for record in records:
            fh.write(json.dumps(record, ensure_ascii=False))
            fh.write("\n")
            count += 1
    return count


def count_rows(path: Path) -> tuple[int, int]:
    """(all rows, rows kept for evaluation: len_seq >= 3) of a validated split file."""
    total = kept = 0
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            raw = json.loads(line)
            total += 1
            kept += int(raw.get("len_seq", max(1, len(raw["history"])))) >= MIN_EVAL_LEN_SEQ
    return total, kept


def write_meta(
    root: Path,
    *,
    name: str,
    n_items: int,
    source: dict[str, Any],
    notes: list[str],
    train_complete: bool = True,
    attributes: list[str] | None = None,
    extra: dict[str, Any] | None = None,
    split_counts: dict[str, tuple[int, int]] | None = None,
) -> dict[str, Any]:
    """Write ``meta.json`` for the files already in ``root`` and return it.

    ``split_counts`` (split -> (rows, eval rows)) saves re-reading files the caller just validated.
    """
    counts = split_counts or {split: count_rows(root / f"{split}.jsonl") for split in SPLITS}
    split_rows = {split: counts[split][0] for split in SPLITS}
    eval_rows = {split: counts[split][1] for split in SPLITS}
    meta: dict[str, Any] = {
        "format_version": META_FORMAT_VERSION,
        "name": name,
        "n_items": n_items,
        "source": source,
        "split_rows": split_rows,
        "eval_rows": eval_rows,
        "fingerprint": compute_fingerprint(root),
        "files": {p.name: sha256_file(p) for p in sorted(root.glob("*.jsonl"))},
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "notes": notes,
        "train_complete": train_complete,
        "attributes": sorted(attributes or []),
        **(extra or {}),
    }
    (root / "meta.json").write_text(json.dumps(meta, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return meta


def list_datasets(datasets_dir: Path) -> list[Dataset]:
    """Every complete dataset (one with a meta.json) under ``datasets_dir``, by name."""
    if not Path(datasets_dir).is_dir():
        return []
    return [
        Dataset(path)
        for path in sorted(Path(datasets_dir).iterdir())
        if path.is_dir() and not path.name.startswith(".") and (path / "meta.json").is_file()
    ]
