"""Two `recloop serve` replicas behind a real HAProxy on one PostgreSQL: one is SIGKILLed under load
and no acknowledged session or loop is lost; concurrent loops on one session through the balancer
(so on both replicas) give one loop and 409 for the rest. The short form of `python -m bench.replicas`.

Needs Debian's haproxy (.ci/run installs it and sets RECLOOP_REQUIRE_HAPROXY=1, which turns a
missing binary into a failure instead of a skip)."""

from __future__ import annotations

import argparse
import os

import pytest

from bench import replicas
from postgres.urls import with_database

pytestmark = pytest.mark.integration


@pytest.fixture
def haproxy_present() -> None:
    if replicas.haproxy_binary() is None:
        if os.environ.get("RECLOOP_REQUIRE_HAPROXY") == "1":
            pytest.fail("RECLOOP_REQUIRE_HAPROXY=1 but there is no haproxy binary (apt-get install haproxy)")
        pytest.skip("needs HAProxy (Debian: apt-get install haproxy)")


def test_a_replica_killed_under_load_loses_no_acknowledged_work(haproxy_present, cli_data_dir, pg_server_url):
    args = argparse.Namespace(
        database_url=with_database(pg_server_url, "postgres"), concurrency=4, duration=8.0, same_session=6
    )
    result = replicas.run_once(args, 2, cli_data_dir, kill=True)

    assert result["killed_one"] and result["loops_acknowledged"] > 0
    assert result["lost_acknowledged"] == 0, result
    # What failed is what was in flight on the killed replica (cut connections, 502/503 from the
    # balancer before its health check marked it down): never a 500 from the service. A session
    # whose loop ran on the killed replica answers 409 with Retry-After until recovery resolves it;
    # the client waits as told (counted apart, in waited_retry_after), a 409 without it is a failure.
    assert all(cause not in ("500", "409") for cause in result["failed"]), result["failed"]
    assert result["same_session_codes"] == {"200": 1, "409": 5}, result
