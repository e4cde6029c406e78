"""Which parser ``auto`` picks, and how the learned parser weighs the rules' reading (no model, no DB)."""

from __future__ import annotations

import torch

from app.settings import Settings
from steering.choice import parser_kind
from steering.learned_parser import ARTIFACT_FORMAT, _agreement

LEARNED = {"exact": 0.8, "commands_with_inversion": 3}


def _artifact(tmp_path, name, info):
    path = tmp_path / f"{name}.pt"
    torch.save({"format": ARTIFACT_FORMAT, "config": {}, "state": {}, "thresholds": {}, "info": info}, path)
    return path


def test_auto_prefers_the_learned_parser_only_when_it_inverts_no_more_than_the_rules(tmp_path):
    settings = Settings(llm_base_url=None)
    cases = {
        "safer": ((0.5, 3), "learned"),
        "flips_more": ((0.5, 1), "offline"),
        "reads_less": ((0.9, 9), "offline"),
        "unrecorded": (None, "offline"),
    }
    for name, (rules, kind) in cases.items():
        info: dict = {"val": LEARNED}
        if rules is not None:
            info["offline_val"] = {"exact": rules[0], "commands_with_inversion": rules[1]}
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
