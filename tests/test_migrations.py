"""Alembic owns the service tables only: upgrade/downgrade/upgrade, no drift, checkpoint tables untouched."""

from __future__ import annotations

import asyncio

import psycopg
import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import create_engine

from app.db.migrate import downgrade, setup_checkpoints, upgrade
from app.db.models import Base, include_in_autogenerate
from postgres.urls import sqlalchemy_url

pytestmark = pytest.mark.integration

SERVICE_TABLES = {
    "alembic_version",
    "api_keys",
    "sessions",
    "loops",
    "rounds",
    "steering_commands",
    "key_usage",
    "idempotency_keys",
    "rate_windows",
}
CHECKPOINT_TABLES = {"checkpoints", "checkpoint_blobs", "checkpoint_writes", "checkpoint_migrations"}


def _tables(url: str, schema: str) -> set[str]:
    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = %s", (schema,)).fetchall()
    return {name for (name,) in rows}


def _drift(url: str) -> list:
    engine = create_engine(sqlalchemy_url(url))
    try:
        with engine.connect() as conn:
            context = MigrationContext.configure(
                conn, opts={"include_name": include_in_autogenerate, "compare_type": True}
            )
            return compare_metadata(context, Base.metadata)
    finally:
        engine.dispose()


def test_upgrade_downgrade_upgrade_from_an_empty_database(make_database):
    url = make_database()
    upgrade(url)
    assert _tables(url, "public") == SERVICE_TABLES
    assert {"api_keys", "sessions", "loops", "rounds"} <= SERVICE_TABLES
    downgrade(url, "base")
    assert _tables(url, "public") == {"alembic_version"}
    upgrade(url)
    assert _tables(url, "public") == SERVICE_TABLES
    assert _drift(url) == []


def test_autogenerate_ignores_the_checkpoint_schema(make_database):
    url = make_database()
    upgrade(url)
    asyncio.run(setup_checkpoints(url, "langgraph"))
    assert _tables(url, "langgraph") == CHECKPOINT_TABLES
    assert _drift(url) == []  # nothing to add, nothing to drop: the saver's tables are invisible

    downgrade(url, "base")
    assert _tables(url, "langgraph") == CHECKPOINT_TABLES  # Alembic never touches them
    asyncio.run(setup_checkpoints(url, "langgraph"))  # the saver's own migrations are idempotent


def test_the_checkpoint_values_are_compressed_with_lz4(make_database):
    url = make_database()
    for _ in range(2):  # set-up runs at every deploy
        asyncio.run(setup_checkpoints(url, "langgraph"))
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT attrelid::regclass::text, attcompression FROM pg_attribute WHERE attname = 'blob' AND "
            "attrelid IN ('langgraph.checkpoint_blobs'::regclass, 'langgraph.checkpoint_writes'::regclass)"
        ).fetchall()
    assert sorted(rows) == [("langgraph.checkpoint_blobs", "l"), ("langgraph.checkpoint_writes", "l")]


def test_revision_0012_marks_the_loops_their_clients_ended_as_cancelled(make_database):
    """Loops recorded before the ``cancelled`` column said so only by their error's first word."""
    url = make_database()
    upgrade(url, "0011")
    with psycopg.connect(url) as conn:
        key = conn.execute(
            "INSERT INTO api_keys (owner, prefix, key_hash) VALUES ('o', 'rl_', 'h') RETURNING id"
        ).fetchone()[0]
        session = conn.execute(
            "INSERT INTO sessions (id, thread_id, owner_key_id, user_id, dataset, status, history, n_loops) "
            "VALUES (gen_random_uuid(), 't', %s, 'u', 'movielens', 'idle', '[]', 3) RETURNING id",
            (key,),
        ).fetchone()[0]
        errors = {
            1: "cancelled: the client cancelled the run",
            2: "RuntimeError: cancelled: an agent's words",
            3: None,
        }
        for loop_index, error in errors.items():
            conn.execute(
                "INSERT INTO loops (session_id, loop_index, status, params, error, llm_calls, prompt_tokens, "
                "completion_tokens) VALUES (%s, %s, %s, '{}', %s, 0, 0, 0)",
                (session, loop_index, "failed" if error else "completed", error),
            )
    upgrade(url)
    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT loop_index, cancelled FROM loops ORDER BY loop_index").fetchall()
    assert rows == [(1, True), (2, False), (3, False)]
