"""MovieLens-100k specifics: the GroupLens item file, LLaRA's titles, the verified training set."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from recmodels.dataset import SPLITS, DatasetError, sha256_file

# SHA-256 of ../shared/data/movielens/train.jsonl (68,388 rows). That file was rebuilt from
# the public MovieLens-100k ratings and shown to be LLaRA's upstream `train_data.df` row for row
# (its pickled form reproduces the SHA-256 recorded in public LLaRA Git LFS pointers; see the
# shared data README, movielens/raw section). A train.jsonl with this digest is the exact
# training set of the LLaRA/AFL MovieLens protocol.
VERIFIED_TRAIN_SHA256 = "39ccedfde04085d106bf760807a0080dd3120da3e981f3277e84de89b45ef90d"
# SHA-256 of LLaRA's released MovieLens validation/test rows as converted to JSONL in
# ../shared/data/movielens (94 and 95 rows).
VERIFIED_SPLIT_SHA256 = {
    "train": VERIFIED_TRAIN_SHA256,
    "val": "02a2100bb58522b5609265ce3f2784efb08d7f455807abbf404bdcd49d0f97c9",
    "test": "5be71039891ce812063515cdd888f9434a7dee920d45582c2882542bf0f9ae59",
}

# The 19 genre flags of u.item, in GroupLens order.
GENRES = (
    "unknown",
    "Action",
    "Adventure",
    "Animation",
    "Children's",
    "Comedy",
    "Crime",
    "Documentary",
    "Drama",
    "Fantasy",
    "Film-Noir",
    "Horror",
    "Musical",
    "Mystery",
    "Romance",
    "Sci-Fi",
    "Thriller",
    "War",
    "Western",
)
U_ITEM_FIELDS = 5 + len(GENRES)  # id | title | release date | video release date | IMDb URL | flags
# GroupLens shipped u.item in Latin-1 (a few titles have accented letters).
U_ITEM_ENCODING = "latin-1"
# GroupLens dates look like "01-Jan-1995"; a bare "1995" is what a RecBole-derived u.item holds.
_RELEASE_YEAR = re.compile(r"^(?:\d{2}-[A-Za-z]{3}-)?(\d{4})$")
_ARTICLE_SUFFIXES = (", The", ", A", ", An")


@dataclass(frozen=True)
class MovieLensItem:
    movie_id: int  # GroupLens id, 1-based; recloop id = movie_id - 1
    raw_title: str
    release_date: str
    genres: tuple[str, ...]

    @property
    def title(self) -> str:
        return llara_title(self.raw_title)

    @property
    def year(self) -> int | None:
        return release_year(self.release_date)

    def attributes(self) -> dict[str, Any]:
        # Same keys and order as an imported items.csv, so both routes give identical items.jsonl.
        return {
            "movielens_movie_id": self.movie_id,
            "raw_title": self.raw_title,
            "release_date": self.release_date,
            "year": self.year,
            "genres": list(self.genres),
        }


def llara_title(raw_title: str) -> str:
    """The title LLaRA shows the LLM, reproduced quirks included.

    LLaRA drops the last 7 characters (" (1995)") unconditionally and moves the first article
    suffix *found anywhere* to the front, so "Alien, Another" style substrings also match; item 266
    ("unknown") becomes the empty string. Matches the shared items.csv for all 1,682 movies.
    """
    stem = raw_title[:-7]
    for suffix in _ARTICLE_SUFFIXES:
        if suffix in stem:
            return f"{suffix[2:]} {stem.replace(suffix, '')}"
    return stem


def release_year(release_date: str) -> int | None:
    """``"01-Jan-1995"`` or ``"1995"`` -> 1995; an empty or unparsable date -> None."""
    match = _RELEASE_YEAR.match(release_date.strip())
    return int(match.group(1)) if match else None


def read_u_item(path: Path) -> dict[int, MovieLensItem]:
    """Parse a GroupLens ``u.item``: movie id -> item (genres from the 19 flags)."""
    items: dict[int, MovieLensItem] = {}
    text = path.read_text(encoding=U_ITEM_ENCODING)
    for line_no, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        fields = line.split("|")
        if len(fields) != U_ITEM_FIELDS:
            raise DatasetError(
                path, line_no, f"expected {U_ITEM_FIELDS} '|'-separated fields, got {len(fields)}"
            )
        try:
            movie_id = int(fields[0])
        except ValueError:
            raise DatasetError(path, line_no, f"movie id must be an integer, got {fields[0]!r}") from None
        flags = fields[5:]
        if any(flag not in ("0", "1") for flag in flags):
            raise DatasetError(path, line_no, "genre flags must be 0 or 1")
        if movie_id in items:
            raise DatasetError(path, line_no, f"duplicate movie id {movie_id}")
        genres = tuple(name for name, flag in zip(GENRES, flags, strict=True) if flag == "1")
        items[movie_id] = MovieLensItem(movie_id, fields[1], fields[2], genres)
    if not items:
        raise DatasetError(path, None, "empty file: no movies")
    return items


def verify_splits(root: Path) -> dict[str, bool]:
    """Which split files of ``root`` are byte-identical to the verified LLaRA MovieLens splits."""
    return {split: sha256_file(root / f"{split}.jsonl") == VERIFIED_SPLIT_SHA256[split] for split in SPLITS}


def verification_note(verified: bool) -> str:
    if verified:
        return "train.jsonl is byte-identical to the verified LLaRA MovieLens training set"
    return "train.jsonl differs from the verified LLaRA MovieLens training set"
