"""`python -m bench.scale` at a CI size: seeds with COPY, measures every operation in both phases,
prints one JSON object last; the seeded rows are really there (sessions, loops, rounds, checkpoints)."""

from __future__ import annotations

import json
import re
import sys

import psycopg
import pytest

from bench import scale
from bench.scale_common import drop_database
from postgres.urls import with_database

pytestmark = pytest.mark.integration


def test_scale_seeds_with_copy_and_measures_every_operation(cli_data_dir, pg_server_url, monkeypatch, capsys):
    server = with_database(pg_server_url, "postgres")
    argv = ["bench.scale", "--database-url", server, "--sessions", "400", "--baseline", "100", "--keys", "4"]
    monkeypatch.setattr(sys, "argv", [*argv, "--checkpointed", "0.5", "--repeats", "3", "--keep", "--json"])
    scale.main()
    out, err = capsys.readouterr()
    result = json.loads(out.strip().splitlines()[-1])
    kept = re.search(r"kept (\S+)", err).group(1)
    try:
        assert result["sessions"] == 400 and result["baseline_sessions"] == 100
        assert result["measured_key_sessions"] == 100  # 400 over 4 keys
        for phase in ("near_empty", "seeded"):
            assert set(result[phase]) == set(scale.OPERATIONS)
            for op, figures in result[phase].items():
                assert figures["n"] == 3 and 0 < figures["p50_ms"] <= figures["p99_ms"], (phase, op)
        assert set(result["p99_ratio"]) == set(scale.OPERATIONS)
        with psycopg.connect(kept) as conn:
            count = lambda q: conn.execute(q).fetchone()[0]  # noqa: E731
            assert count("SELECT count(*) FROM sessions") == 401  # + the template
            # one seeded loop each, plus the template's and the measured new loops
            assert count("SELECT count(*) FROM loops") == 401 + 2 * (3 + 3)
            assert count("SELECT count(*) FROM rounds") >= 401
            threads = count("SELECT count(DISTINCT thread_id) FROM langgraph.checkpoints")
            assert 100 <= threads <= 300  # about half of the seeded sessions have thread state
    finally:
        drop_database(server, kept)
