"""The steering look-up prepare saves and a worker reads (steering/lookup.py): round trip, staleness."""

from __future__ import annotations

import json

import numpy as np
import pytest

from recmodels.dataset import Item
from steering import lookup
from steering.catalog_index import CatalogIndex, InMemoryCatalog
from steering.preferences import Preferences, Side, YearRange
from steering.rule_parser import OfflineParser
from steering.tools import attribute_index

ITEMS = [
    Item(0, "Toy Story", {"genres": ["Animation", "Comedy"], "year": 1995}),
    Item(1, "Boot, Das", {"genres": ["War"], "year": 1981}),
    Item(2, "G.I. Jane", {"genres": ["Action", "War"], "year": 1997}),
    Item(3, "Heat", {"genres": ["Crime"], "year": None}),
    Item(4, "The Heat", {"genres": ["Comedy"], "year": 2013}),
]


class _NoItems(InMemoryCatalog):
    """A catalog whose items must not be read: the look-up's tables stand in for them."""

    @property
    def items(self) -> list[Item]:
        raise AssertionError("the catalog's items were read although the look-up holds its tables")


def test_a_saved_look_up_reads_back_as_built(tmp_path) -> None:
    catalog = InMemoryCatalog(ITEMS)
    built = lookup.build_lookup(catalog)
    where = lookup.lookup_dir(tmp_path, "mini")
    lookup.save_lookup(built, where, "f" * 64)
    read = lookup.load_lookup(where, "f" * 64)
    assert read is not None and read.tables == built.tables
    assert isinstance(read.attributes.genres, np.memmap)  # mapped, not copied, by each worker
    prefs = Preferences(
        positive=Side(genres=["War", "comedy"]), negative=Side(year_range=YearRange(end=1990))
    )
    assert read.attributes.allowed(prefs).tolist() == built.attributes.allowed(prefs).tolist()
    assert sorted(built.tables["fragile_titles"]) == ["boot, das", "g.i. jane"]

    # A worker's index and parser on it never read the items (the arrays are installed too).
    served = _NoItems(ITEMS)
    index = lookup.catalog_index(served, tmp_path, "mini", "f" * 64)
    assert index.ids_for_title("the heat") == [3, 4] and index.genres == CatalogIndex(catalog).genres
    assert attribute_index(served) is not None
    assert (
        OfflineParser(index).read("no war films").update == OfflineParser(catalog).read("no war films").update
    )


def test_a_stale_or_missing_look_up_is_refused_and_the_worker_builds_its_own(tmp_path, caplog) -> None:
    catalog = InMemoryCatalog(ITEMS)
    where = lookup.lookup_dir(tmp_path, "mini")
    assert lookup.load_lookup(where, "f" * 64) is None  # missing
    lookup.save_lookup(lookup.build_lookup(catalog), where, "f" * 64)
    assert lookup.load_lookup(where, "0" * 64) is None  # another dataset version
    key = json.loads((where / "key.json").read_text())
    (where / "key.json").write_text(json.dumps({**key, "version": lookup.LOOKUP_VERSION + 1}))
    assert lookup.load_lookup(where, "f" * 64) is None  # another format
    with caplog.at_level("WARNING"):
        index = lookup.catalog_index(catalog, tmp_path, "mini", "f" * 64)
    assert "recloop prepare" in caplog.text and index.resolve_title("Toy Story") == 0


def test_unknown_tables_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown catalog index table"):
        CatalogIndex(InMemoryCatalog(ITEMS), {"titles_by_color": {}})
