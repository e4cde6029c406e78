"""The offline agents' decision rules on hand-made contexts: trust-weighted feedback, acceptance,
naming, the one-threshold user simulation, and reasons that name the evidence."""

from __future__ import annotations

import math

import pytest
import torch

from graph.agents.base import JudgeItemsContext, RecContext, UserContext
from graph.agents.evidence import (
    ItemVectors,
    LoopCalibration,
    MemoryView,
    calibrated_log_probs,
    trust_weighted,
)
from graph.agents.offline import OfflineRecAgent, OfflineUserAgent

CANDIDATES = [10, 11, 12, 13]
# The rec model prefers 10 strongly; the reward model prefers 12, then 11.
REC = [4.0, 1.0, 2.0, 0.0]
REWARD = [0.0, 2.0, 3.0, 1.0]
LEARNED = {"split": "val", "n_rows": 94}


def calibration(trust: float, **fields) -> LoopCalibration:
    return LoopCalibration(trust=trust, provenance=LEARNED, **fields)


def rec_context(**fields) -> RecContext:
    base = {
        "history": [1, 2, 3],
        "candidates": CANDIDATES,
        "rec_scores": REC,
        "prior_item": 10,
        "memory": [],
        "rejected_this_loop": [10],
        "last_preferred": [12, 11],
        "round": 2,
        "reward_scores": REWARD,
    }
    return RecContext(**(base | fields))


def combined(item: int, trust: float) -> float:
    i = CANDIDATES.index(item)
    return trust_weighted(calibrated_log_probs(REC, 1.0)[i], calibrated_log_probs(REWARD, 1.0)[i], trust)


async def test_the_prior_stands_unless_the_trusted_feedback_outweighs_it(ml_dataset) -> None:
    # The switch point: the trust at which the reward model's favourite (12) overtakes the prior (10).
    flips = [t / 100 for t in range(101) if combined(12, t / 100) > combined(10, t / 100)]
    assert flips and 0 < flips[0] < 1
    for trust, expected in ((0.0, 10), (flips[0] - 0.01, 10), (flips[0], 12), (1.0, 12)):
        proposal = await OfflineRecAgent(ml_dataset, calibration=calibration(trust)).propose(rec_context())
        assert proposal["item"] == expected, trust
        if expected == 10:  # argues again for the turned-down pick, and says why
            assert (
                "does not outweigh my prior" in proposal["reason"] and "My pick stands" in proposal["reason"]
            )
        else:
            assert "outweighs my prior" in proposal["reason"]
        assert f"learned on validation ({trust:.2f})" in proposal["reason"]
        assert "your reward model gives" in proposal["reason"] and "my sequential model" in proposal["reason"]


async def test_of_the_named_items_the_one_the_combined_evidence_favours(ml_dataset) -> None:
    # Only the named items are weighed (13 is never named here), best combined evidence first.
    agent = OfflineRecAgent(ml_dataset, calibration=calibration(0.9))
    assert (await agent.propose(rec_context(last_preferred=[11, 12])))["item"] == 12
    assert (await agent.propose(rec_context(last_preferred=[11])))["item"] == 11


async def test_a_pick_turned_down_twice_gives_way(ml_dataset) -> None:
    agent = OfflineRecAgent(ml_dataset, calibration=calibration(0.0))
    assert (await agent.propose(rec_context(rejected_this_loop=[10, 10])))["item"] == 12


async def test_without_the_reward_scores_the_feedback_is_followed_as_before(ml_dataset) -> None:
    # A context built without reward scores (older callers): the named item the rec model ranks highest.
    agent = OfflineRecAgent(ml_dataset, calibration=calibration(0.0))
    proposal = await agent.propose(rec_context(reward_scores=[]))
    assert proposal["item"] == 12 and "You said you would rather have" in proposal["reason"]


async def test_the_first_proposal_is_the_prior_with_its_calibrated_chance(ml_dataset) -> None:
    agent = OfflineRecAgent(ml_dataset, calibration=calibration(0.5, rec_temperature=2.0))
    proposal = await agent.propose(rec_context(rejected_this_loop=[], last_preferred=[], round=1))
    chance = math.exp(calibrated_log_probs(REC, 2.0)[0])
    assert proposal["item"] == 10
    assert "top pick" in proposal["reason"] and f"{100 * chance:.0f}% chance" in proposal["reason"]


async def test_decisions_are_deterministic(ml_dataset) -> None:
    ctx = rec_context()
    first = await OfflineRecAgent(ml_dataset, calibration=calibration(0.6)).propose(ctx)
    again = await OfflineRecAgent(ml_dataset, calibration=calibration(0.6)).propose(ctx)
    assert first == again


def user_context(item: int, **fields) -> UserContext:
    order = sorted(CANDIDATES, key=lambda c: -REWARD[CANDIDATES.index(c)])
    base = {
        "history": [1, 2, 3],
        "candidates": CANDIDATES,
        "item": item,
        "rec_reason": "because",
        "reward_score": REWARD[CANDIDATES.index(item)],
        "reward_rank": order.index(item) + 1,
        "top_picks": order[:2],
        "memory": [],
        "round": 1,
        "reward_scores": REWARD,
    }
    return UserContext(**(base | fields))


def user_agent(ml_dataset, **fields) -> OfflineUserAgent:
    return OfflineUserAgent(
        ml_dataset, accept_top_k=1, accept_share=0.25, calibration=calibration(0.5), **fields
    )


async def test_user_agent_accepts_its_favourite_and_names_only_better_items(ml_dataset) -> None:
    agent = user_agent(ml_dataset)
    assert (await agent.judge(user_context(12)))["decision"] == "accept"
    verdict = await agent.judge(user_context(11))  # 2nd: rejected, names only the one it prefers (12)
    assert verdict["decision"] == "reject" and verdict["preferred_items"] == [12]
    title = ml_dataset.title(12)
    assert (
        "reward model ranks" in verdict["reason"]
        and title in verdict["reason"]
        and "chance" in verdict["reason"]
    )
    # items turned down before (memory) or in this loop are never asked for again
    memory = [{"item": 12, "item_title": "", "rec_reason": "", "user_reason": "", "preferred_items": []}]
    assert (await agent.judge(user_context(10, memory=memory)))["preferred_items"] == [11]


async def test_user_agent_accepts_what_it_asked_for_and_a_kept_pick(ml_dataset) -> None:
    agent = user_agent(ml_dataset)
    asked = await agent.judge(user_context(11, asked_for_this_loop=[11, 12], round=2))
    assert asked["decision"] == "accept" and "one I asked for" in asked["reason"]
    kept = await agent.judge(user_context(10, rejected_this_loop=[10], round=2))
    assert kept["decision"] == "accept" and "weighed my objection" in kept["reason"]


def test_one_threshold_judges_each_item_on_its_own(ml_dataset) -> None:
    """User simulation: an item's verdict depends on its evidence and the one threshold, not on the
    list it sits in (so the same threshold serves 1:1, 1:3 and 1:9)."""
    agent = user_agent(ml_dataset)
    agent.calibration = calibration(0.5, verdict_threshold=-5.0)
    log_probs = {20: -2.0, 21: -4.9, 22: -5.1, 23: -9.0}

    def judge(items: list[int]) -> dict[int, bool]:
        ctx = JudgeItemsContext(
            [1, 2], items, [0.0] * len(items), reward_log_probs=[log_probs[i] for i in items]
        )
        return dict(zip(items, agent.judge_items(ctx), strict=True))

    assert judge([20, 21, 22, 23]) == {20: True, 21: True, 22: False, 23: False}
    assert judge([22, 21]) == {22: False, 21: True}
    assert judge([23]) == {23: False}


def test_memory_changes_verdicts_on_similar_items_only_with_its_weight(ml_dataset) -> None:
    source = torch.eye(30)
    source[21] = (
        torch.eye(30)[5] + torch.eye(30)[21]
    )  # item 21 is like item 5 (rows are normalised when read)
    vectors = ItemVectors("test", source)
    items = [21, 22]
    ctx = JudgeItemsContext([1, 2], items, [0.0, 0.0], reward_log_probs=[-5.2, -5.2], accepted=[5])
    no_memory = JudgeItemsContext([1, 2], items, [0.0, 0.0], reward_log_probs=[-5.2, -5.2])
    for weight, expected in ((0.0, [False, False]), (1.0, [True, False])):
        agent = user_agent(ml_dataset, vectors=vectors)
        agent.calibration = calibration(
            0.5, verdict_threshold=-5.0, user_liked_weight=weight, user_similarity="test"
        )
        assert agent.judge_items(ctx) == expected
        assert agent.judge_items(no_memory) == [False, False]  # Agent: the same agent, empty memory


def test_memory_view_keeps_what_was_accepted_in_the_end() -> None:
    memory = [{"item": 5, "item_title": "", "rec_reason": "", "user_reason": "", "preferred_items": [6, 7]}]
    view = MemoryView.of(memory, accepted=[5])
    assert view.liked == (5, 6, 7) and view.turned_down == ()
    assert MemoryView.of(memory).liked == (6, 7) and MemoryView.of(memory).turned_down == (5,)


@pytest.mark.parametrize("temperature", [0.5, 1.0, 3.0])
def test_calibrated_log_probs_are_a_distribution(temperature: float) -> None:
    probs = [math.exp(v) for v in calibrated_log_probs(REC, temperature)]
    assert sum(probs) == pytest.approx(1.0) and probs.index(max(probs)) == 0


async def test_history_similarity_can_move_the_first_proposal_and_the_reason_says_so(ml_dataset) -> None:
    vectors = torch.eye(40)
    vectors[13] = vectors[3] + 0.1 * vectors[13]  # candidate 13 is almost history item 3
    items = ItemVectors("text", vectors)
    ctx = rec_context(rejected_this_loop=[], last_preferred=[], round=1)
    plain = OfflineRecAgent(ml_dataset, calibration=calibration(0.5), vectors=items)
    assert (await plain.propose(ctx))["item"] == 10  # weight 0: the sequential model's pick
    agent = OfflineRecAgent(ml_dataset, calibration=calibration(0.5, rec_history_weight=16.0), vectors=items)
    proposal = await agent.propose(ctx)
    assert proposal["item"] == 13
    assert "closer to your history" in proposal["reason"] and ml_dataset.title(10) in proposal["reason"]
    assert f"most like {ml_dataset.title(3)!r}"[:20] in proposal["reason"].replace('"', "'")
    assert "title and genres" in proposal["reason"]
