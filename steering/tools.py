"""The planner's tools, as plain functions over a candidate list (RecBot, arXiv 2509.21317).

- Filter: keep items that satisfy the positive hard constraints and violate no negative one.
- Matcher: score positive soft preferences, mixing semantic similarity with the rec model's
  collaborative score.
- Attenuator: penalise similarity to negative soft preferences.
- Aggregator: combine the scores and rank.

Scores are z-normalised over the candidate list before mixing: collaborative logits and
cosine similarities live on unrelated scales, and only their order within one list matters.
"""

from __future__ import annotations

import contextlib
import statistics
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from recmodels.dataset import Dataset, Item
from recmodels.items import ItemColumns
from recmodels.scan import map_rows
from steering.catalog_index import Catalog
from steering.preferences import Preferences, SoftPreference, as_preferences
from steering.similarity import Similarity


@dataclass(frozen=True)
class RankedItem:
    """One steered recommendation and how its score was made."""

    item: int
    score: float
    collaborative: float
    semantic: float | None = None
    penalty: float = 0.0


def hard_violations(preferences: Preferences | Mapping[str, Any] | None, item: Item) -> list[str]:
    """Why ``item`` breaks the hard constraints (empty when it satisfies all of them).

    ``preferences`` may be the plain dict the graph state carries. An unknown release year
    cannot satisfy a positive year range but does not break a negative one: only what is
    known to be excluded is excluded.
    """
    preferences = as_preferences(preferences)
    if preferences is None:
        return []
    reasons: list[str] = []
    wanted, unwanted = preferences.positive, preferences.negative
    genres = {g.casefold() for g in item.genres}
    if wanted.genres and not genres & {g.casefold() for g in wanted.genres}:
        reasons.append(f"not in the wanted genre(s) {', '.join(wanted.genres)}")
    if wanted.year_range is not None and (item.year is None or not wanted.year_range.contains(item.year)):
        shown = "unknown" if item.year is None else str(item.year)
        reasons.append(f"released {shown}, wanted {wanted.year_range.describe()}")
    if wanted.items and item.id not in wanted.items:
        reasons.append("not one of the items asked for")
    banned = [g for g in unwanted.genres if g.casefold() in genres]
    if banned:
        reasons.append(f"genre {', '.join(banned)} is excluded")
    if unwanted.year_range is not None and item.year is not None and unwanted.year_range.contains(item.year):
        reasons.append(f"released {item.year}, excluded {unwanted.year_range.describe()}")
    if item.id in unwanted.items:
        reasons.append("this item is excluded")
    return reasons


def filter_candidates(candidates: Sequence[int], preferences: Preferences, catalog: Catalog) -> list[int]:
    """Filter tool: the candidates (order kept) that break no hard constraint."""
    index = attribute_index(catalog)
    if index is None:
        return [c for c in candidates if not hard_violations(preferences, catalog.item(c))]
    allowed = index.allowed(preferences)
    return [c for c in candidates if allowed[c]]


@dataclass(frozen=True, eq=False)
class AttributeIndex:
    """Genres and years of one catalog as arrays, so a hard filter over 10^5 items is a few numpy
    operations instead of a Python call per item. Built once per catalog (:func:`attribute_index`);
    :meth:`allowed` says exactly what :func:`hard_violations` says, item by item."""

    genre_columns: dict[str, int]
    """Case-folded genre name -> its column of :attr:`genres`."""
    genres: np.ndarray
    """bool [N, G]: item i has genre j."""
    year_known: np.ndarray
    """bool [N]."""
    years: np.ndarray
    """int64 [N]: the year where known, else 0."""

    @classmethod
    def of_items(cls, items: Sequence[Item]) -> AttributeIndex:
        genre_sets = [{g.casefold() for g in item.genres} for item in items]
        genre_columns = {g: j for j, g in enumerate(sorted(set().union(*genre_sets)))}
        genres = np.zeros((len(items), len(genre_columns)), dtype=bool)  # [N, G]
        for i, names in enumerate(genre_sets):
            genres[i, [genre_columns[g] for g in names]] = True
        years = [item.year for item in items]
        return cls(
            genre_columns,
            genres,
            np.array([y is not None for y in years], dtype=bool),
            np.array([0 if y is None else y for y in years], dtype=np.int64),
        )

    @classmethod
    def of_columns(cls, columns: ItemColumns) -> AttributeIndex:
        """From a dataset's columns without making an item (needs ``columns.attributes_typed``)."""
        names, genres = columns.genre_matrix()
        year_known, years = columns.known_years()
        return cls({g: j for j, g in enumerate(names)}, genres, year_known, years)

    @classmethod
    def from_arrays(
        cls, genre_columns: dict[str, int], genres: np.ndarray, year_known: np.ndarray, years: np.ndarray
    ) -> AttributeIndex:
        """The index over arrays made before (:mod:`steering.lookup`; they may be memory-mapped)."""
        return cls(genre_columns, genres, year_known, years)

    @staticmethod
    def supports(items: Sequence[Item]) -> bool:
        """Ids 0..n-1 in order and whole-number years: what the arrays assume."""
        return all(
            item.id == i and (item.year is None or (type(item.year) is int)) for i, item in enumerate(items)
        )

    @staticmethod
    def supports_columns(columns: ItemColumns) -> bool:
        """The same of a dataset's columns: only items they keep as lines may break it."""
        return columns.attributes_typed and all(columns.item(i).id == i for i in columns.irregular)

    def _any_genre(self, names: Sequence[str]) -> np.ndarray:
        columns = sorted(
            {self.genre_columns[g] for g in (n.casefold() for n in names) if g in self.genre_columns}
        )
        return self.genres[:, columns].any(axis=1)

    def _in_range(self, year_range: Any) -> np.ndarray:
        inside = self.year_known.copy()
        if year_range.start is not None:
            inside &= self.years >= year_range.start
        if year_range.end is not None:
            inside &= self.years <= year_range.end
        return inside

    def _ids(self, ids: Sequence[int]) -> np.ndarray:
        mask = np.zeros(len(self.years), dtype=bool)
        known = [i for i in ids if 0 <= i < len(mask)]
        mask[known] = True
        return mask

    def allowed(self, preferences: Preferences) -> np.ndarray:
        """[N] bool: the items that break no hard constraint of ``preferences``."""
        wanted, unwanted = preferences.positive, preferences.negative
        ok = np.ones(len(self.years), dtype=bool)
        if wanted.genres:
            ok &= self._any_genre(wanted.genres)
        if wanted.year_range is not None:
            ok &= self._in_range(wanted.year_range)
        if wanted.items:
            ok &= self._ids(wanted.items)
        if unwanted.genres:
            ok &= ~self._any_genre(unwanted.genres)
        if unwanted.year_range is not None:
            ok &= ~self._in_range(unwanted.year_range)
        if unwanted.items:
            ok &= ~self._ids(unwanted.items)
        return ok


_ATTRIBUTE_INDEXES: weakref.WeakKeyDictionary[Any, AttributeIndex | None] = weakref.WeakKeyDictionary()


def attribute_index(catalog: Catalog) -> AttributeIndex | None:
    """The catalog's :class:`AttributeIndex`, built on first use and kept as long as the catalog lives;
    None for a catalog the arrays cannot hold (then the filter asks :func:`hard_violations` per item)."""
    try:
        return _ATTRIBUTE_INDEXES[catalog]
    except KeyError:
        pass
    except TypeError:  # not weakly referenceable
        return None
    try:
        if isinstance(catalog, Dataset):  # 10^6 items: read from the columns, never item by item
            columns = catalog.item_columns
            index = AttributeIndex.of_columns(columns) if AttributeIndex.supports_columns(columns) else None
        else:
            items = catalog.items
            index = AttributeIndex.of_items(items) if AttributeIndex.supports(items) else None
    except (AttributeError, TypeError, ValueError):  # attributes of odd types: the per-item rules judge
        index = None
    _ATTRIBUTE_INDEXES[catalog] = index
    return index


def use_attribute_index(catalog: Catalog, index: AttributeIndex | None) -> None:
    """Make ``index`` (read from the steering look-up) :func:`attribute_index`'s answer for ``catalog``."""
    with contextlib.suppress(TypeError):  # not weakly referenceable: attribute_index builds none either
        _ATTRIBUTE_INDEXES[catalog] = index


def semantic_scores(
    candidates: Sequence[int], soft: Sequence[SoftPreference], similarity: Similarity
) -> tuple[list[float] | None, list[SoftPreference]]:
    """Mean cosine similarity of each candidate to the embeddable preferences, and the ones skipped."""

    def similarities(pref: SoftPreference) -> np.ndarray | None:
        sims = similarity.similarities(candidates, pref)
        return None if sims is None else np.asarray(sims, dtype=np.float64)

    means, skipped = _mean_similarities(soft, similarities)
    return (None if means is None else means.tolist()), skipped


def semantic_score_array(
    candidates: np.ndarray, soft: Sequence[SoftPreference], similarity: Similarity
) -> tuple[np.ndarray | None, list[SoftPreference]]:
    """:func:`semantic_scores` of an int array of candidates, as a float64 array (the same floats)."""
    return _mean_similarities(soft, lambda pref: similarity.similarity_array(candidates, pref))


def _mean_similarities(
    soft: Sequence[SoftPreference], similarities: Callable[[SoftPreference], np.ndarray | None]
) -> tuple[np.ndarray | None, list[SoftPreference]]:
    """The column means of each embeddable preference's similarities, and the preferences skipped."""
    rows: list[np.ndarray] = []
    skipped: list[SoftPreference] = []
    for pref in soft:
        sims = similarities(pref)
        if sims is None:
            skipped.append(pref)
        else:
            rows.append(sims)
    return (_mean_rows(rows) if rows else None), skipped


def _mean_rows(rows: Sequence[np.ndarray]) -> np.ndarray:
    """``statistics.fmean`` of each column of one or more float64 rows, the same floats."""
    if len(rows) == 1:  # the mean of one value is that value, -0.0 made 0.0 as fmean does
        return rows[0] + 0.0
    if len(rows) == 2:  # fmean of two: fsum (one rounded addition) / 2, which float64 does per column
        pair = np.stack(rows)
        if np.isfinite(pair).all():
            return (pair[0] + pair[1]) / 2 + 0.0
    columns = zip(*(row.tolist() for row in rows), strict=True)
    return np.array([statistics.fmean(col) for col in columns], dtype=np.float64)


def match(
    collaborative: Sequence[float], semantic: Sequence[float], *, semantic_weight: float
) -> list[float]:
    """Matcher tool: ``w * z(semantic) + (1 - w) * z(collaborative)``."""
    return match_array(
        np.asarray(collaborative, dtype=np.float64),
        np.asarray(semantic, dtype=np.float64),
        semantic_weight=semantic_weight,
    ).tolist()


def match_array(collaborative: np.ndarray, semantic: np.ndarray, *, semantic_weight: float) -> np.ndarray:
    """:func:`match` over float64 arrays."""
    if not 0.0 <= semantic_weight <= 1.0:
        raise ValueError(f"semantic_weight must be in [0, 1], got {semantic_weight}")
    if len(semantic) != len(collaborative):
        raise ValueError(
            f"match: {len(semantic)} semantic scores for {len(collaborative)} collaborative ones"
        )
    sem, col = zscore_array(semantic), zscore_array(collaborative)
    return semantic_weight * sem + (1.0 - semantic_weight) * col  # float64: as in Python


def attenuate(similarity_to_negative: Sequence[float], *, strength: float) -> list[float]:
    """Attenuator tool: a penalty for candidates more similar than average to what the user rejects."""
    return attenuate_array(np.asarray(similarity_to_negative, dtype=np.float64), strength=strength).tolist()


def attenuate_array(similarity_to_negative: np.ndarray, *, strength: float) -> np.ndarray:
    """:func:`attenuate` over a float64 array."""
    if strength < 0:
        raise ValueError(f"strength must be >= 0, got {strength}")
    z = zscore_array(similarity_to_negative)
    return strength * np.where(z > 0.0, z, 0.0)  # max(0.0, z), a zero never signed


def aggregate(
    candidates: Sequence[int],
    collaborative: Sequence[float],
    *,
    matched: Sequence[float] | None = None,
    semantic: Sequence[float] | None = None,
    penalties: Sequence[float] | None = None,
    k: int | None = None,
) -> list[RankedItem]:
    """Aggregator tool: final score = matcher score (or z(collaborative)) - penalty, best first.

    Ties keep the candidate order, so the result is deterministic.
    """

    def floats(values: Sequence[float] | None) -> np.ndarray | None:
        return None if values is None else np.asarray(values, dtype=np.float64)

    return aggregate_arrays(
        np.asarray(candidates, dtype=np.int64),
        np.asarray(collaborative, dtype=np.float64),
        matched=floats(matched),
        semantic=floats(semantic),
        penalties=floats(penalties),
        k=k,
    )


def aggregate_arrays(
    candidates: np.ndarray,
    collaborative: np.ndarray,
    *,
    matched: np.ndarray | None = None,
    semantic: np.ndarray | None = None,
    penalties: np.ndarray | None = None,
    k: int | None = None,
) -> list[RankedItem]:
    """:func:`aggregate` over arrays (ids int64, scores float64): a Python object only per item ranked."""
    base = matched if matched is not None else zscore_array(collaborative)
    penalized = len(candidates) if penalties is None else len(penalties)
    if not len(base) == penalized == len(candidates) == len(collaborative):
        raise ValueError("aggregate: one score per candidate")
    # No penalty leaves the score as it is (x - 0.0 is x, float for float): no 10^6-value subtraction.
    score = base if penalties is None else base - penalties
    if np.isnan(score).any():  # NaN has no place in an order: Python's sort decides as it always did
        order = sorted(range(len(candidates)), key=lambda i: -score[i])
    else:  # stable, like list.sort; + 0.0 makes -0.0 and 0.0 one key
        keys = np.negative(score)
        order = _stable_order(np.add(keys, 0.0, out=keys), k).tolist()
    return [
        RankedItem(
            item=int(candidates[i]),
            score=float(score[i]),
            collaborative=float(collaborative[i]),
            semantic=None if semantic is None else float(semantic[i]),
            penalty=0.0 if penalties is None else float(penalties[i]),
        )
        for i in (order if k is None else order[:k])
    ]


def zscore_order(values: np.ndarray, k: int) -> np.ndarray | None:
    """The positions :func:`aggregate_arrays` ranks first when ``values`` alone are scored (no matcher,
    no penalty), read off the values themselves: the z-score's exact sums (~15 ms over a 10^6-item
    pool) are not needed to know the order. None where that cannot be shown; then rank by z.

    z = (x - mean) / std never reverses two values, and keeps two distinct ones distinct when they
    lie further apart than the rounding of either step can move them: 2^-51 of the values' range
    (the mean lies within it), checked here with a wide margin for the first k + 1 values. Equal
    values have equal z, so ties keep the candidate order in both rankings.
    """
    x = np.asarray(values, dtype=np.float64)
    if not 0 < k < len(x) or len(x) < _EXACT_FROM:
        return None
    lowest, highest = float(x.min()), float(x.max())  # NaN propagates: no order read then
    if not (np.isfinite(lowest) and np.isfinite(highest)) or max(-lowest, highest) > 2.0**1000:
        return None  # (x - mean) might overflow
    if lowest == highest:  # z is all zeros: the candidate order
        return np.arange(k)
    order = _stable_order(-x, k + 1)  # -x: exact, and -0.0 ties 0.0 as z's + 0.0 makes them
    top = x[order]
    if top[k] == top[k - 1]:  # a tie across the k-th place: what lies beyond it decides (rare)
        return None
    spread = (highest - lowest) + 2.0**-50 * max(abs(lowest), abs(highest))
    if spread < 2.0**-900:  # differences near the subnormals: their rounding is not relative
        return None
    gaps = top[:-1] - top[1:]
    if np.any((gaps > 0.0) & (gaps <= spread * _DISTINCT_Z)):
        return None
    return order[:k]


_DISTINCT_Z = 2.0**-46
"""Values further apart than this share of their range have distinct z-scores (2^-51 would do)."""


def _stable_order(keys: np.ndarray, k: int | None) -> np.ndarray:
    """``np.argsort(keys, kind="stable")[:k]`` (NaN-free keys) without sorting what lies past the
    k-th: every key up to the k-th smallest (its ties included) is kept in position order, then
    sorted stably. A 10^6-item pool with k = 20: ~5 ms instead of a full sort's ~100 ms."""
    if k is None or not 0 < k < len(keys):
        return np.argsort(keys, kind="stable")
    kth = np.partition(keys, k - 1)[k - 1]
    within = np.flatnonzero(keys <= kth)  # ascending positions: ties keep the candidate order
    return within[np.argsort(keys[within], kind="stable")][:k]


def zscore(values: Sequence[float]) -> list[float]:
    """(x - mean) / std over the list; all zeros when the list is constant or shorter than 2."""
    if len(values) < 2:
        return [0.0] * len(values)
    mean, std = statistics.fmean(values), _pstdev(values)
    if std == 0.0:
        return [0.0] * len(values)
    # the mean and deviation as exact as statistics makes them; the arithmetic per value is float64's
    return ((np.asarray(values, dtype=np.float64) - mean) / std).tolist()


def zscore_array(values: np.ndarray) -> np.ndarray:
    """:func:`zscore` of a float64 array, as an array and the same floats: over a 10^6-item pool the
    mean and the deviation come from one pass of exact integer sums (:func:`_exact_sums`), never a
    Python float per value."""
    x = np.asarray(values, dtype=np.float64)
    if _SQRT_OF_FRACTION is None or len(x) < _EXACT_FROM or not np.isfinite(x).all():
        return np.asarray(zscore(x.tolist()), dtype=np.float64)
    n = len(x)
    total, squares, lowest = _exact_sums(x)
    std = _pstdev_of_sums(n, total, squares, lowest)
    if std == 0.0:
        return np.zeros(n)
    mean = float(Fraction(total) * Fraction(2) ** lowest) / n  # fmean: fsum (correctly rounded) / n
    z = np.subtract(x, mean)
    return np.divide(z, std, out=z)  # in place: a 10^6-value temporary less (the same floats)


# statistics.pstdev is exact (sums of the values' integer ratios, then a correctly rounded square
# root) and spends ~1 µs of Python per value: 15-40 ms over a 10^5-item pool. _pstdev makes the
# same exact sums with numpy and gives the same float; it keeps statistics' own rounding step.
_SQRT_OF_FRACTION = getattr(statistics, "_float_sqrt_of_frac", None)
_EXACT_FROM = 1024  # below this, statistics is as fast
_CHUNK = 256  # each summed product is below 2**54, so 256 of them stay below 2**62 (no int64 overflow)


def _pstdev(values: Sequence[float]) -> float:
    """``statistics.pstdev(values)``, the same float, computed in numpy for long lists of floats."""
    if _SQRT_OF_FRACTION is None or len(values) < _EXACT_FROM or set(map(type, values)) != {float}:
        return statistics.pstdev(values)
    x = np.asarray(values, dtype=np.float64)
    if not np.isfinite(x).all():
        return statistics.pstdev(values)
    return _pstdev_of_sums(len(x), *_exact_sums(x))


def _exact_sums(x: np.ndarray) -> tuple[int, int, int]:
    """The sums of finite float64 ``x`` and of its squares as exact integers, in units of ``2**lowest``
    and ``2**(2 * lowest)``, and ``lowest``. A 10^6-item pool is summed in parts on the catalog-scan
    threads: exact sums add up to the same integers in any order."""
    return _combined(map_rows(len(x), lambda rows: _exact_sums_of_part(x[rows])))


def _combined(sums: Sequence[tuple[int, int, int]]) -> tuple[int, int, int]:
    """Exact (total, squares, lowest) sums of several parts as those of the whole, in one form
    whatever the parts: ``lowest`` as high as both sums allow ((0, 0, 0) when both are zero)."""
    lowest = min(part_lowest for _, _, part_lowest in sums)
    total = sum(part_total << (part_lowest - lowest) for part_total, _, part_lowest in sums)
    squares = sum(part_squares << (2 * (part_lowest - lowest)) for _, part_squares, part_lowest in sums)
    if not squares:  # every value is zero (a nonzero value has a nonzero square)
        return 0, 0, 0
    shift = ((squares & -squares).bit_length() - 1) // 2  # 2 ** (2 * shift) divides squares
    if total:
        shift = min(shift, (total & -total).bit_length() - 1)
    return total >> shift, squares >> (2 * shift), lowest + shift


# A part is summed a chunk at a time: a chunk's temporaries (128 KB each) stay in the cache and in
# malloc's heap. One pass over a whole 10^6-value part made a dozen fresh 4-8 MB arrays, each paying
# a page fault per 4 KB page (~2 µs on a VM): most of the ~15 ms the sums took.
_SUM_CHUNK = 1 << 14


def _exact_sums_of_part(x: np.ndarray) -> tuple[int, int, int]:
    """:func:`_exact_sums` of one part, in one thread."""
    short_bins = _PowerBins()
    sums = []
    for start in range(0, len(x), _SUM_CHUNK):
        fraction, exponent = np.frexp(x[start : start + _SUM_CHUNK])
        short = fraction * 2.0**_SHORT_BITS
        if np.array_equal(short, np.trunc(short)):
            short_bins.add(short, exponent - _SHORT_BITS)
        else:
            sums.append(_exact_sums_of_long(fraction, exponent))
    if short_bins.count:
        sums.append(short_bins.sums())
    return _combined(sums)


def _exact_sums_of_long(fraction: np.ndarray, exponent: np.ndarray) -> tuple[int, int, int]:
    """:func:`_exact_sums` of ``fraction * 2**exponent`` (np.frexp's halves) of any float64s."""
    mantissa = (fraction * 2.0**53).astype(np.int64)  # exactly: x = mantissa * 2**power
    power = exponent.astype(np.int64) - 53
    # Grouped by power (order within a group does not matter: its sums are exact). The powers of
    # float64 span < 2^12 values, so as uint16 numpy's stable sort is a radix sort: O(n), not n log n.
    order = np.argsort((power - power.min()).astype(np.uint16), kind="stable")
    mantissa, power = mantissa[order], power[order]
    lowest = int(power[0])
    starts = np.flatnonzero(np.diff(power, prepend=power[0] - 1)).tolist()
    total = squares = 0  # sum of x and of x**2, in units of 2**lowest and 2**(2 * lowest)
    for start, end in zip(starts, [*starts[1:], len(power)], strict=True):
        shift = int(power[start]) - lowest
        group = mantissa[start:end]
        size = np.abs(group)
        high, low = (
            size >> 27,
            size & ((1 << 27) - 1),
        )  # size**2 = high**2 * 2**54 + 2*high*low * 2**27 + low**2
        total += _exact_sum(group) << shift
        square = (_exact_sum(high * high) << 54) + (_exact_sum(2 * high * low) << 27) + _exact_sum(low * low)
        squares += square << (2 * shift)
    return total, squares, lowest


# Scores and cosines are float32's, made float64: 24 significant bits. Such a mantissa's square is
# exact in float64, and 2^29 of them (or of its square's two 24-bit halves) sum exactly in float64:
# bincount per power of two gives the exact sums in a few passes, without sorting (10^6 values:
# ~5 ms instead of ~35). Wider mantissas (a mean of two cosines, say) take the general path.
_SHORT_BITS = 24
_MOST_SHORT = 1 << 29


class _PowerBins:
    """Exact sums of integer-valued float64 mantissas below ``2**24`` in size, times a power of two,
    and of their squares: float64 bins per power (np.frexp's exponents: -1073..1024), added to chunk
    by chunk. Each bin stays exact while at most 2^29 values are added."""

    _OFFSET = 1100  # the lowest power of a float64's 24-bit mantissa is -1073 - 24
    _BINS = 2 * _OFFSET

    def __init__(self) -> None:
        self.count = 0
        self.totals = np.zeros(self._BINS)
        self.highs = np.zeros(self._BINS)  # the squares' high 24-bit halves
        self.lows = np.zeros(self._BINS)

    def add(self, mantissa: np.ndarray, power: np.ndarray) -> None:
        self.count += len(mantissa)
        if self.count > _MOST_SHORT:
            raise ValueError(f"more than {_MOST_SHORT} values in one part")
        group = power + self._OFFSET
        squared = mantissa * mantissa  # < 2**48: exact
        high = np.floor(squared * 2.0**-_SHORT_BITS)
        low = squared - high * 2.0**_SHORT_BITS
        self.totals += np.bincount(group, weights=mantissa, minlength=self._BINS)
        self.highs += np.bincount(group, weights=high, minlength=self._BINS)
        self.lows += np.bincount(group, weights=low, minlength=self._BINS)

    def sums(self) -> tuple[int, int, int]:
        used = np.flatnonzero(self.highs + self.lows)  # a nonzero value has a nonzero square
        if not len(used):  # every value was zero
            return 0, 0, 0
        lowest = int(used[0])
        total = squares = 0
        for g in used.tolist():
            shift = g - lowest
            total += int(self.totals[g]) << shift
            squares += ((int(self.highs[g]) << _SHORT_BITS) + int(self.lows[g])) << (2 * shift)
        return total, squares, lowest - self._OFFSET


def _pstdev_of_sums(n: int, total: int, squares: int, lowest: int) -> float:
    """statistics' correctly rounded population deviation from :func:`_exact_sums`."""
    mean_square_deviation = Fraction(n * squares - total * total, n * n) * Fraction(2) ** (2 * lowest)
    return _SQRT_OF_FRACTION(mean_square_deviation.numerator, mean_square_deviation.denominator)


def _exact_sum(values: np.ndarray) -> int:
    """The sum of int64 values (each below 2**54 in size) as a Python int, never overflowing."""
    padded = np.concatenate([values, np.zeros(-len(values) % _CHUNK, dtype=np.int64)])
    return sum(padded.reshape(-1, _CHUNK).sum(axis=1).tolist())
