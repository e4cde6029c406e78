"""Pure evaluation metrics: binary classification (user simulation) and popularity bias.

Conventions: an empty denominator gives 0.0 (a judge that predicts nothing has
precision 0, not NaN), so averaged tables never carry NaNs.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Confusion:
    """Counts of one binary judge against the truth."""

    tp: int = 0
    fp: int = 0
    fn: int = 0
    tn: int = 0

    def __add__(self, other: Confusion) -> Confusion:
        return Confusion(self.tp + other.tp, self.fp + other.fp, self.fn + other.fn, self.tn + other.tn)

    @property
    def precision(self) -> float:
        return _ratio(self.tp, self.tp + self.fp)

    @property
    def recall(self) -> float:
        return _ratio(self.tp, self.tp + self.fn)

    @property
    def f1(self) -> float:
        return f1_score(self.precision, self.recall)


@dataclass(frozen=True)
class PRF:
    precision: float
    recall: float
    f1: float

    def to_json(self) -> dict[str, float]:
        return {"precision": self.precision, "recall": self.recall, "f1": self.f1}


def _ratio(numerator: float, denominator: float) -> float:
    return numerator / denominator if denominator else 0.0


def f1_score(precision: float, recall: float) -> float:
    return _ratio(2 * precision * recall, precision + recall)


def confusion(predicted: Sequence[bool], truth: Sequence[bool]) -> Confusion:
    """Confusion counts of one judged list; both sequences are aligned per item."""
    if len(predicted) != len(truth):
        raise ValueError(f"predicted has {len(predicted)} labels but truth has {len(truth)}")
    pairs = Counter(zip((bool(p) for p in predicted), (bool(t) for t in truth), strict=True))
    return Confusion(
        tp=pairs[(True, True)], fp=pairs[(True, False)], fn=pairs[(False, True)], tn=pairs[(False, False)]
    )


def micro_prf(per_user: Iterable[Confusion]) -> PRF:
    """Pool every judged item, then compute P/R/F1 once."""
    total = sum(per_user, Confusion())
    return PRF(total.precision, total.recall, total.f1)


def macro_prf(per_user: Sequence[Confusion]) -> PRF:
    """Compute P/R/F1 per user, then average each (macro F1 = mean of per-user F1)."""
    if not per_user:
        return PRF(0.0, 0.0, 0.0)
    n = len(per_user)
    return PRF(
        sum(c.precision for c in per_user) / n,
        sum(c.recall for c in per_user) / n,
        sum(c.f1 for c in per_user) / n,
    )


def hit_rate(picks: Sequence[int], targets: Sequence[int]) -> float:
    """HR@1 of one pick per row: share of rows whose pick is the target."""
    if len(picks) != len(targets):
        raise ValueError(f"{len(picks)} picks but {len(targets)} targets")
    return _ratio(sum(p == t for p, t in zip(picks, targets, strict=True)), len(picks))


def mean_std(values: Sequence[float]) -> tuple[float, float]:
    """Mean and population standard deviation (spread over candidate seeds, not an estimate)."""
    if not values:
        return 0.0, 0.0
    mean = sum(values) / len(values)
    return mean, math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))


def gini(counts: Iterable[float]) -> float:
    """Gini coefficient of non-negative counts: 0 = perfectly even, (n-1)/n = all in one.

    Uses the sorted-rank form G = sum_i (2i - n - 1) x_i / (n * sum x), i = 1..n ascending.
    Pass one count per catalog item (zeros included) to measure concentration over the catalog.
    """
    values = sorted(float(c) for c in counts)
    if any(v < 0 for v in values):
        raise ValueError("gini needs non-negative counts")
    n, total = len(values), sum(values)
    if n == 0 or total == 0:
        return 0.0
    weighted = sum((2 * i - n - 1) * v for i, v in enumerate(values, start=1))
    return weighted / (n * total)


def popularity_percentiles(popularity: Mapping[int, int], n_items: int) -> list[float]:
    """Per item id 0..n_items-1: its mid-rank by popularity among the catalog, scaled to [0, 1].

    The mid-rank percentile keeps a catalog of equally popular items at 0.5 instead of 0 or 1,
    so "mean percentile of recommended items" is 0.5 for a popularity-blind recommender.
    """
    counts = [popularity.get(item, 0) for item in range(n_items)]
    histogram = Counter(counts)
    below, share_below = 0, {}
    for count in sorted(histogram):
        share_below[count] = (below + (histogram[count] - 1) / 2) / max(n_items - 1, 1)
        below += histogram[count]
    return [share_below[c] for c in counts]


def mean_popularity_percentile(items: Sequence[int], percentiles: Sequence[float]) -> float:
    return _ratio(sum(percentiles[i] for i in items), len(items))


def recommendation_gini(items: Sequence[int], n_items: int) -> float:
    """Gini of how often each catalog item was recommended (zeros for never-recommended items)."""
    counts = Counter(items)
    return gini(counts.get(i, 0) for i in range(n_items))


BOOTSTRAP_RESAMPLES = 2000


def bootstrap_statistic(
    n_users: int,
    statistic: Callable[[Sequence[int]], float],
    *,
    level: float = 0.95,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile bootstrap interval of ``statistic`` over users: each resample draws ``n_users``
    user indices with replacement and passes them to ``statistic``. Deterministic for a seed."""
    if n_users == 0:
        return 0.0, 0.0
    rng = random.Random(seed)
    values = sorted(statistic([rng.randrange(n_users) for _ in range(n_users)]) for _ in range(resamples))
    tail = (1 - level) / 2
    return values[int(tail * (resamples - 1))], values[int((1 - tail) * (resamples - 1))]


def bootstrap_interval(
    values: Sequence[float], *, level: float = 0.95, resamples: int = BOOTSTRAP_RESAMPLES, seed: int = 0
) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of per-user ``values`` (resampling users).

    With the 95-122 test users of these datasets one HR@1 has a standard error of about 0.05;
    this is the interval to print beside it. Deterministic for a given seed.
    """
    values = list(values)

    def mean(users: Sequence[int]) -> float:
        return sum(values[u] for u in users) / len(users)

    return bootstrap_statistic(len(values), mean, level=level, resamples=resamples, seed=seed)


@dataclass(frozen=True)
class Interval:
    """A mean (or other statistic) and its 95 % bootstrap interval over users."""

    mean: float
    low: float
    high: float

    def to_json(self) -> dict[str, float]:
        return {"mean": self.mean, "low": self.low, "high": self.high}

    def excludes_zero(self) -> bool:
        return self.low > 0 or self.high < 0

    def __str__(self) -> str:
        return f"{self.mean:+.4f} [{self.low:+.4f}, {self.high:+.4f}]"


def paired_interval(differences: Sequence[float], *, seed: int = 0) -> Interval:
    """Mean of per-user paired differences (e.g. FLOW's expected HR@1 minus the rec model's, user by
    user) and its 95 % bootstrap interval over the users."""
    values = list(differences)
    mean = sum(values) / len(values) if values else 0.0
    return Interval(mean, *bootstrap_interval(values, seed=seed))


def paired_f1_interval(a: Sequence[Confusion], b: Sequence[Confusion], *, seed: int = 0) -> Interval:
    """Micro F1 of judge ``a`` minus that of judge ``b`` (same users, same items) with its 95 %
    bootstrap interval over the users."""

    def difference(users: Sequence[int]) -> float:
        return micro_prf(a[u] for u in users).f1 - micro_prf(b[u] for u in users).f1

    return Interval(difference(range(len(a))), *bootstrap_statistic(len(a), difference, seed=seed))
