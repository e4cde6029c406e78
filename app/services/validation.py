"""Input checks against the catalog: each failure names the field (with its index) and the reason."""

from __future__ import annotations

from collections.abc import Sequence

from app.services.errors import InvalidInput
from recmodels.dataset import Dataset


def check_item_ids(items: Sequence[int], catalog: Dataset, *, field: str) -> None:
    n_items = catalog.n_items
    for index, item in enumerate(items):
        if not 0 <= item < n_items:
            raise InvalidInput(
                f"unknown item id {item}: the {catalog.name} catalog has ids 0..{n_items - 1}",
                field=f"{field}[{index}]",
            )


def check_history(items: Sequence[int], catalog: Dataset, *, max_items: int, field: str = "history") -> None:
    if not items:
        raise InvalidInput("history must contain at least one item", field=field)
    if len(items) > max_items:
        raise InvalidInput(f"history has {len(items)} items; at most {max_items} are accepted", field=field)
    check_item_ids(items, catalog, field=field)


def check_candidates(items: Sequence[int], catalog: Dataset, *, max_items: int) -> None:
    field = "candidates"
    if len(items) < 2:
        raise InvalidInput("give at least 2 candidates (or omit the list for the default)", field=field)
    if len(items) > max_items:
        raise InvalidInput(f"{len(items)} candidates; at most {max_items} are accepted", field=field)
    check_item_ids(items, catalog, field=field)
    first_seen: dict[int, int] = {}
    for index, item in enumerate(items):
        if item in first_seen:
            raise InvalidInput(
                f"duplicate candidate {item} (also at index {first_seen[item]})", field=f"{field}[{index}]"
            )
        first_seen[item] = index
