"""Steering composes with the feedback loop: the loop works on the steered candidates and every
proposal it makes satisfies the hard constraints."""

from __future__ import annotations

import asyncio

import pytest

from app.settings import Settings
from graph.runner import default_candidates, run_loop
from lab.calibration.deps import calibrated_deps
from steering.planner import hard_violations, steer_candidates
from steering.preferences import Preferences, consolidate
from steering.rule_parser import OfflineParser


@pytest.fixture(scope="module")
def deps(ml_dataset, ml_scorers, session_data_dir):
    settings = Settings(_env_file=None, data_dir=session_data_dir, max_rounds=4)
    return asyncio.run(
        calibrated_deps(
            settings.loop_config(), ml_dataset, ml_scorers["sasrec"], ml_scorers["gru4rec"], "offline"
        )
    )


async def test_the_loop_runs_on_steered_candidates_and_never_breaks_a_constraint(deps, ml_dataset):
    parser = OfflineParser(ml_dataset)
    memory = Preferences()
    for command in ("no drama", "only comedies from the 90s"):
        memory = consolidate(memory, (await parser.parse(command, memory=memory)).update)
    rows, _ = ml_dataset.eval_rows("test")
    for row in rows[:5]:
        history = list(row.history)
        candidates = steer_candidates(memory, history, deps.rec_scorer, ml_dataset, k=20)
        assert len(candidates) == 20
        result = await run_loop(deps, history, candidates, preferences=memory.model_dump(mode="json"))
        proposed = [r["item"] for r in result.rounds]
        assert result.final_item in candidates and set(proposed) <= set(candidates)
        assert all(hard_violations(memory, ml_dataset.item(i)) == [] for i in proposed)


def test_unsteered_candidates_are_the_loops_default(deps, ml_dataset):
    history = list(ml_dataset.eval_rows("test")[0][0].history)
    assert steer_candidates(None, history, deps.rec_scorer, ml_dataset, k=20) == default_candidates(
        deps, history, 20
    )


async def test_the_user_agent_rejects_a_proposal_that_breaks_a_hard_constraint(deps, ml_dataset):
    """Unsteered candidates may hold excluded items: the judge turns them down, naming the rule."""
    history = list(ml_dataset.eval_rows("test")[0][0].history)
    candidates = default_candidates(deps, history, 20)
    prior = (await run_loop(deps, history, candidates, max_rounds=1)).rounds[0]["item"]  # its first proposal
    memory = Preferences.model_validate({"negative": {"items": [prior]}})
    result = await run_loop(
        deps, history, candidates, max_rounds=3, preferences=memory.model_dump(mode="json")
    )
    first = result.rounds[0]
    assert first["item"] == prior
    assert first["decision"] == "reject"
    assert "this item is excluded" in first["user_reason"]
    assert result.final_item != prior
    assert len(result.user_memory) >= 1
