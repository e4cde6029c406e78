"""`import_llara`: the shared LLaRA files round-trip exactly; every bad input fails cleanly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lab.data.importer import import_llara
from lab.data.store import DatasetExistsError
from recmodels.dataset import Dataset, DatasetError, compute_fingerprint, sha256_file


@pytest.mark.parametrize(
    ("fixture", "split_rows", "eval_rows", "n_items"),
    [
        ("lastfm_dataset", (50_800, 122, 122), (47_872, 122, 122), 4606),
        ("ml_dataset", (68_388, 94, 95), (66_126, 94, 95), 1682),
    ],
)
def test_import_counts_match_the_protocol(request, fixture, split_rows, eval_rows, n_items):
    dataset: Dataset = request.getfixturevalue(fixture)
    assert dataset.n_items == n_items == len(dataset.items)
    assert tuple(dataset.meta["split_rows"][s] for s in ("train", "val", "test")) == split_rows
    assert tuple(dataset.meta["eval_rows"][s] for s in ("train", "val", "test")) == eval_rows
    # The counts in meta.json agree with what the reader actually yields.
    assert len(dataset.eval_rows("test")[0]) == eval_rows[2]
    assert dataset.meta["train_complete"] is True
    assert dataset.fingerprint == compute_fingerprint(dataset.root)


def test_import_copies_split_files_byte_for_byte(ml_dataset, shared_data):
    for split in ("train", "val", "test"):
        assert sha256_file(ml_dataset.root / f"{split}.jsonl") == sha256_file(
            shared_data / "movielens" / f"{split}.jsonl"
        )


def test_movielens_import_is_verified_and_has_genres_and_year(ml_dataset):
    assert ml_dataset.meta["verified"] is True
    assert {"genres", "year"} <= set(ml_dataset.meta["attributes"])
    toy_story = ml_dataset.item(0)
    assert (toy_story.title, toy_story.year) == ("Toy Story", 1995)
    assert toy_story.genres == ["Animation", "Children's", "Comedy"]
    unknown = ml_dataset.item(266)  # the GroupLens "unknown" movie: no date, LLaRA's empty title
    assert (unknown.title, unknown.year, unknown.genres) == ("", None, ["unknown"])
    assert ml_dataset.item(11).title == "The Usual Suspects"


def test_movielens_with_a_different_training_set_is_not_verified(shared_data, tmp_path):
    src = tmp_path / "ml"
    src.mkdir()
    (src / "items.csv").write_bytes((shared_data / "movielens" / "items.csv").read_bytes())
    for split in ("val", "test"):
        (src / f"{split}.jsonl").write_bytes((shared_data / "movielens" / f"{split}.jsonl").read_bytes())
    (src / "train.jsonl").write_bytes((shared_data / "movielens" / "train_head100.jsonl").read_bytes())
    dataset = import_llara(src, tmp_path / "datasets", "movielens")
    assert dataset.meta["verified"] is False
    # No raw/u.item beside items.csv: the year is still there, the genres are not.
    assert "genres" not in dataset.meta["attributes"] and dataset.item(0).year == 1995


def test_steam_import_records_the_incomplete_training_set(shared_data, tmp_path):
    dataset = import_llara(shared_data / "steam", tmp_path, "steam")
    assert dataset.meta["split_rows"] == {"train": 1000, "val": 1194, "test": 1194}
    assert dataset.meta["eval_rows"]["test"] == 1186
    assert dataset.meta["train_complete"] is False
    assert any("missing" in note for note in dataset.meta["notes"])
    assert dataset.meta["verified"] is True  # byte-identical to LLaRA's Steam files (a sample, still)


# --- bad input -------------------------------------------------------------------------------

ITEMS = "item_id,title\n0,A\n1,B\n2,C\n3,D\n"
TRAIN = [{"row": 0, "history": [], "len_seq": 1, "next": 0}, {"row": 1, "history": [0], "next": 1}]
VAL = [{"row": 5, "history": [0, 1, 2], "next": 3}]
TEST = [{"row": 6, "history": [1, 2, 3], "len_seq": 3, "next": 0}]


def _jsonl(rows: list[dict]) -> str:
    return "".join(json.dumps(row) + "\n" for row in rows)


def _write_source(root: Path, **overrides: str) -> Path:
    files = {
        "items.csv": ITEMS,
        "train.jsonl": _jsonl(TRAIN),
        "val.jsonl": _jsonl(VAL),
        "test.jsonl": _jsonl(TEST),
    }
    files.update({name.replace("_", ".", 1): text for name, text in overrides.items()})
    root.mkdir(parents=True)
    for name, text in files.items():
        if text is not None:
            (root / name).write_text(text)
    return root


def test_a_dataset_merely_named_movielens_imports_as_plain_titles(tmp_path):
    dataset = import_llara(_write_source(tmp_path / "src"), tmp_path / "datasets", "movielens-tiny")
    assert dataset.meta["verified"] is False
    assert dataset.meta["attributes"] == [] and dataset.item(0).year is None


def test_small_valid_source_imports(tmp_path):
    dataset = import_llara(_write_source(tmp_path / "src"), tmp_path / "datasets", "tiny")
    assert dataset.meta["split_rows"] == {"train": 2, "val": 1, "test": 1}
    assert [item.title for item in dataset.items] == ["A", "B", "C", "D"]
    assert dataset.rows("val")[0].history == (0, 1, 2)


@pytest.mark.parametrize(
    ("overrides", "bad_file", "line", "reason"),
    [
        ({"items_csv": "item_id,name\n0,A\n"}, "items.csv", 1, "missing column(s) title"),
        ({"items_csv": "item_id,title\nx,A\n"}, "items.csv", 2, "item_id must be an integer"),
        ({"items_csv": "item_id,title\n0,A\n1,B\n0,C\n"}, "items.csv", 4, "duplicate item id 0"),
        ({"items_csv": "item_id,title\n0,A\n2,B\n"}, "items.csv", 3, "id 1 is missing"),
        ({"items_csv": ""}, "items.csv", None, "empty file"),
        ({"train_jsonl": ""}, "train.jsonl", None, "empty file"),
        ({"train_jsonl": '{"history": []}\n'}, "train.jsonl", 1, "missing key(s) next"),
        (
            {"val_jsonl": '{"history": [0, "1"], "next": 2}\n'},
            "val.jsonl",
            1,
            "history[1] must be an integer",
        ),
        ({"val_jsonl": '{"history": [0], "next": 1.5}\n'}, "val.jsonl", 1, "next must be an integer"),
        (
            {"test_jsonl": _jsonl(TEST[:1] + [{"history": [9], "next": 0}])},
            "test.jsonl",
            2,
            "unknown item id 9",
        ),
        ({"test_jsonl": _jsonl(TEST + TEST)}, "test.jsonl", 2, "duplicate row id 6"),
        (
            {"train_jsonl": _jsonl([{"history": [0] * 11, "next": 1}])},
            "train.jsonl",
            1,
            "history has 11 items",
        ),
        (
            {"train_jsonl": _jsonl([{"history": [0, 1], "len_seq": 3, "next": 1}])},
            "train.jsonl",
            1,
            "len_seq",
        ),
        ({"train_jsonl": "{not json\n"}, "train.jsonl", 1, "invalid JSON"),
        ({"val_jsonl": '{"row": [1], "history": [0], "next": 1}\n'}, "val.jsonl", 1, "row must be an int"),
        (
            {"val_jsonl": '{"history": [0], "history_ratings": 5, "next": 1}\n'},
            "val.jsonl",
            1,
            "history_ratings must be a list",
        ),
        ({"train_jsonl": '{"history": [0], "next": 1}\n\n'}, "train.jsonl", 2, "blank line"),
        ({"train_jsonl": "[1, 2]\n"}, "train.jsonl", 1, "expected a JSON object"),
        ({"val_jsonl": '{"history": [0, 1], "seq_padded": [0, 1], "next": 2}\n'}, "val.jsonl", 1, "padded"),
        ({"test_jsonl": None}, "test.jsonl", None, "missing test split file"),
    ],
)
def test_bad_input_names_file_line_and_reason_and_leaves_nothing(tmp_path, overrides, bad_file, line, reason):
    src = _write_source(tmp_path / "src", **overrides)
    datasets_dir = tmp_path / "datasets"
    with pytest.raises(DatasetError) as caught:
        import_llara(src, datasets_dir, "tiny")
    error = caught.value
    assert (Path(error.path).name, error.line) == (bad_file, line)
    assert reason in error.reason
    assert str(src / bad_file) in str(error)
    assert not datasets_dir.exists() or list(datasets_dir.iterdir()) == []


def test_existing_dataset_is_kept_unless_forced(tmp_path):
    src = _write_source(tmp_path / "src")
    datasets_dir = tmp_path / "datasets"
    first_fingerprint = import_llara(src, datasets_dir, "tiny").fingerprint
    with pytest.raises(DatasetExistsError):
        import_llara(src, datasets_dir, "tiny")
    (src / "items.csv").write_text(ITEMS.replace("0,A", "0,Renamed"))
    replaced = import_llara(src, datasets_dir, "tiny", force=True)
    assert replaced.item(0).title == "Renamed"
    assert replaced.fingerprint != first_fingerprint
    assert sorted(p.name for p in datasets_dir.iterdir()) == ["tiny"]


def test_failed_forced_import_keeps_the_old_dataset(tmp_path):
    datasets_dir = tmp_path / "datasets"
    import_llara(_write_source(tmp_path / "good"), datasets_dir, "tiny")
    bad = _write_source(tmp_path / "bad", val_jsonl='{"history": [7], "next": 0}\n')
    with pytest.raises(DatasetError):
        import_llara(bad, datasets_dir, "tiny", force=True)
    assert Dataset.open(datasets_dir, "tiny").meta["split_rows"]["val"] == 1
    assert sorted(p.name for p in datasets_dir.iterdir()) == ["tiny"]


@pytest.mark.parametrize("name", ["", "../evil", ".hidden", "a/b", "x" * 65])
def test_unsafe_names_are_rejected(tmp_path, name):
    with pytest.raises(ValueError, match="invalid dataset name"):
        import_llara(_write_source(tmp_path / "src"), tmp_path / "datasets", name)
