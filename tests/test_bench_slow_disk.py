"""The slow-disk PostgreSQL of the service benchmark really makes durable commits slow."""

from __future__ import annotations

import shutil

import pytest

from bench.slow_disk import commit_ms, postgres_bindir, slow_fsync_server

pytestmark = pytest.mark.integration


def _can_build_a_server() -> bool:
    try:
        postgres_bindir()
    except RuntimeError:
        return False
    return shutil.which("gcc") is not None


@pytest.mark.skipif(not _can_build_a_server(), reason="needs PostgreSQL server binaries and gcc")
def test_each_commit_waits_for_the_slowed_flush():
    with slow_fsync_server(delay_ms=5.0) as url:
        assert commit_ms(url, n=20) >= 5.0
