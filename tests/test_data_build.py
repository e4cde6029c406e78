"""Raw builders: MovieLens-100k rebuilt byte for byte, generic CSV rows exactly as specified."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

import lab.data.introsort as introsort
from lab.data.builders import build_from_csv, build_movielens_raw
from lab.data.introsort import numpy_argsort
from lab.data.movielens import VERIFIED_SPLIT_SHA256
from lab.data.sequences import Event, RowLayout, UserSequence, split_rows
from recmodels.dataset import DatasetError, sha256_file

# --- NumPy's classic introsort --------------------------------------------------------------


def _numpy_classic_argsort(keys: list[int]) -> list[int]:
    # NumPy sends 32/64-bit argsorts to SIMD code on AVX2/AVX-512 machines (other tie order), but
    # 16-bit keys still take the classic scalar introsort: the reference for the port.
    return np.argsort(np.asarray(keys, dtype=np.int16), kind="quicksort").tolist()


def test_argsort_port_orders_ties_exactly_like_numpy_classic_quicksort():
    rng = random.Random(7)
    for _ in range(200):
        n = rng.choice([2, 16, 17, 18, 40, 300])
        keys = [rng.randrange(rng.choice([2, 4, 30])) for _ in range(n)]
        order = numpy_argsort(keys)
        assert [keys[i] for i in order] == sorted(keys)
        assert order == _numpy_classic_argsort(keys)


def test_argsort_heapsort_fallback_matches_numpy(monkeypatch):
    # NumPy's own "degraded quicksort" input (median-of-3 killer) exhausts the depth budget.
    data = np.arange(2000)
    view = data
    while view.size > 3:
        mid = view.size // 2
        view[mid], view[-2] = view[-2], view[mid]
        view = view[1:-2]
    keys = (data // 2).tolist()  # pairs of equal keys: the heapsort's tie order is exercised too
    heapsort_calls = []
    real_heapsort = introsort._aheapsort
    monkeypatch.setattr(introsort, "_aheapsort", lambda *a: heapsort_calls.append(a) or real_heapsort(*a))
    assert numpy_argsort(keys) == _numpy_classic_argsort(keys)
    assert heapsort_calls, "the input no longer reaches the heapsort fallback"


def test_argsort_small_inputs_keep_insertion_sort_order():
    # Up to 16 items NumPy only insertion-sorts, which is stable.
    assert numpy_argsort([3, 1, 3, 1, 2]) == [1, 3, 4, 0, 2]
    assert numpy_argsort([5] * 16) == list(range(16))
    assert numpy_argsort([]) == [] and numpy_argsort([9]) == [0]


# --- MovieLens-100k raw build ---------------------------------------------------------------


@pytest.fixture(scope="module")
def ml_raw_build(movielens_raw, tmp_path_factory):
    return build_movielens_raw(movielens_raw, tmp_path_factory.mktemp("raw"), "ml-raw")


def test_movielens_raw_build_is_byte_identical_to_the_llara_splits(ml_raw_build, ml_dataset, movielens_raw):
    assert ml_raw_build.meta["split_rows"] == {"train": 68_388, "val": 94, "test": 95}
    assert ml_raw_build.meta["eval_rows"] == {"train": 66_126, "val": 94, "test": 95}
    for split in ("train", "val", "test"):
        # The digests of LLaRA's published splits (lab/data/movielens.py).
        assert sha256_file(ml_raw_build.root / f"{split}.jsonl") == VERIFIED_SPLIT_SHA256[split], split
    assert ml_raw_build.meta["verified"] is True
    users = ml_raw_build.meta["users"]
    assert [len(users[s]) for s in ("train", "val", "test")] == [754, 94, 95]
    assert len(set(users["train"] + users["val"] + users["test"])) == 943
    # Rows follow the users' first appearance among the kept ratings (the first line is lost).
    lines = (movielens_raw / "u.data").read_text().splitlines()[1:]
    kept = [int(f[0]) for f in (line.split("\t") for line in lines) if int(f[2]) >= 3]
    first_seen = list(dict.fromkeys(kept))
    assert users["train"] == [u for u in first_seen if u in set(users["train"])]
    # Same items.jsonl as the import of items.csv + u.item, hence the same fingerprint.
    assert ml_raw_build.fingerprint == ml_dataset.fingerprint


def test_movielens_raw_items_have_llara_titles_genres_and_year(ml_raw_build):
    assert ml_raw_build.n_items == 1682
    usual_suspects = ml_raw_build.item(11)
    assert usual_suspects.title == "The Usual Suspects"
    assert (usual_suspects.year, usual_suspects.genres) == (1995, ["Crime", "Thriller"])


def _raw_copy(movielens_raw: Path, root: Path, u_data: str | None = None, u_item: str | None = None) -> Path:
    root.mkdir()
    raw = movielens_raw
    (root / "u.item").write_text(
        u_item if u_item is not None else (raw / "u.item").read_text("latin-1"), "latin-1"
    )
    if u_data is not None:
        (root / "u.data").write_text(u_data)
    return root


@pytest.mark.parametrize(
    ("u_data", "line", "reason"),
    [
        ("196\t242\t3\t881250949\n186\t302\t3\n", 2, "expected 4 tab-separated fields, got 3"),
        ("196\t242\t3\t881250949\n186\t9999\t3\t891717742\n", 2, "unknown movie id 9999"),
        ("196\t242\t3\t881250949\n186\tx\t3\t891717742\n", 2, "movie_id must be an integer"),
        ("196\t242\t3\t881250949\n", None, "empty file"),  # the only rating is the lost header line
    ],
)
def test_movielens_raw_bad_u_data(movielens_raw, tmp_path, u_data, line, reason):
    raw = _raw_copy(movielens_raw, tmp_path / "raw", u_data=u_data)
    with pytest.raises(DatasetError) as caught:
        build_movielens_raw(raw, tmp_path / "datasets", "ml")
    assert (Path(caught.value.path).name, caught.value.line) == ("u.data", line)
    assert reason in caught.value.reason
    assert not (tmp_path / "datasets").exists() or not any((tmp_path / "datasets").iterdir())


def test_movielens_raw_missing_u_data_is_named(movielens_raw, tmp_path):
    raw = _raw_copy(movielens_raw, tmp_path / "raw")
    with pytest.raises(DatasetError, match="u.data: missing MovieLens-100k file"):
        build_movielens_raw(raw, tmp_path / "datasets", "ml")


def test_movielens_raw_bad_u_item_flags(movielens_raw, tmp_path):
    bad_item = "1|Toy Story (1995)|01-Jan-1995||url|0|0|0|1|1|1|0|0|0|0|0|0|0|0|0|0|0|0|2\n"
    raw = _raw_copy(movielens_raw, tmp_path / "raw", u_data="1\t1\t3\t1\n", u_item=bad_item)
    with pytest.raises(DatasetError) as caught:
        build_movielens_raw(raw, tmp_path / "datasets", "ml")
    assert (Path(caught.value.path).name, caught.value.line, caught.value.reason) == (
        "u.item",
        1,
        "genre flags must be 0 or 1",
    )


# --- windows --------------------------------------------------------------------------------


def test_training_windows_keep_the_last_ten_items_and_pad_on_the_right():
    user = UserSequence("u", tuple(Event(item, float(t)) for t, item in enumerate(range(12))))
    rows = split_rows(
        {"train": [user], "val": [], "test": []}, RowLayout(99, with_user=True, with_ratings=False)
    )
    train = rows["train"]
    assert [r["next"] for r in train] == list(range(12))
    assert train[0] == {
        "row": 0,
        "user": "u",
        "history": [],
        "seq_padded": [99] * 10,
        "len_seq": 1,
        "next": 0,
    }
    assert train[3]["seq_padded"] == [0, 1, 2] + [99] * 7 and train[3]["len_seq"] == 3
    assert train[11]["history"] == list(range(1, 11)) and train[11]["len_seq"] == 10


# --- generic CSV ----------------------------------------------------------------------------

ITEMS_CSV = "item,title,genre\ni10,Alpha,x\ni20,Beta,y\ni30,Gamma,x\ni40,Delta,y\n"
# u10 comes first in the file but starts last (test user); u9 starts second last (validation).
# u1 has two interactions at t=105: a stable sort keeps their file order (i20 before i30).
INTERACTIONS_CSV = (
    "user,item,timestamp,rating\n"
    "u10,i40,1000,4\n"
    "u1,i10,100,5\n"
    "u1,i20,105,4\n"
    "u1,i30,105,2\n"
    "u1,i40,103,3\n"
    + "".join(f"u{k},i10,{100 * k},3\n" for k in range(2, 9))
    + "u9,i20,900,5\nu9,i30,901,4\nu9,i10,902,3\n"
    "u10,i10,1001,5\n"
)


def _write(tmp_path: Path, interactions: str = INTERACTIONS_CSV, items: str = ITEMS_CSV) -> tuple[Path, Path]:
    (tmp_path / "interactions.csv").write_text(interactions)
    (tmp_path / "items.csv").write_text(items)
    return tmp_path / "interactions.csv", tmp_path / "items.csv"


def _padded(history: list[int]) -> list[int]:
    return history + [4] * (10 - len(history))


def test_csv_build_gives_exactly_the_expected_rows(tmp_path):
    interactions, items = _write(tmp_path)
    dataset = build_from_csv(interactions, items, tmp_path / "datasets", "tiny")
    assert [item.to_json() for item in dataset.items] == [
        {"id": 0, "title": "Alpha", "external_id": "i10", "genre": "x"},
        {"id": 1, "title": "Beta", "external_id": "i20", "genre": "y"},
        {"id": 2, "title": "Gamma", "external_id": "i30", "genre": "x"},
        {"id": 3, "title": "Delta", "external_id": "i40", "genre": "y"},
    ]
    train = [(row.extra["user"], list(row.history), row.next) for row in dataset.rows("train")]
    assert train == [
        ("u1", [], 0),
        ("u1", [0], 3),
        ("u1", [0, 3], 1),
        ("u1", [0, 3, 1], 2),
        *((f"u{k}", [], 0) for k in range(2, 9)),
    ]
    val_line = (dataset.root / "val.jsonl").read_text()
    assert val_line == (
        '{"row": 0, "user": "u9", "history": [1, 2], "history_ratings": [5, 4], '
        f'"seq_padded": {_padded([1, 2])}, "len_seq": 2, "next": 0, "next_rating": 3}}\n'
    )
    test_rows = dataset.rows("test")
    assert [(r.extra["user"], r.history, r.next, r.extra["next_rating"]) for r in test_rows] == [
        ("u10", (3,), 0, 5)
    ]
    assert dataset.meta["split_rows"] == {"train": 11, "val": 1, "test": 1}
    assert dataset.meta["eval_rows"] == {"train": 1, "val": 0, "test": 0}
    assert dataset.meta["attributes"] == ["external_id", "genre"]


def test_csv_build_min_rating_drops_low_ratings_before_windowing(tmp_path):
    interactions, items = _write(tmp_path)
    dataset = build_from_csv(interactions, items, tmp_path / "datasets", "tiny", min_rating=3)
    u1 = [(list(r.history), r.next) for r in dataset.rows("train") if r.extra["user"] == "u1"]
    assert u1 == [([], 0), ([0], 3), ([0, 3], 1)]  # i30 (rating 2) is gone


@pytest.mark.parametrize(
    ("interactions", "items", "bad_file", "line", "reason"),
    [
        ("user,item\nu1,i10\n", ITEMS_CSV, "interactions.csv", 1, "missing column(s) timestamp"),
        (INTERACTIONS_CSV, "item,name\ni10,Alpha\n", "items.csv", 1, "missing column(s) title"),
        (
            INTERACTIONS_CSV.replace("u1,i20,105", "u1,i99,105"),
            ITEMS_CSV,
            "interactions.csv",
            4,
            "unknown item id 'i99'",
        ),
        (
            INTERACTIONS_CSV.replace("u1,i20,105", "u1,i20,soon"),
            ITEMS_CSV,
            "interactions.csv",
            4,
            "timestamp must be a number",
        ),
        (
            INTERACTIONS_CSV.replace("i20,105,4", "i20,105,good"),
            ITEMS_CSV,
            "interactions.csv",
            4,
            "rating must be a number",
        ),
        (INTERACTIONS_CSV + "u1,i10,100,1\n", ITEMS_CSV, "interactions.csv", 18, "duplicate interaction"),
        (
            INTERACTIONS_CSV,
            ITEMS_CSV + "i20,Again,z\n",
            "items.csv",
            6,
            "duplicate item id 'i20' (first on line 3)",
        ),
        ("", ITEMS_CSV, "interactions.csv", None, "empty file"),
        (INTERACTIONS_CSV, "item,title,id\ni10,Alpha,7\n", "items.csv", 1, "reserved column name(s) id"),
        ("user,item,timestamp\n", ITEMS_CSV, "interactions.csv", None, "empty file"),
        (INTERACTIONS_CSV, "", "items.csv", None, "empty file"),
        (
            "user,item,timestamp\nu1,i10,1\nu2,i10,2\n",
            ITEMS_CSV,
            "interactions.csv",
            None,
            "2 users; at least 10",
        ),
        ("user,item,timestamp\nu1,i10,1,7\n", ITEMS_CSV, "interactions.csv", 2, "wrong number of fields"),
    ],
)
def test_csv_bad_input_names_file_line_and_reason(tmp_path, interactions, items, bad_file, line, reason):
    interactions_path, items_path = _write(tmp_path, interactions, items)
    with pytest.raises(DatasetError) as caught:
        build_from_csv(interactions_path, items_path, tmp_path / "datasets", "tiny")
    assert (Path(caught.value.path).name, caught.value.line) == (bad_file, line)
    assert reason in caught.value.reason
    assert not (tmp_path / "datasets").exists() or not any((tmp_path / "datasets").iterdir())


def test_csv_min_rating_without_a_rating_column_is_refused(tmp_path):
    interactions, items = _write(tmp_path, interactions="user,item,timestamp\nu1,i10,1\n")
    with pytest.raises(DatasetError, match="--min-rating needs a rating column"):
        build_from_csv(interactions, items, tmp_path / "datasets", "tiny", min_rating=3)


def test_csv_genres_and_year_columns_are_what_steering_reads(tmp_path):
    """A custom catalog's own metadata: "genres" (joined by |) is a list and "year" an integer, so the
    parsers read its genre names and eras; without them those words are moods (never a guess)."""
    from steering.rule_parser import OfflineParser

    items = (
        "item,title,genres,year\ni10,Alpha,Thriller|Drama,1975\ni20,Beta,Comedy,\ni30,Gamma,,1999\n"
        "i40,Delta,Drama,1980\n"
    )
    interactions, items_csv = _write(tmp_path, items=items)
    dataset = build_from_csv(interactions, items_csv, tmp_path / "datasets", "own")
    assert dataset.items[0].genres == ["Thriller", "Drama"] and dataset.items[0].year == 1975
    assert dataset.items[1].year is None and dataset.items[2].genres == []
    read = OfflineParser(dataset).read("surprise me with a 70s thriller").update
    assert read.positive.genres == ["Thriller"]
    assert (read.positive.year_range.start, read.positive.year_range.end) == (1970, 1979)
    bad = items.replace("1975", "mid-70s")
    with pytest.raises(DatasetError, match="year must be an integer"):
        build_from_csv(interactions, _write(tmp_path, items=bad)[1], tmp_path / "datasets", "bad")
