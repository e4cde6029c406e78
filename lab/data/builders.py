"""Build datasets from raw interactions: MovieLens-100k (GroupLens layout) and generic CSV."""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lab.data import movielens
from lab.data.introsort import numpy_argsort
from lab.data.sequences import Event, RowLayout, UserSequence, split_rows, split_users_by_time
from lab.data.store import check_name, staged_dataset_dir, write_jsonl, write_meta
from lab.data.validation import parse_int, read_csv_records
from recmodels.dataset import SPLITS, Dataset, DatasetError, sha256_file

MIN_USERS = 10  # the 8:1:1 user split needs at least one validation and one test user
MOVIELENS_MIN_RATING = 3  # LLaRA keeps ratings >= 3


@dataclass(frozen=True)
class Rating:
    user: int
    movie_id: int
    rating: int
    timestamp: int


# --- MovieLens-100k -------------------------------------------------------------------------


def build_movielens_raw(
    raw_dir: Path, datasets_dir: Path, name: str, *, force: bool = False, notes: Sequence[str] = ()
) -> Dataset:
    """Rebuild LLaRA's MovieLens-100k splits from GroupLens ``u.data`` and ``u.item``.

    Follows the rule recovered in the shared data README (movielens/raw): the first line of
    u.data is lost (read as a header upstream), ratings >= 3 are kept, users come in order of
    first appearance, each user's ratings are ordered by timestamp with NumPy's classic
    introsort (its tie order matters), and users are split 754/94/95 by earliest timestamp.
    Rows keep the upstream layout exactly (no ``user`` key) so the output can be byte-identical;
    meta.json lists each split's GroupLens user ids in row order instead.
    """
    check_name(name)
    raw_dir = Path(raw_dir)
    u_data, u_item = raw_dir / "u.data", raw_dir / "u.item"
    for path in (u_data, u_item):
        if not path.is_file():
            raise DatasetError(path, None, "missing MovieLens-100k file")
    movies = movielens.read_u_item(u_item)
    _check_movie_ids(movies, u_item)
    ratings = read_u_data(u_data, known_movies=movies.keys())
    users = _movielens_sequences(ratings)
    n_items = len(movies)
    layout = RowLayout(pad_id=n_items, with_user=False, with_ratings=True)
    users_by_split = split_users_by_time(users)
    rows = split_rows(users_by_split, layout)
    ordered_movies = (movies[movie_id] for movie_id in range(1, n_items + 1))
    items = [{"id": m.movie_id - 1, "title": m.title, **m.attributes()} for m in ordered_movies]

    with staged_dataset_dir(datasets_dir, name, force=force) as staging:
        write_jsonl(staging / "items.jsonl", items)
        for split in SPLITS:
            write_jsonl(staging / f"{split}.jsonl", rows[split])
        identical = movielens.verify_splits(staging)
        write_meta(
            staging,
            name=name,
            n_items=n_items,
            source={
                "kind": "movielens-raw",
                "path": str(raw_dir.resolve()),
                "u_data_sha256": sha256_file(u_data),
                "u_item_sha256": sha256_file(u_item),
            },
            notes=[
                "rebuilt from MovieLens-100k ratings by LLaRA's rule (ratings >= 3, first u.data line "
                "dropped as upstream, NumPy-introsort tie order, users split 8:1:1 by first rating)",
                movielens.verification_note(identical["train"]),
                *notes,
            ],
            attributes=["genres", "movielens_movie_id", "raw_title", "release_date", "year"],
            extra={
                "verified": identical["train"],
                "identical_to_llara": identical,
                # Rows keep LLaRA's exact layout, so the GroupLens user ids live here instead:
                # split -> user id of each row's user, users in row order.
                "users": {split: [user.user for user in users_by_split[split]] for split in SPLITS},
            },
        )
    return Dataset.open(datasets_dir, name)


def _check_movie_ids(movies: dict[int, movielens.MovieLensItem], path: Path) -> None:
    """Movie ids must be 1..n so that item id = movie id - 1 is contiguous from 0."""
    for expected, movie_id in enumerate(sorted(movies), start=1):
        if movie_id != expected:
            raise DatasetError(path, None, f"movie ids must be 1..{len(movies)}; id {expected} is missing")


def read_u_data(path: Path, *, known_movies: Collection[int]) -> list[Rating]:
    """Ratings of a GroupLens ``u.data`` (tab-separated user, movie, rating, timestamp).

    The first line is skipped on purpose: LLaRA read the file with pandas' default header, so
    that rating never reached the published splits.
    """
    ratings: list[Rating] = []
    with path.open(encoding="ascii", errors="replace") as fh:
        for line_no, line in enumerate(fh, start=1):
            fields = line.rstrip("\n").split("\t")
            if len(fields) != 4:
                raise DatasetError(path, line_no, f"expected 4 tab-separated fields, got {len(fields)}")
            user, movie_id, rating, timestamp = (
                parse_int(text, path, line_no, column)
                for text, column in zip(fields, ("user_id", "movie_id", "rating", "timestamp"), strict=True)
            )
            if movie_id not in known_movies:
                raise DatasetError(path, line_no, f"unknown movie id {movie_id} (not in u.item)")
            if line_no > 1:
                ratings.append(Rating(user, movie_id, rating, timestamp))
    if not ratings:
        raise DatasetError(path, None, "empty file: no ratings")
    return ratings


def _movielens_sequences(ratings: list[Rating]) -> list[UserSequence]:
    by_user: dict[int, list[Rating]] = {}
    for rating in ratings:
        if rating.rating >= MOVIELENS_MIN_RATING:
            by_user.setdefault(rating.user, []).append(rating)  # dicts keep first-appearance order
    sequences = []
    for user, events in by_user.items():
        order = numpy_argsort([r.timestamp for r in events])
        ordered = tuple(Event(events[i].movie_id - 1, events[i].timestamp, events[i].rating) for i in order)
        sequences.append(UserSequence(user, ordered))
    return sequences


# --- generic CSV ------------------------------------------------------------------------------

INTERACTION_COLUMNS = ("user", "item", "timestamp")
ITEM_COLUMNS = ("item", "title")


def build_from_csv(
    interactions: Path,
    items: Path,
    datasets_dir: Path,
    name: str,
    *,
    min_rating: float | None = None,
    force: bool = False,
) -> Dataset:
    """Build a dataset from ``user,item,timestamp[,rating]`` and ``item,title[,...]`` CSV files.

    Of the items file's other columns, ``genres`` (names joined by ``|``) becomes a list and ``year``
    an integer: steering reads both (a genre word, an era); any other column is kept as text.

    External item ids become contiguous 0-based ids in items-file order (the original id is kept
    as attribute ``external_id``); each user's interactions are sorted by timestamp (stable, so
    ties keep file order) and users are split 8:1:1 by their first timestamp.
    """
    check_name(name)
    interactions, items = Path(interactions), Path(items)
    item_records, id_of = _read_item_csv(items)
    users, has_ratings = _read_interactions(interactions, id_of, min_rating)
    n_items = len(item_records)
    layout = RowLayout(pad_id=n_items, with_user=True, with_ratings=has_ratings)
    rows = split_rows(split_users_by_time(users), layout)

    with staged_dataset_dir(datasets_dir, name, force=force) as staging:
        write_jsonl(staging / "items.jsonl", item_records)
        for split in SPLITS:
            write_jsonl(staging / f"{split}.jsonl", rows[split])
        write_meta(
            staging,
            name=name,
            n_items=n_items,
            source={
                "kind": "csv",
                "interactions": str(interactions.resolve()),
                "items": str(items.resolve()),
                "min_rating": min_rating,
            },
            notes=[
                f"built from CSV: {len(users)} users split 8:1:1 by first timestamp; "
                "training users give one row per interaction, val/test users their last one"
            ],
            attributes=sorted({key for rec in item_records for key in rec} - {"id", "title"}),
        )
    return Dataset.open(datasets_dir, name)


def _read_item_csv(path: Path) -> tuple[list[dict[str, Any]], dict[str, int]]:
    records: list[dict[str, Any]] = []
    id_of: dict[str, int] = {}
    line_of: dict[str, int] = {}
    for line_no, record in read_csv_records(path, ITEM_COLUMNS, reserved=("id", "external_id")):
        external = record.pop("item").strip()
        if not external:
            raise DatasetError(path, line_no, "empty item id")
        if external in id_of:
            raise DatasetError(
                path, line_no, f"duplicate item id {external!r} (first on line {line_of[external]})"
            )
        id_of[external], line_of[external] = len(records), line_no
        # the two columns steering reads as more than text: genres ("Comedy|Drama") and a release year
        if "genres" in record:
            record["genres"] = [g.strip() for g in record["genres"].split("|") if g.strip()]
        if "year" in record:
            year = record.pop("year").strip()
            if year:
                record["year"] = parse_int(year, path, line_no, "year")
        records.append({"id": len(records), "title": record.pop("title"), "external_id": external, **record})
    return records, id_of


def _read_interactions(
    path: Path, id_of: dict[str, int], min_rating: float | None
) -> tuple[list[UserSequence], bool]:
    """Per-user sequences (users in first-appearance order) and whether ratings are present."""
    events: dict[str, list[Event]] = {}
    first_line: dict[tuple[str, str, float], int] = {}
    has_ratings: bool | None = None
    for line_no, record in read_csv_records(path, INTERACTION_COLUMNS):
        if has_ratings is None:
            has_ratings = "rating" in record
            if min_rating is not None and not has_ratings:
                raise DatasetError(path, 1, "--min-rating needs a rating column")
        user, external_item = record["user"].strip(), record["item"].strip()
        if not user:
            raise DatasetError(path, line_no, "empty user id")
        if external_item not in id_of:
            raise DatasetError(path, line_no, f"unknown item id {external_item!r} (not in the items file)")
        timestamp = _parse_number(record["timestamp"], path, line_no, "timestamp")
        key = (user, external_item, timestamp)
        if key in first_line:
            raise DatasetError(
                path, line_no, f"duplicate interaction (same user, item, timestamp as line {first_line[key]})"
            )
        first_line[key] = line_no
        rating = _parse_number(record["rating"], path, line_no, "rating") if has_ratings else None
        if min_rating is not None and rating is not None and rating < min_rating:
            continue
        events.setdefault(user, []).append(Event(id_of[external_item], timestamp, rating))
    if not events:  # only reachable through --min-rating: an empty file fails earlier
        raise DatasetError(path, None, f"no interactions left with rating >= {min_rating}")
    if len(events) < MIN_USERS:
        raise DatasetError(path, None, f"{len(events)} users; at least {MIN_USERS} are needed to split 8:1:1")
    # sorted() is stable: interactions at the same timestamp keep their file order.
    sequences = [
        UserSequence(user, tuple(sorted(user_events, key=lambda e: e.timestamp)))
        for user, user_events in events.items()
    ]
    return sequences, bool(has_ratings)


def _parse_number(text: str, path: Path, line: int, column: str) -> int | float:
    """An int when the text is one (so JSON keeps ``4`` rather than ``4.0``), else a finite float."""
    text = text.strip()
    try:
        return int(text)
    except ValueError:
        pass
    try:
        value = float(text)
    except ValueError:
        raise DatasetError(path, line, f"{column} must be a number, got {text!r}") from None
    if not math.isfinite(value):
        raise DatasetError(path, line, f"{column} must be a finite number, got {text!r}")
    return value
