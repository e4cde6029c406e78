"""The user-simulation protocol (AFL Table 5, after Agent4Rec): who a simulated user is, what it
knows, which loop it takes part in and which labelled item lists it judges.

Pure data and sampling (no models): Table 5 builds its test cases with it, and the offline user
agent's calibration (``graph.calibration``) builds the same kind of cases from the validation split.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from recmodels.candidates import sample_candidates
from recmodels.dataset import Row

RATIOS = (1, 3, 9)
MIN_INIT_HISTORY = 3  # the user agent needs a few known items to have a taste at all
MAX_FUTURE = 10  # AFL: init_num 10 true future items per user


@dataclass(frozen=True)
class EvalList:
    items: tuple[int, ...]
    labels: tuple[bool, ...]


@dataclass(frozen=True)
class UserSimCase:
    """One simulated user: what it knows, the loop it takes part in, the lists it judges."""

    case_id: str
    """``s<seed>-<user>``: unique over seeds."""
    init_history: tuple[int, ...]
    rec_history: tuple[int, ...]
    rec_target: int
    rec_candidates: tuple[int, ...]
    eval_lists: Mapping[int, EvalList]
    """Per ratio m: the evaluation items and whether each is a true future item."""


def split_positives(n_eval: int, ratio: int, n_future: int) -> tuple[int, int]:
    """(positives, negatives) for 1:ratio in a list of ``n_eval``, capped by the known future items."""
    n_pos = min(max(n_eval // (1 + ratio), 1), n_future)
    return n_pos, ratio * n_pos


def build_eval_list(
    future: Sequence[int], n_pos: int, n_neg: int, pool: Sequence[int], rng: random.Random
) -> EvalList:
    """The ``n_pos`` nearest future items plus ``n_neg`` items drawn from ``pool``, shuffled."""
    if len(pool) < n_neg:
        raise ValueError(f"need {n_neg} non-interacted items but only {len(pool)} are available")
    labelled = [(item, True) for item in future[:n_pos]] + [(item, False) for item in rng.sample(pool, n_neg)]
    rng.shuffle(labelled)
    return EvalList(tuple(i for i, _ in labelled), tuple(label for _, label in labelled))


def cases_from_rows(
    rows: Sequence[Row], n_items: int, ratios: Sequence[int], seed: int, n_eval: int, n_candidates: int
) -> list[UserSimCase]:
    """The same protocol from a dataset's test users (MovieLens, Steam, LastFM without the file).

    Each test row gives the user's known sequence (history + next, at most 11 items): the last
    ``min(10, len - 3)`` items are the true future, the rest initialise the user agent; the loop
    recommends the last initial item from the ones before it.
    """
    rng = random.Random(seed)
    cases: list[UserSimCase] = []
    for index, row in enumerate(rows):
        sequence = [*row.history, row.next]
        n_future = min(MAX_FUTURE, len(sequence) - MIN_INIT_HISTORY)
        if n_future < 1:
            continue
        init, future = sequence[:-n_future], sequence[-n_future:]
        # A small catalog may leave too few items outside a user's items for the lists: no case.
        n_negatives = max(split_positives(n_eval, m, n_future)[1] for m in ratios)
        if n_items - len(set(sequence)) < n_candidates - 1 + n_negatives:
            continue
        rec_candidates = sample_candidates(init[:-1], init[-1], n_items, rng, n=n_candidates)
        excluded = set(sequence) | set(rec_candidates)
        pool = [item for item in range(n_items) if item not in excluded]
        eval_lists = {
            m: build_eval_list(future, *split_positives(n_eval, m, n_future), pool, rng) for m in ratios
        }
        cases.append(
            UserSimCase(
                f"s{seed}-{index}", tuple(init), tuple(init[:-1]), init[-1], tuple(rec_candidates), eval_lists
            )
        )
    return cases
