"""The feedback loop with offline agents on real (tiny) trained models."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from app.settings import Settings
from graph.builder import NODE_NAMES, build_graph
from graph.context import LoopDeps
from graph.nodes import HumanFeedbackError, LoopInputError, route_after_memory_update
from graph.runner import LoopRunner, judge_items, loop_config, recursion_limit_for, run_loop
from lab.calibration.deps import calibrated_deps
from recmodels.candidates import sample_candidates


@pytest.fixture(autouse=True)
def _data_dir(session_data_dir: Path) -> None:
    """Settings built here keep their files (text item vectors) under the session's data dir."""
    DATA_DIR[0] = session_data_dir


DATA_DIR: list[Path] = [Path("unset")]


async def offline_deps(ml_dataset, ml_scorers, **settings_fields) -> LoopDeps:
    settings = Settings(_env_file=None, data_dir=DATA_DIR[0], **settings_fields)
    return await calibrated_deps(
        settings.loop_config(), ml_dataset, ml_scorers["gru4rec"], ml_scorers["sasrec"], "offline"
    )


def own_pick(deps: LoopDeps, history: list[int], candidates: list[int]) -> int:
    """The offline recommendation agent's first proposal: the best candidate by its belief (the rec
    model, plus weighted history similarity when validation chose it)."""
    from graph.calibration import combined_scores

    lr = deps.rec_scorer.catalog_log_probs([history])
    lu = deps.reward_scorer.catalog_log_probs([history])
    vectors = deps.rec_vectors
    similarity = vectors.history_similarity_all([history]) if vectors is not None else None
    belief = combined_scores(deps.calibration, lr, lu, similarity)["agent"][0]
    return max(candidates, key=lambda c: (float(belief[c]), -candidates.index(c)))


def sample_rows(ml_dataset, n: int = 40, seed: int = 0) -> list[tuple[list[int], list[int]]]:
    """(history, 20 LLaRA candidates) for the first test rows."""
    rng = random.Random(seed)
    rows, _ = ml_dataset.eval_rows("test")
    return [
        (list(r.history), sample_candidates(list(r.history), r.next, ml_dataset.n_items, rng))
        for r in rows[:n]
    ]


def find_row(deps: LoopDeps, ml_dataset, wanted) -> tuple[list[int], list[int]]:
    """The first test row whose candidates satisfy ``wanted(rec_order, reward_order)``."""
    for history, candidates in sample_rows(ml_dataset):
        rec = deps.rec_scorer.rank(history, candidates)
        reward = deps.reward_scorer.rank(history, candidates)
        if wanted(rec, reward):
            return history, candidates
    pytest.fail("no test row has the ranking this test needs")


def test_graph_has_the_four_nodes():
    graph = build_graph().compile()
    assert set(NODE_NAMES) <= set(graph.nodes)
    assert set(graph.nodes) - set(NODE_NAMES) == {"__start__"}


async def test_loops_terminate_within_the_limit_and_only_propose_candidates(ml_dataset, ml_scorers):
    deps = await offline_deps(ml_dataset, ml_scorers)
    stops = set()
    for history, candidates in sample_rows(ml_dataset, n=25):
        result = await run_loop(deps, history, candidates, max_rounds=4)
        assert 1 <= result.n_rounds <= 4
        assert all(r["item"] in candidates for r in result.rounds)
        assert result.final_item in candidates
        assert [r["round"] for r in result.rounds] == list(range(1, result.n_rounds + 1))
        rejected = [r for r in result.rounds if r["decision"] == "reject"]
        assert len(result.rec_memory) == len(result.user_memory) == len(rejected)
        assert [m["item"] for m in result.user_memory] == [r["item"] for r in rejected]
        if result.stop_reason == "accepted":
            assert result.rounds[-1]["decision"] == "accept"
            assert result.final_item == result.rounds[-1]["item"]
        else:
            assert result.stop_reason == "max_rounds" and result.n_rounds == 4
        # the user agent accepts its reward model's favourite, an item it asked for, or a kept pick
        for k, r in enumerate(result.rounds):
            asked = {i for p in result.rounds[:k] for i in p["preferred_items"]}
            earlier = {p["item"] for p in result.rounds[:k]}
            accepts = r["reward_rank"] == 1 or r["item"] in asked or r["item"] in earlier
            assert (r["decision"] == "accept") == accepts
        assert result.rounds[0]["item"] == own_pick(deps, history, candidates)
        assert result.n_rounds <= 2  # the feedback is weighed once: take a named item or keep the pick
        stops.add(result.stop_reason)
    assert stops == {"accepted"}


async def test_rejection_names_preferences_and_the_next_proposal_weighs_them(ml_dataset, ml_scorers):
    deps = await offline_deps(ml_dataset, ml_scorers, accept_top_k=3)
    history, candidates = find_row(deps, ml_dataset, lambda rec, reward: reward.index(rec[0]) >= 5)
    result = await run_loop(deps, history, candidates, max_rounds=4)
    first, second = result.rounds[0], result.rounds[1]
    assert first["decision"] == "reject" and first["preferred_items"]
    reward_order = deps.reward_scorer.rank(history, candidates)
    assert set(first["preferred_items"]) <= set(reward_order[:5])
    # better than the proposal by the reward model, best first
    assert first["preferred_items"] == sorted(first["preferred_items"], key=reward_order.index)
    assert all(reward_order.index(i) < reward_order.index(first["item"]) for i in first["preferred_items"])
    # the next proposal is a named item or the kept pick, whichever the trust-weighted evidence favours
    assert second["item"] in [*first["preferred_items"], first["item"]] and second["decision"] == "accept"
    assert "learned on validation" in second["rec_reason"]
    assert ml_dataset.title(first["item"]) in first["user_reason"]


async def test_round_limit_stops_with_max_rounds(ml_dataset, ml_scorers):
    # Score display gives the recommendation agent no named items: it walks down its own ranking,
    # and with accept_top_k=1 only the reward model's favourite is accepted.
    deps = await offline_deps(ml_dataset, ml_scorers, accept_top_k=1, reward_display="score")
    history, candidates = find_row(deps, ml_dataset, lambda rec, reward: rec.index(reward[0]) >= 3)
    result = await run_loop(deps, history, candidates, max_rounds=3)
    assert result.stop_reason == "max_rounds"
    assert result.n_rounds == 3 and all(r["decision"] == "reject" for r in result.rounds)
    assert result.final_item == result.rounds[-1]["item"]
    assert len({r["item"] for r in result.rounds}) == 3  # never proposes a rejected item again
    assert len(result.rec_memory) == 3


async def test_a_new_input_on_a_thread_starts_a_new_loop_and_keeps_memory(ml_dataset, ml_scorers):
    deps = await offline_deps(ml_dataset, ml_scorers, accept_top_k=1, reward_display="score")
    history, candidates = find_row(deps, ml_dataset, lambda rec, reward: rec.index(reward[0]) >= 2)
    runner = LoopRunner(InMemorySaver())
    first = await runner.run(deps, history, candidates, max_rounds=2, thread_id="t1")
    second = await runner.run(deps, history, candidates, max_rounds=2, thread_id="t1")
    assert first.loop_index == 1 and second.loop_index == 2
    assert [r["round"] for r in second.rounds] == list(range(1, second.n_rounds + 1))
    assert all(r["loop_index"] == 2 for r in second.rounds)
    # memory persists across loops, and the agent does not re-propose what was turned down before
    assert second.rec_memory[: len(first.rec_memory)] == first.rec_memory
    assert not {r["item"] for r in second.rounds} & {m["item"] for m in first.rec_memory}


async def test_human_judge_interrupts_and_resumes(ml_dataset, ml_scorers):
    deps = await offline_deps(ml_dataset, ml_scorers)
    graph = build_graph().compile(checkpointer=InMemorySaver())
    history, candidates = sample_rows(ml_dataset, n=1)[0]
    config = loop_config("human-1", 3)
    payload = {"history": history, "candidates": candidates, "max_rounds": 3, "judge_mode": "human"}
    out = await graph.ainvoke(payload, config, context=deps)
    (pending,) = out["__interrupt__"]
    assert pending.value["item"] in candidates and pending.value["round"] == 1
    assert pending.value["item_title"] == ml_dataset.title(pending.value["item"])
    out = await graph.ainvoke(
        Command(resume={"decision": "reject", "reason": "seen it"}), config, context=deps
    )
    assert out["__interrupt__"][0].value["round"] == 2
    out = await graph.ainvoke(
        Command(resume={"decision": "accept", "reason": "yes please"}), config, context=deps
    )
    assert out["stop_reason"] == "accepted"
    assert [r["user_reason"] for r in out["rounds"]] == ["seen it", "yes please"]
    assert out["user_memory"][0]["user_reason"] == "seen it"


async def test_human_judge_rejects_a_malformed_answer(ml_dataset, ml_scorers):
    deps = await offline_deps(ml_dataset, ml_scorers)
    graph = build_graph().compile(checkpointer=InMemorySaver())
    history, candidates = sample_rows(ml_dataset, n=1)[0]
    config = loop_config("human-2", 2)
    await graph.ainvoke(
        {"history": history, "candidates": candidates, "judge_mode": "human"}, config, context=deps
    )
    with pytest.raises(HumanFeedbackError, match="decision"):
        await graph.ainvoke(Command(resume={"decision": "maybe", "reason": "hm"}), config, context=deps)


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"history": [1, 2], "candidates": []}, "candidates"),
        ({"history": [1, 2], "candidates": [3, 3]}, "candidates"),
        ({"history": [1, 99999], "candidates": [3, 4]}, "history[1]"),
        ({"history": [1, 2], "candidates": [3, -1]}, "candidates[1]"),
        ({"history": [1, 2], "candidates": [3, 4], "max_rounds": 0}, "max_rounds"),
    ],
)
async def test_bad_input_names_the_field(ml_dataset, ml_scorers, payload, field):
    deps = await offline_deps(ml_dataset, ml_scorers)
    with pytest.raises(LoopInputError) as err:
        await build_graph().compile().ainvoke(payload, context=deps)
    assert err.value.field == field


def test_routing_is_pure_and_explicit():
    base = {"max_rounds": 2, "rounds": [{"decision": "reject", "round": 1}]}
    assert route_after_memory_update(base) == "recommend"
    assert route_after_memory_update({**base, "rounds": [{"decision": "accept", "round": 1}]}) == "__end__"
    assert route_after_memory_update({**base, "rounds": [{"decision": "reject", "round": 2}]}) == "__end__"
    with pytest.raises(RuntimeError):
        route_after_memory_update({"max_rounds": 2, "rounds": []})


async def test_long_round_limits_fit_the_recursion_limit(ml_dataset, ml_scorers):
    deps = await offline_deps(ml_dataset, ml_scorers, accept_top_k=1, reward_display="score")
    history, candidates = find_row(deps, ml_dataset, lambda rec, reward: rec.index(reward[0]) >= 8)
    result = await run_loop(deps, history, candidates, max_rounds=8)  # 32 steps > LangGraph's default 25
    assert result.n_rounds == 8 and result.stop_reason == "max_rounds"
    assert recursion_limit_for(8) > 32


async def test_ablation_knobs_change_what_the_agents_use(ml_dataset, ml_scorers):
    settings = Settings(_env_file=None, data_dir=DATA_DIR[0])
    rec, reward = ml_scorers["gru4rec"], ml_scorers["sasrec"]
    no_prior = await calibrated_deps(
        settings.loop_config(), ml_dataset, rec, reward, "offline", rec_prior=False
    )
    no_reward = await calibrated_deps(
        settings.loop_config(), ml_dataset, rec, reward, "offline", user_reward=False
    )
    firsts_differ = False
    for history, candidates in sample_rows(ml_dataset, n=10):
        a = await run_loop(no_prior, history, candidates, max_rounds=1)
        firsts_differ |= a.rounds[0]["item"] != a.prior_item
        b = await run_loop(no_reward, history, candidates, max_rounds=1)
        assert "reward model" not in b.rounds[0]["user_reason"]
    assert firsts_differ


async def test_judge_items_uses_the_learned_threshold_and_memory(ml_dataset, ml_scorers):
    deps = await offline_deps(ml_dataset, ml_scorers)
    cal = deps.calibration
    assert cal.learned and cal.verdict_threshold is not None
    history, candidates = sample_rows(ml_dataset, n=1)[0]
    liked = await judge_items(deps, history, candidates)
    # with an empty memory: evidence (reward log-probability + history similarity) >= the threshold
    from graph.agents.evidence import MemoryView, VerdictFeatures
    from graph.item_vectors import load_vectors

    vectors = load_vectors(cal.user_similarity, deps.config, ml_dataset, deps.reward_scorer)
    log_probs = deps.reward_scorer.log_probs(history, candidates)
    features = VerdictFeatures.of(log_probs, candidates, history, MemoryView((), ()), vectors)
    evidence = features.evidence(*cal.verdict_weights())
    assert liked == [e >= cal.verdict_threshold for e in evidence]
    # with a memory: the same evidence plus the learned memory weights, against the same threshold
    best = candidates[max(range(len(candidates)), key=evidence.__getitem__)]
    memory = [{"item": best, "item_title": "", "rec_reason": "", "user_reason": "no", "preferred_items": []}]
    view = MemoryView.of(memory)
    remembered = VerdictFeatures.of(log_probs, candidates, history, view, vectors)
    after = await judge_items(deps, history, candidates, memory)
    assert after == [e >= cal.verdict_threshold for e in remembered.evidence(*cal.verdict_weights())]


def test_memory_keeps_only_the_newest_window():
    from graph.state import MEMORY_WINDOW, remember

    old = [{"item": i, "item_title": "", "rec_reason": "", "user_reason": ""} for i in range(MEMORY_WINDOW)]
    new = [{"item": -1, "item_title": "", "rec_reason": "", "user_reason": ""}]
    kept = remember(old, new)
    assert len(kept) == MEMORY_WINDOW
    assert kept[0]["item"] == 1 and kept[-1]["item"] == -1
    assert remember([], new) == new
