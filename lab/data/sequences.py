"""From per-user interaction sequences to the split rows of the LLaRA protocol.

Shared by the raw builders: users are split by the time of their first interaction (the
earliest 80 % train, then 10 % validation, the rest test); each training user gives one
row per interaction (DreamRec-style windows, the first with an empty history), each
validation/test user one row whose target is the last interaction.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

from recmodels.dataset import MAX_HISTORY, SPLITS

TRAIN_FRACTION = 0.8
VAL_FRACTION = 0.1


@dataclass(frozen=True)
class Event:
    """One interaction of a user, already mapped to a 0-based item id."""

    item: int
    timestamp: float
    rating: int | float | None = None


@dataclass(frozen=True)
class UserSequence:
    user: Hashable  # the original user id
    events: tuple[Event, ...]  # oldest first

    @property
    def first_timestamp(self) -> float:
        return self.events[0].timestamp


@dataclass(frozen=True)
class RowLayout:
    """Which optional keys the rows carry (MovieLens keeps the upstream layout exactly)."""

    pad_id: int
    with_user: bool
    with_ratings: bool


def split_users_by_time(users: Sequence[UserSequence]) -> dict[str, list[UserSequence]]:
    """Earliest 80 % of users (by first interaction) train, next 10 % val, the rest test.

    Within a split users keep their input order (first appearance in the source file).
    """
    n_train = int(TRAIN_FRACTION * len(users))
    n_val = int(VAL_FRACTION * len(users))
    # sorted() is stable: users starting at the same second keep their input order.
    by_time = sorted(range(len(users)), key=lambda i: users[i].first_timestamp)
    split_of = {}
    for rank, index in enumerate(by_time):
        split_of[index] = "train" if rank < n_train else "val" if rank < n_train + n_val else "test"
    return {split: [u for i, u in enumerate(users) if split_of[i] == split] for split in SPLITS}


def split_rows(users_by_split: dict[str, list[UserSequence]], layout: RowLayout) -> dict[str, list[dict]]:
    """Rows of every split, numbered from 0 within the split."""
    rows: dict[str, list[dict]] = {}
    for split, users in users_by_split.items():
        targets = (
            ((user, k) for user in users for k in range(len(user.events)))
            if split == "train"
            else ((user, len(user.events) - 1) for user in users)
        )
        rows[split] = [_row(index, user, k, layout) for index, (user, k) in enumerate(targets)]
    return rows


def _row(index: int, user: UserSequence, k: int, layout: RowLayout) -> dict[str, Any]:
    history = user.events[max(0, k - MAX_HISTORY) : k]
    target = user.events[k]
    items = [event.item for event in history]
    row: dict[str, Any] = {"row": index}
    if layout.with_user:
        row["user"] = user.user
    row["history"] = items
    if layout.with_ratings:
        row["history_ratings"] = [event.rating for event in history]
    row["seq_padded"] = items + [layout.pad_id] * (MAX_HISTORY - len(items))
    row["len_seq"] = max(1, len(items))
    row["next"] = target.item
    if layout.with_ratings:
        row["next_rating"] = target.rating
    return row
