"""A synthetic catalog and interaction log at any size: for tests and scale runs, never for accuracy.

`recloop data build synthetic --items N --users U --interactions I --seed S` writes the normal
dataset format (``recmodels/dataset.py``) from a seeded generator whose log looks like real ones
in the ways that stress the code, not in the ways that make models good:

- popularity follows a power law (Zipf, exponent ``ZIPF_EXPONENT``) and a share of the catalog
  (``COLD_SHARE``) is consumed by nobody;
- items belong to clusters; each cluster has a main genre (MovieLens genre names, which the
  steering lexicon reads), sometimes a second one, and a centre year; users drift from cluster to
  neighbouring cluster, so sequences have structure a sequential model can learn;
- users have from 1 to thousands of interactions (a log-normal law), and consume items again
  (``REPEAT_SHARE`` of the interactions repeat one of the user's last ten items);
- some titles repeat across items (``REMAKE_SHARE``: remakes, other editions).

Users are split 8:1:1 by their first timestamp as ``recloop data build csv`` does (training users
give one row per interaction, validation/test users their last one). Everything is drawn with
NumPy arrays, so 10^6 items and 10^7 interactions build in minutes; what is written line by line
is only the JSON. The same arguments give byte-identical files (the fingerprint says so).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from lab.data.movielens import GENRES
from lab.data.sequences import TRAIN_FRACTION, VAL_FRACTION
from lab.data.store import check_name, staged_dataset_dir, write_jsonl, write_meta
from recmodels.dataset import MAX_HISTORY, MIN_EVAL_LEN_SEQ, SPLITS, Dataset

GENERATOR_VERSION = 1
SYNTHETIC_GENRES = tuple(g for g in GENRES if g != "unknown")
ZIPF_EXPONENT = 0.6
COLD_SHARE = 0.05  # items nobody consumed
REPEAT_SHARE = 0.08  # interactions that repeat one of the user's last ten items
REMAKE_SHARE = 0.02  # items whose title another item already has
STAY_PROBABILITY = 0.85  # a user's next item comes from the same cluster
ACTIVITY_SIGMA = 1.5  # interactions per user: log-normal, from 1 to thousands
MIN_ITEMS, MIN_USERS = 20, 10
FIRST_YEAR, LAST_YEAR = 1925, 2024
NOTE = (
    "synthetic data (recloop data build synthetic): for tests and scale measurements only; "
    "never use it for accuracy claims"
)

_ADJECTIVES = (
    "Silent", "Crimson", "Hidden", "Last", "Broken", "Golden", "Midnight", "Distant", "Wild", "Frozen",
    "Burning", "Lost", "Secret", "Bright", "Dark", "Electric", "Gentle", "Hollow", "Iron", "Lucky",
    "Northern", "Quiet", "Restless", "Scarlet", "Shallow", "Stolen", "Sudden", "Twisted", "Velvet", "Lonely",
    "Ancient", "Bitter", "Blue", "Cold", "Empty", "Final", "Glass", "Long", "Paper", "Savage",
)  # fmt: skip
_NOUNS = (
    "River", "Harbor", "City", "Garden", "Mirror", "Summer", "Winter", "Road", "Station", "Island",
    "Kingdom", "Letter", "Machine", "Mountain", "Ocean", "Promise", "Shadow", "Signal", "Storm", "Stranger",
    "Tower", "Valley", "Voyage", "Witness", "Empire", "Frontier", "Heart", "Hunter", "Lantern", "Orchard",
    "Planet", "Prophet", "Return", "Secret", "Sky", "Song", "Street", "Thief", "Train", "Window",
)  # fmt: skip
_PATTERNS = ("The {a} {n}", "{a} {n}", "{n} of the {a} {m}", "A {a} {n}", "{a} {n}s")


@dataclass(frozen=True)
class SyntheticSpec:
    items: int
    users: int
    interactions: int
    seed: int = 0

    def check(self) -> None:
        if self.items < MIN_ITEMS:
            raise ValueError(f"--items must be at least {MIN_ITEMS}, got {self.items}")
        if self.users < MIN_USERS:
            raise ValueError(f"--users must be at least {MIN_USERS} (the 8:1:1 split), got {self.users}")
        if self.interactions < self.users:
            raise ValueError(
                f"--interactions ({self.interactions}) must be at least --users ({self.users}): "
                "every user has one interaction or more"
            )


@dataclass(frozen=True)
class SyntheticLog:
    """The generated log, as arrays: interaction i is (user[i], item[i], timestamp[i])."""

    user: np.ndarray  # int64, users in blocks, each block oldest first
    item: np.ndarray  # int64
    timestamp: np.ndarray  # int64 seconds
    starts: np.ndarray  # index of each user's first interaction (len users + 1, last = len(item))


def build_synthetic(
    datasets_dir: Path,
    name: str,
    spec: SyntheticSpec,
    *,
    force: bool = False,
) -> Dataset:
    """Generate ``spec`` and write it as ``datasets_dir/name``."""
    check_name(name)
    spec.check()
    rng = np.random.default_rng(spec.seed)
    clusters = _n_clusters(spec.items)
    cluster_of = rng.integers(0, clusters, spec.items)
    items = _catalog(rng, spec.items, clusters, cluster_of)
    log = _log(rng, spec, clusters, cluster_of)
    split_of_user = _split_users(log)
    with staged_dataset_dir(datasets_dir, name, force=force) as staging:
        write_jsonl(staging / "items.jsonl", items)
        counts = {
            split: _write_rows(staging / f"{split}.jsonl", log, split_of_user, split) for split in SPLITS
        }
        write_meta(
            staging,
            name=name,
            n_items=spec.items,
            source={"kind": "synthetic", "generator_version": GENERATOR_VERSION, **asdict(spec)},
            notes=[
                NOTE,
                f"{spec.users:,} users split 8:1:1 by first timestamp; {spec.interactions:,} interactions, "
                f"{int(np.count_nonzero(_repeats(log))):,} of them repeats; "
                f"{spec.items - int(np.unique(log.item).size):,} items nobody consumed",
            ],
            attributes=["genres", "year"],
            split_counts=counts,
        )
    return Dataset.open(datasets_dir, name)


def _n_clusters(n_items: int) -> int:
    return int(np.clip(round(np.sqrt(n_items) / 2), 4, 2000))


# --- the catalog ----------------------------------------------------------------------------------


def _catalog(rng: np.random.Generator, n: int, clusters: int, cluster_of: np.ndarray) -> list[dict]:
    n_genres = len(SYNTHETIC_GENRES)
    main_genre = rng.integers(0, n_genres, clusters)
    centre_year = rng.integers(FIRST_YEAR + 10, LAST_YEAR - 5, clusters)
    second = rng.integers(0, n_genres, n)
    has_second = (rng.random(n) < 0.4) & (second != main_genre[cluster_of])
    years = np.clip(
        centre_year[cluster_of] + np.rint(rng.normal(0, 6, n)).astype(np.int64), FIRST_YEAR, LAST_YEAR
    )
    titles = _titles(rng, n)
    records = []
    for i, (c, s, two, year) in enumerate(
        zip(cluster_of.tolist(), second.tolist(), has_second.tolist(), years.tolist(), strict=True)
    ):
        genres = [SYNTHETIC_GENRES[int(main_genre[c])]]
        if two:
            genres.append(SYNTHETIC_GENRES[s])
        records.append({"id": i, "title": titles[i], "genres": genres, "year": year})
    return records


def _titles(rng: np.random.Generator, n: int) -> list[str]:
    """Mostly distinct titles; past the word combinations, sequels ("... 2"); a few remakes."""
    a, m = len(_ADJECTIVES), len(_NOUNS)
    combos = len(_PATTERNS) * a * m
    code = rng.permutation(max(n, combos))[:n]
    pattern, rest = code % len(_PATTERNS), code // len(_PATTERNS)
    adjective, noun, sequel = rest % a, (rest // a) % m, rest // (a * m)
    other = rng.integers(0, m, n)
    titles = []
    for p, ai, ni, mi, k in zip(
        pattern.tolist(), adjective.tolist(), noun.tolist(), other.tolist(), sequel.tolist(), strict=True
    ):
        title = _PATTERNS[p].format(a=_ADJECTIVES[ai], n=_NOUNS[ni], m=_NOUNS[mi])
        titles.append(f"{title} {k + 1}" if k else title)
    remakes = np.flatnonzero(rng.random(n) < REMAKE_SHARE)
    originals = rng.integers(0, n, remakes.size)
    for i, j in zip(remakes.tolist(), originals.tolist(), strict=True):
        titles[i] = titles[j]
    return titles


# --- the log --------------------------------------------------------------------------------------


def _log(
    rng: np.random.Generator, spec: SyntheticSpec, clusters: int, cluster_of: np.ndarray
) -> SyntheticLog:
    lengths = _lengths(rng, spec.users, spec.interactions)
    starts = np.concatenate(([0], np.cumsum(lengths)))
    user = np.repeat(np.arange(spec.users, dtype=np.int64), lengths)
    position = np.arange(spec.interactions, dtype=np.int64) - starts[user]
    cluster = _cluster_walk(rng, clusters, user, position, starts)
    item = _draw_items(rng, spec.items, clusters, cluster_of, cluster)
    # Repeat consumption: some interactions take again an item drawn 1-10 steps earlier.
    back = rng.integers(1, MAX_HISTORY + 1, spec.interactions)
    repeat = (rng.random(spec.interactions) < REPEAT_SHARE) & (position >= back)
    item[repeat] = item[np.flatnonzero(repeat) - back[repeat]]
    first = rng.integers(0, 5 * 365 * 86_400, spec.users) + 1_000_000_000
    gaps = rng.exponential(3 * 86_400, spec.interactions).astype(np.int64) + 1
    gaps[starts[:-1]] = 0
    timestamp = first[user] + _cumsum_per_user(gaps, user, starts)
    return SyntheticLog(user, item, timestamp, starts)


def _lengths(rng: np.random.Generator, users: int, interactions: int) -> np.ndarray:
    """Interactions per user: log-normal shares, at least 1 each, summing to ``interactions`` exactly."""
    weights = rng.lognormal(0.0, ACTIVITY_SIGMA, users)
    lengths = 1 + np.floor(weights / weights.sum() * (interactions - users)).astype(np.int64)
    short = interactions - int(lengths.sum())  # 0 <= short < users: each floor lost less than 1
    lengths[rng.choice(users, short, replace=False)] += 1
    return lengths


def _cluster_walk(
    rng: np.random.Generator, clusters: int, user: np.ndarray, position: np.ndarray, starts: np.ndarray
) -> np.ndarray:
    """Each user's cluster at each step: a start drawn by cluster size, then a drift to a neighbour
    (one or two clusters away) with probability 1 - STAY_PROBABILITY per step."""
    n = user.size
    step = np.where(rng.random(n) < STAY_PROBABILITY, 0, rng.choice((-2, -1, 1, 2), n))
    step[position == 0] = 0
    start = rng.integers(0, clusters, starts.size - 1)
    return (start[user] + _cumsum_per_user(step, user, starts)) % clusters


def _cumsum_per_user(values: np.ndarray, user: np.ndarray, starts: np.ndarray) -> np.ndarray:
    total = np.cumsum(values)
    return total - (total[starts[:-1]] - values[starts[:-1]])[user]


def _draw_items(
    rng: np.random.Generator, n_items: int, clusters: int, cluster_of: np.ndarray, cluster: np.ndarray
) -> np.ndarray:
    """An item of the given cluster per interaction, by Zipf popularity; cold items are never drawn.

    Items are laid out by cluster; one cumulative weight array serves every cluster, each draw
    landing in its cluster's stretch of it."""
    weight = (rng.permutation(n_items) + 1.0) ** -ZIPF_EXPONENT
    weight[rng.random(n_items) < COLD_SHARE] = 0.0
    order = np.argsort(cluster_of, kind="stable")
    cumulative = np.cumsum(weight[order])
    before = np.concatenate(([0.0], cumulative))
    ids = np.arange(clusters)
    begin = before[np.searchsorted(cluster_of[order], ids, side="left")]
    end = before[np.searchsorted(cluster_of[order], ids, side="right")]
    empty = end <= begin  # no item, or only cold ones: such a cluster's users draw from the whole catalog
    begin[empty], end[empty] = 0.0, cumulative[-1]
    target = begin[cluster] + rng.random(cluster.size) * (end - begin)[cluster]
    picked = np.minimum(np.searchsorted(cumulative, target, side="right"), n_items - 1)
    return order[picked].astype(np.int64)


def _repeats(log: SyntheticLog) -> np.ndarray:
    """Interactions whose item the user consumed in one of the ten interactions before."""
    found = np.zeros(log.item.size, dtype=bool)
    position = np.arange(log.item.size) - log.starts[log.user]
    for back in range(1, MAX_HISTORY + 1):
        same = np.zeros(log.item.size, dtype=bool)
        same[back:] = log.item[back:] == log.item[:-back]
        found |= same & (position >= back)
    return found


# --- splits ---------------------------------------------------------------------------------------


def _split_users(log: SyntheticLog) -> np.ndarray:
    """Split name index (0 train, 1 val, 2 test) per user: the earliest 80 % by first timestamp train."""
    users = log.starts.size - 1
    first = log.timestamp[log.starts[:-1]]
    by_time = np.argsort(first, kind="stable")
    n_train, n_val = int(TRAIN_FRACTION * users), int(VAL_FRACTION * users)
    split = np.empty(users, dtype=np.int64)
    split[by_time[:n_train]] = 0
    split[by_time[n_train : n_train + n_val]] = 1
    split[by_time[n_train + n_val :]] = 2
    return split


def _write_rows(path: Path, log: SyntheticLog, split_of_user: np.ndarray, split: str) -> tuple[int, int]:
    """Write one split's rows (the ``build csv`` layout, without padding); return (rows, eval rows)."""
    users = np.flatnonzero(split_of_user == SPLITS.index(split)).tolist()
    items, starts = log.item.tolist(), log.starts.tolist()
    rows = kept = 0
    with path.open("w", encoding="utf-8") as fh:
        for user in users:
            begin, end = starts[user], starts[user + 1]
            targets = range(begin, end) if split == "train" else (end - 1,)
            for k in targets:
                history = items[max(begin, k - MAX_HISTORY) : k]
                len_seq = max(1, len(history))
                fh.write(
                    f'{{"row": {rows}, "user": {user}, "history": [{", ".join(map(str, history))}], '
                    f'"len_seq": {len_seq}, "next": {items[k]}}}\n'
                )
                rows += 1
                kept += len_seq >= MIN_EVAL_LEN_SEQ
    return rows, kept
