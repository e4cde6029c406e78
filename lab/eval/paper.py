"""Published numbers of AFL/FLOW (arXiv 2410.20027), quoted beside ours in every report.

Transcribed from the paper's text (``../shared/papers/afl-flow-arxiv-2410.20027.txt``, Tables 4-6;
``tests/test_eval_paper.py`` checks them against ``afl-tables.json`` there). The paper's agents are
GPT-4o-mini; its loop runs at most 4 rounds; the user agent's reward model is SASRec throughout;
Tables 5 and 6 also fix the rec model to SASRec. Figures 3 and 5 have no numbers in the text.
"""

from __future__ import annotations

from collections.abc import Mapping

# Table 4: HR@1 of 20 candidates; (model, agent, flow) per dataset and rec model.
TABLE4: Mapping[str, Mapping[str, tuple[float, float, float]]] = {
    "lastfm": {
        "sasrec": (0.2869, 0.3197, 0.3770),
        "gru4rec": (0.2787, 0.3114, 0.3770),
        "caser": (0.2705, 0.2705, 0.3443),
        "morec": (0.1639, 0.2131, 0.3115),
        "llama3-8b": (0.2131, 0.2541, 0.2869),
        "gpt-4o-mini": (0.3607, 0.3607, 0.3770),
        "llara": (0.4426, 0.4426, 0.4836),
    },
    "steam": {
        "sasrec": (0.3800, 0.3900, 0.4100),
        "gru4rec": (0.3750, 0.3850, 0.4100),
        "caser": (0.4200, 0.4150, 0.4500),
        "morec": (0.4100, 0.4200, 0.4250),
        "llama3-8b": (0.1800, 0.2250, 0.3000),
        "gpt-4o-mini": (0.3350, 0.3400, 0.3500),
        "llara": (0.4650, 0.4650, 0.4750),
    },
    "movielens": {
        "sasrec": (0.4105, 0.4105, 0.4316),
        "gru4rec": (0.4526, 0.4526, 0.4632),
        "caser": (0.3789, 0.3895, 0.4000),
        "morec": (0.3158, 0.3158, 0.3474),
        "llama3-8b": (0.1368, 0.1368, 0.1684),
        "gpt-4o-mini": (0.1368, 0.1368, 0.1579),
        "llara": (0.4842, 0.4842, 0.4947),
    },
}

# Table 5: user simulation (precision, recall, F1) per dataset, ratio 1:m and method
# ("sasrec" = the reward model alone, "agent" = the user agent without the loop, "flow" = after it).
TABLE5: Mapping[str, Mapping[str, Mapping[str, tuple[float, float, float]]]] = {
    "lastfm": {
        "1:1": {"sasrec": (0.6667, 0.0533, 0.0988), "agent": (0.8155, 0.3467, 0.4865),
                "flow": (0.8504, 0.5000, 0.6297)},
        "1:3": {"sasrec": (0.4167, 0.0571, 0.1005), "agent": (0.5910, 0.3571, 0.4452),
                "flow": (0.7343, 0.4286, 0.5412)},
        "1:9": {"sasrec": (0.1667, 0.0667, 0.0952), "agent": (0.2356, 0.2667, 0.2501),
                "flow": (0.3705, 0.4286, 0.3974)},
    },
    "steam": {
        "1:1": {"sasrec": (0.7826, 0.6800, 0.7277), "agent": (0.8031, 0.6933, 0.7422),
                "flow": (0.8501, 0.6700, 0.7494)},
        "1:3": {"sasrec": (0.5791, 0.7133, 0.6393), "agent": (0.6323, 0.7067, 0.6674),
                "flow": (0.6815, 0.7267, 0.7034)},
        "1:9": {"sasrec": (0.3408, 0.7667, 0.4718), "agent": (0.3682, 0.8167, 0.5076),
                "flow": (0.4303, 0.8167, 0.5636)},
    },
    "movielens": {
        "1:1": {"sasrec": (0.6929, 0.3800, 0.4908), "agent": (0.7049, 0.5133, 0.5941),
                "flow": (0.7065, 0.5500, 0.6185)},
        "1:3": {"sasrec": (0.5179, 0.3077, 0.3860), "agent": (0.5114, 0.4800, 0.4952),
                "flow": (0.8107, 0.4667, 0.5924)},
        "1:9": {"sasrec": (0.3397, 0.2667, 0.2988), "agent": (0.2313, 0.5000, 0.3163),
                "flow": (0.4410, 0.4333, 0.4371)},
    },
}  # fmt: skip

# Table 6: HR@1 with rec and reward model SASRec: base (neither model), rec_model (only the rec
# agent has one), reward_model (only the user agent has one), flow (both).
TABLE6: Mapping[str, Mapping[str, float]] = {
    "lastfm": {"base": 0.3443, "rec_model": 0.3689, "reward_model": 0.3525, "flow": 0.3770},
    "steam": {"base": 0.3250, "rec_model": 0.4000, "reward_model": 0.3950, "flow": 0.4100},
    "movielens": {"base": 0.2105, "rec_model": 0.4211, "reward_model": 0.4000, "flow": 0.4316},
}

PAPER_AGENTS = "GPT-4o-mini"

# Table 4's columns by (dataset, rec model), as the reports look them up.
PAPER_MODEL_HR1: dict[tuple[str, str], float | None] = {
    (d, m): v[0] for d, rows in TABLE4.items() for m, v in rows.items()
}
PAPER_AGENT_HR1: dict[tuple[str, str], float | None] = {
    (d, m): v[1] for d, rows in TABLE4.items() for m, v in rows.items()
}
PAPER_FLOW_HR1: dict[tuple[str, str], float | None] = {
    (d, m): v[2] for d, rows in TABLE4.items() for m, v in rows.items()
}


def paper_value(table: Mapping[tuple[str, str], float | None], dataset: str, rec_model: str) -> str:
    value = table.get((dataset, rec_model))
    return f"{value:.4f}" if value is not None else "n/a"


def paper_prf(dataset: str, ratio: str, method: str) -> tuple[float, float, float] | None:
    """Table 5's (precision, recall, F1); ``method`` is reward_model/sasrec, agent or flow."""
    key = "sasrec" if method in ("reward_model", "sasrec") else method
    return TABLE5.get(dataset, {}).get(ratio, {}).get(key)
