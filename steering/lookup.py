"""The catalog's steering look-up: made by `recloop prepare`, read by every worker.

What steering otherwise builds from every item when a worker starts (measured at 10^5 items: the
hard filter's genre and year arrays 1.5 s, the title table and genre names 0.5 s, the rule
parser's fragile titles 1.2 s; ten times that at 10^6, in every worker):

- :class:`steering.tools.AttributeIndex`'s arrays, one ``.npy`` file each, memory-mapped read-only
  (the workers of a machine share one copy in the page cache);
- :class:`steering.catalog_index.CatalogIndex`'s tables (:attr:`CatalogIndex.TABLES`), one pickle.

They are kept under ``<data_dir>/steering/<dataset>/`` beside ``key.json``, which holds the
dataset's fingerprint and :data:`LOOKUP_VERSION`: a look-up with another key is stale. A worker
reads it (:func:`load_lookup`); when it is missing or stale the worker says so, naming `recloop
prepare`, and builds the tables itself as before (seconds up to 10^5 items): unlike the
calibration, nothing here is fitted, so a worker can still serve without it.
"""

from __future__ import annotations

import json
import logging
import pickle
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from steering.catalog_index import Catalog, CatalogIndex
from steering.tools import AttributeIndex, attribute_index, use_attribute_index

log = logging.getLogger(__name__)

LOOKUP_VERSION = 1
"""Part of the key: a change to what the tables hold (catalog_index, tools) makes saved ones stale."""
_ARRAYS = ("genres", "year_known", "years")


@dataclass(frozen=True)
class SteeringLookup:
    """What steering reads from a catalog, built once: the attribute arrays and the index tables."""

    attributes: AttributeIndex | None
    """None for a catalog the arrays cannot hold (the filter then asks each item)."""
    tables: dict[str, Any]
    """:attr:`CatalogIndex.TABLES` by name."""


def lookup_dir(data_dir: Path, dataset: str) -> Path:
    return Path(data_dir) / "steering" / dataset


def lookup_key(fingerprint: str) -> dict[str, Any]:
    """Everything the look-up depends on: the dataset's version and what the tables hold."""
    return {"version": LOOKUP_VERSION, "dataset_fingerprint": fingerprint}


def build_lookup(catalog: Catalog) -> SteeringLookup:
    """The look-up from every item of ``catalog`` (what a worker built at start-up before)."""
    index = CatalogIndex(catalog)
    return SteeringLookup(
        attribute_index(catalog), {name: getattr(index, name) for name in CatalogIndex.TABLES}
    )


def save_lookup(lookup: SteeringLookup, where: Path, fingerprint: str) -> None:
    """Write the look-up to ``where`` (replacing the one there), its key last: a reader that finds
    the key finds the files it names."""
    partial = where.with_name(where.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    attributes = lookup.attributes
    if attributes is not None:
        for name in _ARRAYS:
            np.save(partial / f"{name}.npy", getattr(attributes, name))
    with (partial / "tables.pickle").open("wb") as fh:
        pickle.dump(lookup.tables, fh, protocol=pickle.HIGHEST_PROTOCOL)
    key = {
        **lookup_key(fingerprint),
        "genre_columns": attributes.genre_columns if attributes is not None else None,
    }
    (partial / "key.json").write_text(json.dumps(key, indent=2, sort_keys=True) + "\n")
    shutil.rmtree(where, ignore_errors=True)
    partial.replace(where)


def load_lookup(where: Path, fingerprint: str) -> SteeringLookup | None:
    """The look-up saved at ``where`` for this dataset version, arrays memory-mapped; None when it
    is missing, stale or unreadable (logged)."""
    key_path = where / "key.json"
    if not key_path.is_file():
        return None
    try:
        key = json.loads(key_path.read_text())
        if {k: key.get(k) for k in lookup_key(fingerprint)} != lookup_key(fingerprint):
            log.warning(
                "ignoring the stale steering look-up at %s (another dataset version or format)", where
            )
            return None
        attributes = None
        if key["genre_columns"] is not None:
            arrays = {name: np.load(where / f"{name}.npy", mmap_mode="r") for name in _ARRAYS}
            attributes = AttributeIndex.from_arrays(key["genre_columns"], **arrays)
        with (where / "tables.pickle").open("rb") as fh:
            tables = pickle.load(fh)  # written by save_lookup into the data dir, as the models are
    except (OSError, ValueError, KeyError, TypeError, pickle.UnpicklingError) as exc:
        log.warning("ignoring the unreadable steering look-up at %s (%s)", where, exc)
        return None
    return SteeringLookup(attributes, tables)


def catalog_index(catalog: Catalog, data_dir: Path, name: str, fingerprint: str) -> CatalogIndex:
    """The worker's :class:`CatalogIndex` of ``catalog`` on the saved look-up (and the hard filter's
    arrays installed for it); without a current one, built from the items, as before, with a
    warning naming `recloop prepare`."""
    where = lookup_dir(data_dir, name)
    lookup = load_lookup(where, fingerprint)
    if lookup is None:
        log.warning(
            "no current steering look-up for %s at %s: building it from the catalog (seconds per 10^5 "
            "items, in every worker); `recloop prepare` saves it once",
            name,
            where,
        )
        return CatalogIndex(catalog)
    use_attribute_index(catalog, lookup.attributes)
    return CatalogIndex(catalog, lookup.tables)
