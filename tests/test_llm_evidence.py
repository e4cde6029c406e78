"""The LLM's answers as weighed evidence: weight 0 is the offline loop, fitted weights follow the
LLM's skill (known-skill server over real HTTP through ChatOpenAI), reasons stay faithful."""

from __future__ import annotations

import math
import random
from pathlib import Path

import pytest
from fake_openai import Reply
from known_skill import KnownSkill, known_skill_server, tell_cases, tell_next, tell_rows

from app.settings import Settings
from graph.agents.base import RecContext
from graph.agents.llm_evidence import LLMWeights, combine, verdict_margin
from graph.context import LoopDeps
from graph.runner import LoopRunner, assess_items
from lab.calibration.deps import calibrated_deps
from lab.calibration.llm import AnswerLog, fit_llm_weights, val_rows
from recmodels.candidates import sample_candidates

N_VAL = 36
N_TEST = 36
MAX_ROUNDS = 4


def settings_for(data_dir: Path, base_url: str, **fields) -> Settings:
    return Settings(
        _env_file=None,
        data_dir=data_dir,
        llm_base_url=base_url,
        llm_timeout_s=fields.pop("llm_timeout_s", 5.0),
        llm_max_retries=fields.pop("llm_max_retries", 1),
        **fields,
    )


async def deps_for(
    ml_dataset, ml_scorers, settings: Settings, agents: str, weights: LLMWeights | None
) -> LoopDeps:
    return await calibrated_deps(
        settings.loop_config(),
        ml_dataset,
        ml_scorers["gru4rec"],
        ml_scorers["sasrec"],
        agents,
        llm_weights=weights,
    )


def sampled_test_rows(ml_dataset, n: int = N_TEST) -> list[tuple[list[int], list[int], int]]:
    rows, _ = ml_dataset.eval_rows("test")
    out = []
    for index, row in enumerate(rows[:n]):
        rng = random.Random(1000 + index)
        out.append(
            (
                list(row.history),
                sample_candidates(row.history, row.next, ml_dataset.n_items, rng, n=20),
                row.next,
            )
        )
    return out


async def loops(deps: LoopDeps, rows) -> list:
    runner = LoopRunner()
    return [await runner.run(deps, h, c, MAX_ROUNDS) for h, c, _ in rows]


def hr1(results, rows) -> float:
    return sum(r.final_item == t for r, (_, _, t) in zip(results, rows, strict=True)) / len(rows)


# --------------------------------------------------------------------------- the combination


def test_combination_rules():
    assert not combine(0.0, 0.0, agree=False).llm_wins  # weight 0 never wins, even at a zero margin
    assert not combine(-1.0, 0.0, agree=False).llm_wins
    assert combine(0.3, 0.5, agree=False).llm_wins and not combine(0.5, 0.5, agree=False).llm_wins
    assert not combine(0.0, 9.0, agree=True).llm_wins
    assert combine(math.inf, math.inf, agree=False).llm_wins is False  # not comparable: offline stands
    # the reward model's accept boundary lies between its 1st and 2nd best
    assert verdict_margin([-1.0, -2.0, -4.0], 0, 1) == pytest.approx(0.5)
    assert verdict_margin([-1.0, -2.0, -4.0], 2, 1) == pytest.approx(2.5)
    assert verdict_margin([], 0, 1) == 0.0


async def test_weight_zero_is_exactly_the_offline_loop_without_calls(
    ml_dataset, ml_scorers, session_data_dir
):
    skill = KnownSkill(p=1.0)
    rows = sampled_test_rows(ml_dataset, 12)
    with known_skill_server(skill) as server:
        settings = settings_for(session_data_dir, server.base_url)
        offline = await deps_for(ml_dataset, ml_scorers, settings, "offline", None)
        ignored = await deps_for(ml_dataset, ml_scorers, settings, "llm", LLMWeights.ignore())
        a, b = await loops(offline, rows), await loops(ignored, rows)
        assert not server.requests  # weight 0: the LLM is not even asked
    for x, y in zip(a, b, strict=True):
        assert [(r["item"], r["decision"], r["rec_reason"], r["user_reason"]) for r in x.rounds] == [
            (r["item"], r["decision"], r["rec_reason"], r["user_reason"]) for r in y.rounds
        ]
        assert x.final_item == y.final_item


async def offline_round_one(ml_dataset, ml_scorers, settings: Settings):
    """A test row, the offline loop's first round on it, and the offline pick's margin over every
    other candidate under the offline evidence (nats)."""
    history, candidates, _ = sampled_test_rows(ml_dataset, 1)[0]
    offline = await deps_for(ml_dataset, ml_scorers, settings, "offline", None)
    first = (await LoopRunner().run(offline, history, candidates, 1)).rounds[0]
    rec_scores = offline.rec_scorer.score(list(history), list(candidates))
    ctx = RecContext(
        history=list(history),
        candidates=list(candidates),
        rec_scores=rec_scores,
        prior_item=candidates[max(range(len(candidates)), key=lambda i: (rec_scores[i], -i))],
        memory=[],
        rejected_this_loop=[],
        last_preferred=[],
        round=1,
        reward_scores=offline.reward_scorer.score(list(history), list(candidates)),
    )
    evidence = offline.rec_agent.evidence(ctx)  # the offline agent itself
    assert max(evidence, key=evidence.get) == first["item"]
    margins = {c: evidence[first["item"]] - evidence[c] for c in candidates if c != first["item"]}
    return history, candidates, first, margins


async def test_overridden_llm_pick_keeps_the_offline_reason_and_names_the_evidence(
    ml_dataset, ml_scorers, session_data_dir, fake_openai
):
    settings = settings_for(session_data_dir, fake_openai.base_url)
    history, candidates, mine, margins = await offline_round_one(ml_dataset, ml_scorers, settings)
    other = max(margins, key=margins.get)  # the LLM names the candidate the evidence likes least
    weight = (min(margins.values()) + margins[other]) / 2  # some pick could win, this one cannot
    small = LLMWeights(rec_weight=weight, user_weight=1e-6, items_weight=1e-6, provenance={"n_rows": 1})
    deps = await deps_for(ml_dataset, ml_scorers, settings, "llm", small)
    fake_openai.enqueue(
        Reply.json({"thoughts": "x", "item_id": other, "reason": "ARGUMENT FOR THE OTHER ITEM."}),
        Reply.json({"thoughts": "x", "decision": "accept", "reason": "Fine by me."}),
    )
    result = await LoopRunner().run(deps, history, candidates, 1)
    first = result.rounds[0]
    assert first["item"] == mine["item"]  # the offline evidence outweighs the LLM's pick
    assert "ARGUMENT FOR THE OTHER ITEM" not in first["rec_reason"]
    assert first["rec_reason"].startswith(mine["rec_reason"])
    assert ml_dataset.title(other) in first["rec_reason"] and "does not outweigh" in first["rec_reason"]
    assert first["llm_evidence"]["rec"]["decided_by"] == "offline" and first["llm_evidence"]["rec"]["asked"]
    assert (
        first["llm_evidence"]["rec"]["llm"] == other
        and first["llm_evidence"]["rec"]["offline"] == mine["item"]
    )
    assert "fitted on 1 validation rows" in first["llm_evidence"]["rec"]["weights"]


async def test_no_call_when_no_answer_could_outweigh_the_offline_evidence(
    ml_dataset, ml_scorers, session_data_dir, fake_openai
):
    settings = settings_for(session_data_dir, fake_openai.base_url)
    history, candidates, expected, margins = await offline_round_one(ml_dataset, ml_scorers, settings)
    least = min(margins.values())
    assert least > 0
    # at a weight equal to the smallest margin no pick can win (it must exceed the margin), and
    # the reward model is further than a near-zero weight from its accept boundary
    at_least = LLMWeights(rec_weight=least, user_weight=1e-9, items_weight=1e-9, provenance={"n_rows": 1})
    deps = await deps_for(ml_dataset, ml_scorers, settings, "llm", at_least)
    first = (await LoopRunner().run(deps, history, candidates, 1)).rounds[0]
    assert not fake_openai.requests  # neither agent asked: the answer could not change the outcome
    assert (first["item"], first["decision"], first["rec_reason"]) == (
        expected["item"],
        expected["decision"],
        expected["rec_reason"],
    )
    rec, user = first["llm_evidence"]["rec"], first["llm_evidence"]["user"]
    assert (rec["asked"], rec["llm"], rec["decided_by"]) == (False, None, "offline")
    assert rec["margin"] == pytest.approx(least, abs=1e-4) and rec["weight"] == least
    assert user["asked"] is False and user["margin"] >= 1e-9
    # just above the smallest margin, the runner-up could win: the LLM is asked again
    asking = await deps_for(
        ml_dataset,
        ml_scorers,
        settings,
        "llm",
        LLMWeights(rec_weight=least + 1e-6, user_weight=1e-9, items_weight=1e-9, provenance={"n_rows": 1}),
    )
    await LoopRunner().run(asking, history, candidates, 1)
    assert len(fake_openai.requests) >= 1


async def test_default_weights_when_none_fitted_are_reported(
    ml_dataset, ml_scorers, session_data_dir, fake_openai, caplog
):
    settings = settings_for(session_data_dir, fake_openai.base_url, llm_model="never-fitted-model")
    deps = await deps_for(ml_dataset, ml_scorers, settings, "llm", None)
    assert deps.llm_weights == LLMWeights() and not deps.llm_weights.learned
    assert "not fitted for this endpoint" in deps.llm_weights.status
    assert any("not fitted for this endpoint" in r.getMessage() for r in caplog.records)
    history, candidates, _ = sampled_test_rows(ml_dataset, 1)[0]
    result = await LoopRunner().run(deps, history, candidates, 1)
    assert "conservative default" in result.rounds[0]["llm_evidence"]["rec"]["weights"]


# --------------------------------------------------------------------------- the known-skill LLM


async def fit_and_run(ml_dataset, ml_scorers, data_dir: Path, p: float, *, items: bool = False):
    skill = KnownSkill(p=p, seed=7)
    with known_skill_server(skill) as server:
        settings = settings_for(data_dir, server.base_url, max_rounds=MAX_ROUNDS)
        rec, reward = ml_scorers["gru4rec"], ml_scorers["sasrec"]
        validation = val_rows(ml_dataset, rec, reward, N_VAL, 20)
        tell_rows(skill, ml_dataset, [v.row for v in validation])
        if items:
            from graph.usersim import RATIOS, cases_from_rows

            tell_cases(
                skill,
                ml_dataset,
                cases_from_rows([v.row for v in validation], ml_dataset.n_items, RATIOS, 0, 20, 20),
            )
        asking = await deps_for(ml_dataset, ml_scorers, settings, "llm", LLMWeights())
        weights = await fit_llm_weights(asking, validation, AnswerLog.open(None), items=items)
        rows = sampled_test_rows(ml_dataset)
        for history, _, target in rows:
            tell_next(skill, ml_dataset, history, target)
        deps = await deps_for(ml_dataset, ml_scorers, settings, "llm", weights)
        results = await loops(deps, rows)
        assert not any(r["rec_fallback"] or r["user_fallback"] for x in results for r in x.rounds)
    return weights, hr1(results, rows), deps


@pytest.fixture(scope="module")
def offline_hr1(ml_dataset, ml_scorers, session_data_dir):
    import asyncio

    async def run() -> float:
        settings = Settings(_env_file=None, data_dir=session_data_dir, max_rounds=MAX_ROUNDS)
        deps = await deps_for(ml_dataset, ml_scorers, settings, "offline", None)
        rows = sampled_test_rows(ml_dataset)
        return hr1(await loops(deps, rows), rows)

    return asyncio.run(run())


async def test_known_skill_fitted_weights_follow_the_llms_skill(
    ml_dataset, ml_scorers, session_data_dir, offline_hr1
):
    by_p = {}
    for p in (0.0, 0.4, 0.8):
        weights, hr, _ = await fit_and_run(ml_dataset, ml_scorers, session_data_dir, p)
        by_p[p] = (weights, hr)
    useless, _ = by_p[0.0]
    assert useless.rec_weight == 0.0 and useless.user_weight == 0.0
    assert abs(by_p[0.0][1] - offline_hr1) <= 0.01
    skilled, skilled_hr = by_p[0.8]
    assert skilled.rec_weight >= 2.0 and skilled.user_weight >= 1.0
    assert skilled_hr >= 0.7
    assert by_p[0.0][1] < by_p[0.4][1] < by_p[0.8][1]
    report = skilled.provenance["forms"]["pick"]
    assert report["first_attempt_valid_rate"] == 1.0 and report["llm_hit_rate"] >= 0.6


async def test_known_skill_items_weight(ml_dataset, ml_scorers, session_data_dir):
    from graph.usersim import RATIOS, cases_from_rows

    for p in (0.0, 0.8):
        weights, _, deps = await fit_and_run(ml_dataset, ml_scorers, session_data_dir, p, items=True)
        if p == 0.0:
            assert weights.items_weight == 0.0
        else:
            assert weights.items_weight > 0
            assert (
                weights.provenance["items"]["val_mean_f1"]
                > weights.provenance["items"]["val_mean_f1_offline"]
            )
    # the weighed likes, through the loop's own judge_items entry point (offline threshold + LLM)
    skill = KnownSkill(p=0.8, seed=3)
    rows, _ = ml_dataset.eval_rows("test")
    case = cases_from_rows(rows[:5], ml_dataset.n_items, RATIOS, 0, 20, 20)[0]
    tell_cases(skill, ml_dataset, [case])
    with known_skill_server(skill) as server:
        settings = settings_for(session_data_dir, server.base_url)
        obey = await deps_for(ml_dataset, ml_scorers, settings, "llm", LLMWeights.obey())
        listed = case.eval_lists[1]
        verdict = await assess_items(obey, case.init_history, listed.items)
        assert len(verdict.likes) == len(listed.items) and verdict.usage["calls"] >= 1
        assert verdict.evidence is not None and verdict.evidence["weight"] is None  # inf: obey
