"""What bench.data_scale asks a served catalog: histories, natural steering commands and title
searches, drawn from the catalog's own files (read as lines: a 10^6-item catalog is not loaded)."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path

# Natural commands, filled from each catalog's own titles, genres and years (the same templates on
# both datasets, so the parser does the same kind of work).
COMMAND_TEMPLATES = (
    "more {genre} please",
    "no {genre}",
    "something like {title}",
    "only things from after {year}",
    "nothing older than {year}",
    "more {genre} but no {genre2}",
    "i'm in the mood for {genre} from the {decade}s",
    "less {genre2}, more {genre}",
)


@dataclass(frozen=True)
class CatalogSample:
    """What requests are made of: histories from test rows, titles, genres and years of items."""

    histories: list[list[int]]
    titles: list[str]
    genres: list[str]
    years: list[int]


def catalog_sample(dataset_dir: Path, *, rows: int = 200, items: int = 2000) -> CatalogSample:
    """The first test rows and items of a dataset's files (read as lines: a 10^6-item catalog is
    not loaded into this process)."""
    histories = []
    with (dataset_dir / "test.jsonl").open() as fh:
        for line in fh:
            history = json.loads(line)["history"]
            if history:
                histories.append(history)
            if len(histories) >= rows:
                break
    titles, genres, years = [], set(), set()
    with (dataset_dir / "items.jsonl").open() as fh:
        for _, line in zip(range(items), fh, strict=False):
            item = json.loads(line)
            titles.append(item["title"])
            genres.update(g for g in item.get("genres") or () if g and g != "unknown")
            if isinstance(item.get("year"), int):
                years.add(item["year"])
    return CatalogSample(histories, titles, sorted(genres), sorted(years))


def natural_commands(sample: CatalogSample, n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    genres = sample.genres or ["drama"]
    years = sample.years or [1990]
    commands = []
    for i in range(n):
        genre, genre2 = rng.sample(genres, 2) if len(genres) > 1 else (genres[0], genres[0])
        year = rng.choice(years)
        commands.append(
            COMMAND_TEMPLATES[i % len(COMMAND_TEMPLATES)].format(
                genre=genre.lower(),
                genre2=genre2.lower(),
                title=rng.choice(sample.titles),
                year=year,
                decade=year // 10 * 10,
            )
        )
    return commands


def search_queries(sample: CatalogSample, n: int, seed: int) -> list[str]:
    """A title's first word, its first two words, or the whole title (lower case), in turns."""
    rng = random.Random(seed)
    queries = []
    for i in range(n):
        words = rng.choice(sample.titles).split()
        kind = i % 3
        query = " ".join(words[:1] if kind == 0 else words[:2] if kind == 1 else words)
        queries.append(query.lower()[:200])
    return queries
