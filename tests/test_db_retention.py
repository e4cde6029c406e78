"""Retention on the real PostgreSQL: a pruned session keeps only its newest checkpoint and still
lists, shows its state and loop history, and runs a new loop; busy, waiting and recent sessions
are left alone; idle sessions past the TTL are deleted with their checkpoints; `recloop db prune`."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import text
from typer.testing import CliRunner

from app.services.retention import RetentionStore, prune
from cli import cli

pytestmark = pytest.mark.integration

HISTORY = [49, 180, 257, 293, 0, 171]
LATER = timedelta(seconds=5)  # "now" for the prune, a little after the loops ran


def _store(worker) -> RetentionStore:
    return RetentionStore(
        sessionmaker=worker.database.sessionmaker,
        saver=worker.runner.saver,
        locks=worker.database.locks,
        schema=worker.settings.checkpoint_schema,
    )


async def _checkpoint_rows(worker, thread_id: str) -> dict[str, int]:
    schema = worker.settings.checkpoint_schema
    counts = {}
    async with worker.database.sessionmaker() as db:
        for table in ("checkpoints", "checkpoint_writes", "checkpoint_blobs"):
            found = await db.execute(
                text(f'SELECT count(*) FROM "{schema}".{table} WHERE thread_id = :t'), {"t": thread_id}
            )
            counts[table] = int(found.scalar_one())
    return counts


async def _session_with_loops(api, n_loops: int) -> str:
    created = await api.post("/v1/sessions", json={"user_id": "retention", "history": HISTORY})
    assert created.status_code == 201, created.text
    session_id = created.json()["id"]
    for _ in range(n_loops):
        ran = await api.post(f"/v1/sessions/{session_id}/recommendations", json={})
        assert ran.status_code == 200, ran.text
    return session_id


async def test_a_pruned_session_lists_shows_its_history_and_runs_a_new_loop(api, service_worker):
    settings = service_worker.settings.model_copy(update={"checkpoint_history_days": 0.0})
    session_id = await _session_with_loops(api, 2)
    before_state = (await api.get(f"/v1/sessions/{session_id}")).json()
    before_loops = (await api.get(f"/v1/sessions/{session_id}/loops")).json()
    before_rows = await _checkpoint_rows(service_worker, session_id)
    assert before_rows["checkpoints"] > 2

    report = await prune(_store(service_worker), settings, now=datetime.now(UTC) + LATER)

    assert report.sessions_pruned >= 1 and report.sessions_expired == 0
    after_rows = await _checkpoint_rows(service_worker, session_id)
    assert after_rows["checkpoints"] == 1
    assert after_rows["checkpoint_blobs"] < before_rows["checkpoint_blobs"]
    assert after_rows["checkpoint_writes"] < before_rows["checkpoint_writes"]
    total = lambda storage: sum(t["bytes"] for t in storage.values())  # noqa: E731
    assert total(report.storage_after) < total(report.storage_before)

    listed = (await api.get("/v1/sessions", params={"user_id": "retention", "limit": 100})).json()
    assert session_id in [s["id"] for s in listed["data"]]
    state = (await api.get(f"/v1/sessions/{session_id}")).json()
    assert state == before_state  # history, memories, loop count: all read from the kept checkpoint
    assert (await api.get(f"/v1/sessions/{session_id}/loops")).json() == before_loops

    ran = await api.post(f"/v1/sessions/{session_id}/recommendations", json={})
    assert ran.status_code == 200, ran.text
    assert ran.json()["loop_index"] == 3
    loops = (await api.get(f"/v1/sessions/{session_id}/loops")).json()
    assert loops["count"] == 3 and all(loop["rounds"] for loop in loops["data"])
    state = (await api.get(f"/v1/sessions/{session_id}")).json()
    assert state["n_loops"] == 3 and state["history"] == before_state["history"]


async def test_recent_and_waiting_sessions_keep_every_checkpoint(api, service_worker):
    recent = await _session_with_loops(api, 1)
    waiting = await _session_with_loops(api, 0)
    paused = await api.post(f"/v1/sessions/{waiting}/recommendations", json={"judge_mode": "human"})
    assert paused.status_code == 200 and paused.json()["status"] == "awaiting_feedback", paused.text
    rows = {s: await _checkpoint_rows(service_worker, s) for s in (recent, waiting)}

    week = service_worker.settings.model_copy(update={"checkpoint_history_days": 7.0})
    await prune(_store(service_worker), week, now=datetime.now(UTC) + LATER)
    assert await _checkpoint_rows(service_worker, recent) == rows[recent]  # not 7 days old yet

    now = service_worker.settings.model_copy(update={"checkpoint_history_days": 0.0})
    await prune(_store(service_worker), now, now=datetime.now(UTC) + LATER)
    assert await _checkpoint_rows(service_worker, waiting) == rows[waiting]  # its loop is open
    answered = await api.post(f"/v1/sessions/{waiting}/feedback", json={"decision": "accept", "reason": "ok"})
    assert answered.status_code == 200, answered.text


async def test_a_busy_session_is_skipped_not_raced(api, service_worker):
    session_id = await _session_with_loops(api, 1)
    rows = await _checkpoint_rows(service_worker, session_id)
    settings = service_worker.settings.model_copy(update={"checkpoint_history_days": 0.0})
    async with service_worker.database.locks.hold(session_id, busy=RuntimeError("held")):  # a loop runs
        report = await prune(_store(service_worker), settings, now=datetime.now(UTC) + LATER)
    assert report.sessions_skipped_busy >= 1
    assert await _checkpoint_rows(service_worker, session_id) == rows


async def test_idle_sessions_past_the_ttl_are_deleted_with_their_checkpoints(api, service_worker):
    session_id = await _session_with_loops(api, 1)
    settings = service_worker.settings.model_copy(
        update={"session_idle_ttl_days": 30.0, "checkpoint_retention": "all"}
    )
    kept = await prune(_store(service_worker), settings, now=datetime.now(UTC) + LATER)
    assert (await api.get(f"/v1/sessions/{session_id}")).status_code == 200 and kept.sessions_pruned == 0

    report = await prune(_store(service_worker), settings, now=datetime.now(UTC) + timedelta(days=31))
    assert report.sessions_expired >= 1
    gone = await api.get(f"/v1/sessions/{session_id}")
    assert gone.status_code == 404 and gone.json()["field"] == "session_id"
    assert await _checkpoint_rows(service_worker, session_id) == {
        "checkpoints": 0,
        "checkpoint_writes": 0,
        "checkpoint_blobs": 0,
    }


async def test_idempotency_keys_past_their_ttl_are_deleted_and_fresh_ones_kept(api, service_worker):
    old, fresh = str(uuid.uuid4()), str(uuid.uuid4())
    body = {"user_id": "retention-keys", "history": HISTORY}
    created = await api.post("/v1/sessions", json=body, headers={"Idempotency-Key": old})
    assert created.status_code == 201
    second = await api.post("/v1/sessions", json=body, headers={"Idempotency-Key": fresh})
    assert second.status_code == 201
    async with service_worker.database.sessionmaker.begin() as db:  # the first key was stored a day ago
        await db.execute(
            text("UPDATE idempotency_keys SET expires_at = now() - interval '1 second' WHERE key = :k"),
            {"k": old},
        )
    settings = service_worker.settings.model_copy(update={"prune_batch_size": 1})  # batches of one
    report = await prune(_store(service_worker), settings, now=datetime.now(UTC) + LATER)
    assert report.idempotency_keys_expired >= 1
    async with service_worker.database.sessionmaker() as db:
        query = text("SELECT key FROM idempotency_keys WHERE key IN (:a, :b)")
        left = await db.execute(query, {"a": old, "b": fresh})
        assert [row[0] for row in left] == [fresh]
    retried = await api.post("/v1/sessions", json=body, headers={"Idempotency-Key": fresh})
    assert retried.headers["idempotent-replayed"] == "true" and retried.json() == second.json()
    again = await api.post("/v1/sessions", json=body, headers={"Idempotency-Key": old})
    assert again.status_code == 201 and "idempotent-replayed" not in again.headers  # a new request now
    assert again.json()["id"] != created.json()["id"]


def test_db_prune_command_prints_counts_as_json(service_db_url, data_dir, monkeypatch):
    monkeypatch.setenv("DATABASE_URL", service_db_url)
    monkeypatch.setenv("RECLOOP_CHECKPOINT_HISTORY_DAYS", "3")
    result = CliRunner().invoke(cli, ["db", "prune", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["policy"] == {
        "checkpoint_retention": "keep_latest",
        "checkpoint_history_days": 3.0,
        "session_idle_ttl_days": 0.0,
        "idempotency_ttl_s": 86_400,
    }
    keys = {"sessions_pruned", "sessions_expired", "sessions_skipped_busy", "idempotency_keys_expired"}
    assert keys <= set(report)
    assert set(report["storage_after"]) == {"checkpoints", "checkpoint_blobs", "checkpoint_writes"}
    assert all(t["rows"] >= 0 and t["bytes"] >= 0 for t in report["storage_after"].values())
