"""The columns a dataset keeps of ``items.jsonl`` (recmodels/items.py): the same items as the file
spells, read through the unchanged ``Dataset`` items API, and the arrays bulk readers take."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from recmodels.dataset import Dataset, Item
from recmodels.items import ItemColumns
from steering.tools import AttributeIndex, attribute_index

LINES = [
    {"id": 0, "title": "Toy Story", "genres": ["Animation", "Comedy"], "year": 1995},
    {"id": 1, "title": "Straße ß", "genres": [], "year": None},
    {"id": 2, "title": "No attributes"},
    {"id": 3, "title": "Only a year", "year": -5},
    {"id": 4, "title": "Only genres", "genres": ["comedy", "Drama", "Drama"]},
    {"id": 5, "title": "", "genres": ["Drama"], "year": 2001},  # an empty title (MovieLens 266)
    {"id": 6, "title": "Year first", "year": 1990, "genres": ["Drama"]},  # another key order
    {"id": 7, "title": "More", "raw_title": "More (1998)", "year": 1998, "genres": ["War"]},
    {"id": 8, "title": "Emoji \U0001f3ac and \ud800 lone", "genres": ["Sci-Fi"], "year": 2020},
    {"id": 9, "title": "Nul\x00inside", "genres": ["Drama"], "year": 1999},
]


def _write(root: Path, lines: list[dict]) -> Dataset:
    root.mkdir(parents=True, exist_ok=True)
    (root / "meta.json").write_text(json.dumps({"name": root.name, "n_items": len(lines)}))
    (root / "items.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    return Dataset(root)


def _as_the_file_spells_them(dataset: Dataset) -> list[Item]:
    """How ``Dataset.items`` read the file before the columns: one Item per line."""
    items = []
    for line in (dataset.root / "items.jsonl").read_text().splitlines():
        raw = json.loads(line)
        items.append(Item(raw.pop("id"), raw.pop("title"), raw))
    return items


def test_the_items_api_reads_what_the_file_says(tmp_path):
    dataset = _write(tmp_path / "mixed", LINES)
    expected = _as_the_file_spells_them(dataset)
    assert list(dataset.items) == expected and len(dataset.items) == len(expected)
    assert [dataset.item(i) for i in range(len(expected))] == expected
    assert [dataset.title(i) for i in range(len(expected))] == [item.title for item in expected]
    assert dataset.items[-1] == expected[-1] and dataset.item(-2) == expected[-2]
    assert dataset.items[2:5] == expected[2:5] and dataset.items[::3] == expected[::3]
    assert dataset.items[8:100] == expected[8:] and dataset.items[5:2] == []
    # Served as JSON (the catalog routes): the same bytes, attribute order included.
    assert [json.dumps(item.to_json()) for item in dataset.items] == [
        json.dumps(item.to_json()) for item in expected
    ]
    assert dataset.item_columns.titles() == [item.title for item in expected]
    with pytest.raises(IndexError):
        dataset.item(len(expected))


def test_only_items_the_columns_cannot_rebuild_keep_their_line(tmp_path):
    columns = _write(tmp_path / "mixed", LINES).item_columns
    assert sorted(columns.irregular) == [6, 7]  # another key order; an attribute of its own
    assert columns.attributes_typed
    # Their genres and years are in the columns all the same, for the bulk readers.
    assert columns.years[[6, 7]].tolist() == [1990, 1998] and columns.has_genres[[6, 7]].all()


@pytest.mark.parametrize(
    "odd",
    [
        {"id": 1, "title": "Genres a string", "genres": "Drama"},
        {"id": 1, "title": "Year a float", "year": 1999.5},
        {"id": 1, "title": "Year a bool", "year": True},
        {"id": 1, "title": "A genre a number", "genres": ["Drama", 3]},
        {"id": 1, "title": 1999},
        {"id": 7, "title": "Id not its line"},
    ],
)
def test_an_item_of_odd_types_is_read_as_the_file_spells_it(tmp_path, odd):
    dataset = _write(tmp_path / "odd", [LINES[0], odd, LINES[2]])
    assert list(dataset.items) == _as_the_file_spells_them(dataset)
    assert 1 in dataset.item_columns.irregular


def test_the_filter_arrays_from_the_columns_are_those_from_the_items(tmp_path, synthetic_dataset):
    for dataset in (synthetic_dataset, _write(tmp_path / "mixed", LINES)):
        from_columns = AttributeIndex.of_columns(dataset.item_columns)
        from_items = AttributeIndex.of_items(list(dataset.items))
        assert from_columns.genre_columns == from_items.genre_columns
        assert np.array_equal(from_columns.genres, from_items.genres)
        assert np.array_equal(from_columns.year_known, from_items.year_known)
        assert np.array_equal(from_columns.years, from_items.years)
        assert attribute_index(dataset) is not None


def test_a_catalog_whose_years_are_not_whole_numbers_is_filtered_item_by_item(tmp_path):
    dataset = _write(tmp_path / "odd", [LINES[0], {"id": 1, "title": "Float", "year": 1999.5}])
    assert not dataset.item_columns.attributes_typed
    assert attribute_index(dataset) is None
    with pytest.raises(ValueError):
        dataset.item_columns.known_years()


def test_reading_keeps_no_item(tmp_path):
    """The columns are arrays and one title buffer: nothing per item but the odd lines."""
    columns = ItemColumns.read(_write(tmp_path / "mixed", LINES).root / "items.jsonl")
    per_item = [v for v in vars(columns).values() if isinstance(v, list)]
    assert per_item == [] and isinstance(columns.title_bytes, bytes)
