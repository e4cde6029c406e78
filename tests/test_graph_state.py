"""The loop's state type and its opening (graph.nodes.open_loop), on stub deps: no data, no models."""

from __future__ import annotations

from types import SimpleNamespace
from typing import get_type_hints

import pytest

from graph.nodes import LoopInputError, is_new_loop, open_loop
from graph.state import LoopInput, LoopState

INPUT_KEYS = set(get_type_hints(LoopInput))
THREAD_KEYS = {"rec_memory", "user_memory"}


class StubScorer:
    """Scores a candidate by its id: the highest id is the rec model's pick."""

    def score(self, history: list[int], candidates: list[int]) -> list[float]:
        return [float(c) for c in candidates]


def stub_deps(max_rounds: int = 4):
    scorer = StubScorer()
    return SimpleNamespace(
        config=SimpleNamespace(max_rounds=max_rounds),
        catalog=SimpleNamespace(n_items=100),
        rec_scorer=scorer,
        reward_scorer=scorer,
    )


def test_loop_state_extends_the_input_and_every_per_loop_field_is_reset_when_a_loop_opens():
    assert LoopState.__orig_bases__ == (LoopInput,)  # redeclares only the options open_loop fills
    opening = open_loop({"history": [1, 2], "candidates": [5, 9, 7]}, stub_deps())
    per_loop = set(get_type_hints(LoopState)) - (INPUT_KEYS - {"max_rounds", "judge_mode"}) - THREAD_KEYS
    assert set(opening) == per_loop  # a new per-loop field must be reset here too
    assert opening == {
        "max_rounds": 4,  # the deps' default
        "judge_mode": "agent",
        "loop_index": 1,
        "reason_constraints": None,
        "prior_item": 9,
        "rec_scores": [5.0, 9.0, 7.0],
        "reward_scores": [5.0, 9.0, 7.0],
        "proposal": None,
        "verdict": None,
        "judgement": None,
        "rounds": [],
        "final_item": None,
        "final_reason": None,
        "stop_reason": None,
        "llm_seconds": 0.0,
    }


def test_an_opening_keeps_the_callers_options_or_the_threads_previous_ones():
    ended = {
        "history": [1],
        "candidates": [3, 4],
        "max_rounds": 2,
        "judge_mode": "human",
        "loop_index": 3,
        "stop_reason": "accepted",
        "llm_seconds": 1.5,
    }
    opening = open_loop(ended, stub_deps())
    assert (opening["max_rounds"], opening["judge_mode"], opening["loop_index"]) == (2, "human", 4)
    assert opening["stop_reason"] is None and opening["llm_seconds"] == 0.0


@pytest.mark.parametrize(
    ("state", "field"),
    [
        ({"history": [1], "candidates": []}, "candidates"),
        ({"history": [1], "candidates": [2, 2]}, "candidates"),
        ({"history": [100], "candidates": [2]}, "history[0]"),
        ({"history": [1], "candidates": [2], "max_rounds": 0}, "max_rounds"),
        ({"history": [1], "candidates": [2], "judge_mode": "robot"}, "judge_mode"),
    ],
)
def test_an_opening_rejects_input_the_loop_cannot_run_on(state, field):
    with pytest.raises(LoopInputError) as bad:
        open_loop(state, stub_deps())
    assert bad.value.field == field


def test_new_input_opens_a_loop_and_a_continuation_does_not():
    running = {"history": [1], "candidates": [2], "loop_index": 1, "stop_reason": None}
    assert is_new_loop({"history": [1], "candidates": [2]})  # a thread's first loop
    assert is_new_loop({**running, "new_loop": True})  # marked input, whatever the last loop's state
    assert not is_new_loop(running)  # invoke(None) / a resume
    assert is_new_loop({**running, "stop_reason": "max_rounds"})  # unmarked input after a loop ended
