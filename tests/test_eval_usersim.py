"""User-simulation protocol (Table 5): the AFL reference lists and the test-row protocol."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from lab.eval.table5 import (
    build_eval_list,
    cases_from_reference,
    cases_from_rows,
    reward_model_verdicts,
    split_positives,
    summarise_usersim,
)


def test_split_positives_follows_the_ratio_and_caps_by_known_future() -> None:
    assert [split_positives(20, m, 10) for m in (1, 3, 9)] == [(10, 10), (5, 15), (2, 18)]
    assert split_positives(20, 1, 8) == (8, 8)


def test_eval_list_takes_the_nearest_future_items() -> None:
    built = build_eval_list([7, 8, 9], 2, 4, pool=list(range(100, 110)), rng=random.Random(0))
    positives = {item for item, label in zip(built.items, built.labels, strict=True) if label}
    assert positives == {7, 8}
    assert len(built.items) == 6 and all(
        i >= 100 for i, lab in zip(built.items, built.labels, strict=True) if not lab
    )
    with pytest.raises(ValueError, match="need 4 non-interacted items but only 2"):
        build_eval_list([1], 1, 4, pool=[5, 6], rng=random.Random(0))


def test_reference_file_keeps_afl_lists_at_one_to_one(shared_data: Path) -> None:
    path = shared_data / "lastfm_usersim" / "usersim_candidates_seed303.jsonl"
    cases = cases_from_reference(path, n_items=4606, ratios=(1, 3, 9), seed=0, n_eval=20)
    first = json.loads(path.open().readline())
    users = {
        u["id"]: u for u in map(json.loads, (shared_data / "lastfm_usersim" / "test_users.jsonl").open())
    }
    assert len(cases) == 60
    case = cases[0]
    assert case.eval_lists[1].items == tuple(first["eval_candidates"])
    assert case.eval_lists[1].labels == tuple(bool(v) for v in first["eval_labels"])
    assert (case.rec_history, case.rec_target) == (tuple(first["history"]), first["next"])
    assert case.init_history == tuple(first["init_history"])
    one_to_nine = case.eval_lists[9]
    positives = [i for i, lab in zip(one_to_nine.items, one_to_nine.labels, strict=True) if lab]
    negatives = [i for i, lab in zip(one_to_nine.items, one_to_nine.labels, strict=True) if not lab]
    assert sorted(positives) == sorted(first["pred_items"][:2]) and len(negatives) == 18
    assert not set(negatives) & (set(users[0]["full_list"]) | set(first["rec_candidates"]))


def test_test_row_protocol_splits_known_items_into_init_and_future(ml_dataset) -> None:
    rows, _ = ml_dataset.eval_rows("test")
    cases = cases_from_rows(rows[:5], ml_dataset.n_items, (1, 3), seed=1, n_eval=20, n_candidates=20)
    row, case = rows[0], cases[0]
    sequence = [*row.history, row.next]
    assert case.init_history == tuple(sequence[:3])  # 11 known items: 3 initial, 8 future
    assert case.rec_history + (case.rec_target,) == case.init_history
    assert case.rec_target in case.rec_candidates and len(case.rec_candidates) == 20
    one_to_three = case.eval_lists[3]
    assert sum(one_to_three.labels) == 5 and len(one_to_three.items) == 20
    negatives = {i for i, lab in zip(one_to_three.items, one_to_three.labels, strict=True) if not lab}
    assert not negatives & (set(sequence) | set(case.rec_candidates))
    assert cases == cases_from_rows(rows[:5], ml_dataset.n_items, (1, 3), seed=1, n_eval=20, n_candidates=20)


def test_reward_model_verdicts_like_the_accept_share() -> None:
    assert (
        reward_model_verdicts([3, 1, 4, 2, 5, 6, 7, 8], share=0.25)
        == [False, True, False, True] + [False] * 4
    )
    assert reward_model_verdicts([2, 1], share=0.1) == [False, True]  # at least one liked


def test_summary_gives_micro_at_top_level_and_macro_nested() -> None:
    records = [
        {
            "ratios": {
                "1": {
                    "labels": [1, 1, 0, 0],
                    "reward_model": [1, 0, 0, 0],
                    "agent": [1, 1, 1, 1],
                    "flow": [1, 1, 0, 0],
                }
            }
        },
        {
            "ratios": {
                "1": {
                    "labels": [1, 0, 0, 0],
                    "reward_model": [0, 0, 0, 1],
                    "agent": [1, 1, 1, 0],
                    "flow": [1, 0, 0, 0],
                }
            }
        },
    ]
    rows = {r["method"]: r for r in summarise_usersim("d", records, (1,))}
    assert rows["flow"]["f1"] == 1.0 and rows["flow"]["ratio"] == "1:1"
    # agent: user 1 tp=2 fp=2 (P=1/2), user 2 tp=1 fp=2 (P=1/3) -> micro P = 3/7, macro P = 5/12
    assert rows["agent"]["precision"] == pytest.approx(3 / 7) and rows["agent"]["recall"] == 1.0
    assert rows["agent"]["macro"]["precision"] == pytest.approx(5 / 12)
    # reward model: user 1 P=1 R=0.5 F1=2/3; user 2 P=0 R=0 -> macro F1 = 1/3; micro tp=1 fp=1 fn=2
    assert rows["reward_model"]["macro"]["f1"] == pytest.approx(1 / 3)
    assert rows["reward_model"]["f1"] == pytest.approx(2 * 0.5 * (1 / 3) / (0.5 + 1 / 3))


def test_a_user_whose_items_leave_too_few_others_for_the_lists_gets_no_case() -> None:
    from recmodels.dataset import Row

    rows = [Row(history=tuple(range(12)), next=12, len_seq=12), Row(history=(0, 1, 2, 0), next=1, len_seq=4)]
    # 20 candidates and up to 15 negatives: neither user fits a catalog of 25, both fit one of 200.
    assert cases_from_rows(rows, 25, (1, 3), seed=0, n_eval=20, n_candidates=20) == []
    cases = cases_from_rows(rows, 200, (1, 3), seed=0, n_eval=20, n_candidates=20)
    assert len(cases) == 2 and all(not set(c.rec_candidates) & set(c.rec_history) for c in cases)
