"""The loop outcome a run records, from the graph's state (app/services/loop_record.py): no database."""

from __future__ import annotations

import uuid

from app.services.loop_record import outcome_of

SESSION = uuid.UUID(int=7)


def _round(number: int, loop_index: int, tokens: int = 0) -> dict:
    usage = {"calls": 1, "prompt_tokens": tokens, "completion_tokens": 1} if tokens else None
    return {
        "round": number,
        "loop_index": loop_index,
        "item": number,
        "decision": "reject",
        "llm_usage": usage,
    }


def test_an_ended_loop_keeps_only_its_own_rounds_and_its_final_item():
    values = {
        "loop_index": 2,
        "rounds": [_round(1, 1), _round(1, 2), _round(2, 2)],  # the thread's earlier loop, then this one
        "final_item": 42,
        "final_reason": "fits",
        "stop_reason": "accepted",
    }
    outcome = outcome_of(SESSION, 2, values, None, 12.5)
    assert outcome.status == "completed" and outcome.loop_index == 2 and outcome.duration_ms == 12.5
    assert [(r["loop_index"], r["round"]) for r in outcome.rounds] == [(2, 1), (2, 2)]
    assert (outcome.final_item, outcome.final_reason, outcome.stop_reason) == (42, "fits", "accepted")


def test_a_paused_loop_has_its_question_and_no_final_item_yet():
    values = {"loop_index": 1, "rounds": [_round(1, 1)], "final_item": 42, "stop_reason": "accepted"}
    question = {"round": 2, "item": 9}
    outcome = outcome_of(SESSION, 1, values, question, 3.0)
    assert outcome.status == "awaiting_feedback" and outcome.pending == question
    assert (outcome.final_item, outcome.final_reason, outcome.stop_reason) == (None, None, None)


def test_the_outcome_sums_the_llm_usage_of_its_rounds():
    values = {"loop_index": 1, "rounds": [_round(1, 1, tokens=10), _round(2, 1, tokens=5), _round(3, 1)]}
    usage = outcome_of(SESSION, 1, values, None, 1.0).usage
    assert (usage["calls"], usage["prompt_tokens"], usage["completion_tokens"]) == (2, 15, 2)
