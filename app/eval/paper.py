"""Published numbers of AFL/FLOW (arXiv 2410.20027) shown beside ours in reports.

Only values we could verify are filled in; ``None`` means "not verified here", never a guess.
"""

from __future__ import annotations

# Table 4, HR@1 of the recommendation model alone ("Model" column).
PAPER_MODEL_HR1: dict[tuple[str, str], float] = {
    ("lastfm", "sasrec"): 0.2869,
    ("lastfm", "gru4rec"): 0.2787,
    ("lastfm", "caser"): 0.2705,
    ("movielens", "sasrec"): 0.4105,
    ("movielens", "gru4rec"): 0.4526,
    ("movielens", "caser"): 0.3789,
}

# Table 4 Agent / FLOW columns: not verified from the paper text available to us.
PAPER_AGENT_HR1: dict[tuple[str, str], float | None] = {}
PAPER_FLOW_HR1: dict[tuple[str, str], float | None] = {}


def paper_value(table: dict[tuple[str, str], float | None], dataset: str, rec_model: str) -> str:
    value = table.get((dataset, rec_model))
    return f"{value:.4f}" if value is not None else "n/a"
