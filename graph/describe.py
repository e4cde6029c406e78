"""Short, truthful text about items, built only from the catalog (titles, year, genres)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from recmodels.dataset import Dataset

UNTITLED = "(untitled item)"


def title(catalog: Dataset, item_id: int) -> str:
    return catalog.title(item_id) or UNTITLED


def quoted(catalog: Dataset, item_id: int) -> str:
    return f"'{title(catalog, item_id)}'"


def label(catalog: Dataset, item_id: int) -> str:
    """``Title (1995; Comedy, Drama)``: the title plus whatever attributes the dataset has."""
    item = catalog.item(item_id)
    facts = [str(item.year)] if item.year else []
    if item.genres:
        facts.append(", ".join(item.genres))
    name = item.title or UNTITLED
    return f"{name} ({'; '.join(facts)})" if facts else name


def listing(catalog: Dataset, item_ids: Sequence[int]) -> str:
    """One ``[id] label`` line per item, the form the LLM prompts use."""
    return "\n".join(f"[{i}] {label(catalog, i)}" for i in item_ids) or "(none)"


def bullets(catalog: Dataset, item_ids: Sequence[int]) -> str:
    """One ``- label`` line per item: a list the model reads but never answers with (no ids to spend
    tokens on)."""
    return "\n".join(f"- {label(catalog, i)}" for i in item_ids) or "(none)"


def ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def either(catalog: Dataset, item_ids: Sequence[int]) -> str:
    """'A', 'B' or 'C'."""
    names = [quoted(catalog, i) for i in item_ids]
    if len(names) <= 1:
        return "".join(names)
    return f"{', '.join(names[:-1])} or {names[-1]}"


def genre_profile(catalog: Dataset, history: Sequence[int]) -> Counter[str]:
    """How many history items carry each genre (empty for datasets without genres)."""
    counts: Counter[str] = Counter()
    for item_id in history:
        counts.update(set(catalog.item(item_id).genres))
    return counts


def shared_genres(catalog: Dataset, item_id: int, profile: Counter[str]) -> list[str]:
    """The item's genres that also occur in the history, most frequent first."""
    genres = [g for g in catalog.item(item_id).genres if profile[g] > 0]
    return sorted(genres, key=lambda g: -profile[g])


def genre_affinity(catalog: Dataset, item_id: int, profile: Counter[str], n_history: int) -> float:
    """The largest share of history items that carry one of the item's genres (0..1)."""
    if n_history == 0:
        return 0.0
    best = max((profile[g] for g in catalog.item(item_id).genres), default=0)
    return best / n_history
