"""Which parser ``auto`` picks, and how the learned parser weighs the rules' reading (no model, no DB)."""

from __future__ import annotations

import torch

from app.settings import Settings
from steering.choice import parser_kind
from steering.learned_parser import ARTIFACT_FORMAT, _agreement

LEARNED = {"exact": 0.75, "n": 982, "abstained": 152, "commands_with_inversion": 16}
"""The MovieLens learned parser a fresh `make serve` trained (simulated validation, 2026-12-06)."""


def _artifact(tmp_path, name, info):
    path = tmp_path / f"{name}.pt"
    torch.save({"format": ARTIFACT_FORMAT, "config": {}, "state": {}, "thresholds": {}, "info": info}, path)
    return path


def _rules(exact, abstained, inverted, n=982):
    return {"exact": exact, "n": n, "abstained": abstained, "commands_with_inversion": inverted}


def test_auto_prefers_the_learned_parser_when_it_reads_more_and_inverts_no_larger_share(tmp_path):
    settings = Settings(llm_base_url=None)
    cases = {
        # the rules read 172 and invert 3 (1.7 %); the learned parser reads 830 and inverts 16 (1.9 %)
        "reads_far_more_at_the_rules_rate": (LEARNED, _rules(0.21, 810, 3), "learned"),
        "inverts_a_larger_share": (
            {**LEARNED, "commands_with_inversion": 60},
            _rules(0.21, 810, 3),
            "offline",
        ),
        "rules_never_invert": ({**LEARNED, "commands_with_inversion": 16}, _rules(0.21, 0, 0), "offline"),
        "reads_less_exactly": (LEARNED, _rules(0.9, 100, 30), "offline"),
        "unrecorded": (LEARNED, None, "offline"),
        "before_abstentions_were_recorded": (
            {"exact": 0.8, "commands_with_inversion": 3},
            {"exact": 0.5, "commands_with_inversion": 1},
            "offline",
        ),
    }
    for name, (learned, rules, kind) in cases.items():
        info: dict = {"val": learned}
        if rules is not None:
            info["offline_val"] = rules
        path = _artifact(tmp_path, name, info)
        with_artifact = settings.model_copy(update={"steering_parser_artifact": path})
        assert parser_kind(with_artifact.parser_config(), "movielens") == kind, name
    forced = with_artifact.model_copy(update={"steering_parser": "learned"})
    assert parser_kind(forced.parser_config(), "movielens") == "learned"  # an explicit choice is kept


def test_the_rules_agree_veto_or_stay_silent():
    rules = {("genres", "negative", "horror"), ("years", "positive", 1990, 1999)}
    assert _agreement({("genres", "negative", "horror")}, rules) == "agree"
    assert _agreement({("genres", "positive", "horror")}, rules) == "conflict"
    assert _agreement({("years", "lift", 1990, 1999)}, rules) == "conflict"
    assert _agreement({("genres", "positive", "comedy")}, rules) == "silent"
