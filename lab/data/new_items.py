"""New items: catalog entries with text and no interactions yet (cold start).

``recloop data import|build ... --new-items FILE.jsonl`` and ``recloop data add-items`` append
them to a dataset's ``items.jsonl`` with the next free ids; the splits stay as they are. One JSON
object a line: ``{"title": str, ...attributes}`` (e.g. ``genres``, ``year``), optionally with
``"id"``, which must then be the id the item gets.

``meta.json`` keeps the dataset's fingerprint and item count from before any item was added
(``base_fingerprint``, ``base_n_items``): a text-aware model trained on that data still loads on
the grown catalog and scores the new items from their text, without retraining
(:func:`recmodels.artifacts.load_scorer`). An id-only model has to be retrained.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from lab.data.store import staged_dataset_dir, write_jsonl, write_meta
from recmodels.dataset import SPLITS, Dataset, DatasetError

RESERVED = ("history", "next")


def read_new_items(path: Path, first_id: int) -> list[dict[str, Any]]:
    """items.jsonl records (ids from ``first_id``) of a new-items file, validated line by line."""
    path = Path(path)
    if not path.is_file():
        raise DatasetError(path, None, "no such new-items file")
    records: list[dict[str, Any]] = []
    with path.open(encoding="utf-8") as fh:
        for line_no, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                raw = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DatasetError(path, line_no, f"not JSON ({exc.msg})") from None
            if not isinstance(raw, dict):
                raise DatasetError(path, line_no, "expected a JSON object")
            title = raw.pop("title", None)
            if not isinstance(title, str) or not title.strip():
                raise DatasetError(path, line_no, "an item needs a non-empty string 'title'")
            expected = first_id + len(records)
            given = raw.pop("id", expected)
            if given != expected:
                raise DatasetError(path, line_no, f"id {given!r}: new items take the next ids ({expected})")
            bad = [key for key in RESERVED if key in raw]
            if bad:
                raise DatasetError(path, line_no, f"reserved key(s) {bad}")
            records.append({"id": expected, "title": title, **raw})
    if not records:
        raise DatasetError(path, None, "no items")
    return records


def add_items(dataset: Dataset, new_items: Path) -> Dataset:
    """Append the items of ``new_items`` to ``dataset`` (replaced atomically); returns it reopened."""
    meta = dataset.meta
    records = read_new_items(new_items, dataset.n_items)
    datasets_dir = dataset.root.parent
    with staged_dataset_dir(datasets_dir, dataset.name, force=True) as staging:
        for split in SPLITS:
            shutil.copyfile(dataset.root / f"{split}.jsonl", staging / f"{split}.jsonl")
        write_jsonl(staging / "items.jsonl", [item.to_json() for item in dataset.items] + records)
        added = {key for record in records for key in record} - {"id", "title"}
        attributes = sorted(set(meta.get("attributes", [])) | added)
        n_added = len(records) + int(meta.get("new_items", 0))
        base_n_items = int(meta.get("base_n_items", dataset.n_items))
        note = f"new items: {n_added} item(s) with text and no interactions (ids from {base_n_items})"
        write_meta(
            staging,
            name=dataset.name,
            n_items=dataset.n_items + len(records),
            source=meta["source"],
            notes=[n for n in meta.get("notes", []) if not n.startswith("new items:")] + [note],
            train_complete=meta.get("train_complete", True),
            attributes=attributes,
            extra={
                **{k: meta[k] for k in ("verified",) if k in meta},
                "base_fingerprint": meta.get("base_fingerprint", meta["fingerprint"]),
                "base_n_items": base_n_items,
                "new_items": n_added,
            },
            split_counts={s: (meta["split_rows"][s], meta["eval_rows"][s]) for s in SPLITS},
        )
    return Dataset.open(datasets_dir, dataset.name)
