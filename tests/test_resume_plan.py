"""How a loop whose worker stopped goes on (app/services/resume.py ``plan``): pure, no database."""

from __future__ import annotations

from typing import Any

from app.services.resume import NOT_RESUMABLE, Plan, plan
from graph.runner import GRAPH_MARK, LOOP_MARK, ResumePoint

GRAPH = "g1"


def _point(metadata: dict[str, Any], *, waiting: bool = False, next_: tuple[str, ...] = ("recommend",)):
    return ResumePoint(
        values={"rounds": []},
        next=list(next_),
        step=9,
        checkpoint_id="cp-9",
        metadata={"step": 9, **metadata},
        waiting=waiting,
    )


def _plan(point: ResumePoint, *, loop_index: int = 3, served: bool = True) -> Plan:
    return plan(point, loop_index=loop_index, graph_id=GRAPH, agents_served=served, agents="llm")


def test_a_checkpoint_of_the_loop_by_the_same_graph_is_continued_from_its_step():
    chosen = _plan(_point({LOOP_MARK: 3, GRAPH_MARK: GRAPH}))
    assert chosen == Plan("continue")
    note = chosen.resumed_from(_point({LOOP_MARK: 3, GRAPH_MARK: GRAPH}))
    assert {k: note[k] for k in ("step", "next", "checkpoint_id")} == {
        "step": 9,
        "next": ["recommend"],
        "checkpoint_id": "cp-9",
    }


def test_a_question_still_waiting_means_the_judgement_never_committed():
    chosen = _plan(_point({LOOP_MARK: 3, GRAPH_MARK: GRAPH}, waiting=True, next_=("judge",)))
    assert chosen.action == "continue" and chosen.unanswered_judgement


def test_a_loop_with_no_checkpoint_of_its_own_starts_again_from_its_input():
    for metadata in ({LOOP_MARK: 2, GRAPH_MARK: GRAPH}, {}):  # the previous loop's, or an empty thread
        chosen = _plan(_point(metadata))
        assert chosen == Plan("restart")
        note = chosen.resumed_from(_point(metadata))
        assert (note["step"], note["next"], note["checkpoint_id"]) == (None, ["recommend"], None)


def test_a_judgements_run_with_no_checkpoint_of_its_loop_asks_for_the_judgement_again():
    chosen = plan(
        _point({}), loop_index=3, graph_id=GRAPH, agents_served=True, agents="offline", paused_before=True
    )
    assert chosen == Plan("restart", unanswered_judgement=True)


def test_a_checkpoint_from_another_graph_fails_the_loop_naming_both_graphs():
    chosen = _plan(_point({LOOP_MARK: 3, GRAPH_MARK: "g0"}))
    assert chosen.action == "fail" and chosen.resumed_from(_point({})) is None
    assert chosen.cause == (
        f"{NOT_RESUMABLE} its checkpoint was written by another graph (g0, this one is g1): the code "
        "changed incompatibly while it ran"
    )


def test_agents_not_served_any_more_fail_the_loop_with_that_cause():
    chosen = _plan(_point({LOOP_MARK: 3, GRAPH_MARK: GRAPH}), served=False)
    assert chosen == Plan("fail", f"{NOT_RESUMABLE} its agents 'llm' are not served here any more")


def test_a_checkpoint_of_a_later_loop_fails_the_loop():
    chosen = _plan(_point({LOOP_MARK: 4, GRAPH_MARK: GRAPH}))
    assert chosen == Plan("fail", f"{NOT_RESUMABLE} the thread's last checkpoint is of a later loop (4)")
