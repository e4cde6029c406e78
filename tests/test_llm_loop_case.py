"""The user weight is fitted on what the loop gains, not on how many verdicts are right."""

from __future__ import annotations

from lab.calibration.llm import CombinedVerdict, LoopCase, _fit_user


def case(
    target: int, first: int, offline: str, llm: str | None, second: int, on_target: CombinedVerdict | None
):
    verdicts = {named: on_target for named in (True, False) if on_target is not None}
    return LoopCase(
        target, first, CombinedVerdict(offline, 0.5, llm), {True: second, False: second}, verdicts
    )


def test_a_rejected_target_is_a_lost_hit_and_a_rejected_miss_gains_only_if_round_two_finds_it():
    lost = case(target=1, first=1, offline="accept", llm="reject", second=2, on_target=None)
    assert lost.hit(0.0) and not lost.hit(1.0)
    found = case(
        target=3,
        first=2,
        offline="accept",
        llm="reject",
        second=3,
        on_target=CombinedVerdict("accept", 2.0, "accept"),
    )
    assert not found.hit(0.0) and found.hit(1.0)
    missed_again = case(target=3, first=2, offline="accept", llm="reject", second=4, on_target=None)
    assert not missed_again.hit(0.0) and not missed_again.hit(1.0)
    # weight below the reward model's margin: the offline verdict stands
    assert lost.hit(0.25)


def test_more_right_verdicts_do_not_earn_a_weight_that_loses_hits():
    # the LLM rejects 8 wrong first picks (right verdicts) whose next round misses too, and one true
    # first pick (a wrong verdict): its balanced accuracy gains, the loop loses one hit
    cases = [case(9, k, "accept", "reject", 100 + k, None) for k in range(8)]
    cases += [case(1, 1, "accept", "reject", 2, None)] + [case(5, 5, "accept", "accept", 6, None)] * 3
    verdicts = [(r, "accept", 0.5, c.first_verdict.llm, c.first == c.target) for r, c in enumerate(cases)]
    right = [
        sum((CombinedVerdict(off, m, llm).at(w) == "accept") == truth for _, off, m, llm, truth in verdicts)
        for w in (0.0, 1.0)
    ]
    assert right[1] > right[0]  # the LLM's word makes more verdicts right...
    weight, report = _fit_user(verdicts, cases)
    assert report["curve"]["1"] < report["curve"]["0"]  # ...and loses a hit of the loop
    assert weight == 0.0 and report["objective"] == "loop_hr1"
