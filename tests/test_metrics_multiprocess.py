"""Metrics of several worker processes add up in one scrape (prometheus_client multiprocess mode)."""

from __future__ import annotations

import os
import subprocess
import sys

from app.services import metrics

COUNT_ONE_LOOP = (
    "from app.services import metrics; metrics.LOOPS.labels(stop_reason='accepted').inc(); "
    "metrics.REQUEST_LATENCY.labels(route='/v1/x', method='POST', status='200').observe(0.02)"
)


def test_a_scrape_sums_every_workers_counts(tmp_path, monkeypatch):
    for name, value in metrics.share_between_workers(tmp_path / "metrics").items():
        monkeypatch.setenv(name, value)  # restored (unset) after the test
    env = dict(os.environ)
    for _ in range(2):  # two "workers", each its own process
        subprocess.run([sys.executable, "-c", COUNT_ONE_LOOP], env=env, check=True)

    text = metrics.exposition().decode()
    assert 'recloop_loops_total{stop_reason="accepted"} 2.0' in text
    assert 'recloop_http_request_duration_seconds_count{method="POST",route="/v1/x",status="200"} 2.0' in text
    monkeypatch.delenv(metrics.MULTIPROC_ENV)
    assert "recloop_loops_total" in metrics.exposition().decode()  # back to this process's own registry


def test_starting_again_counts_from_zero(tmp_path, monkeypatch):
    stale = tmp_path / "metrics"
    stale.mkdir()
    (stale / "counter_1234.db").write_bytes(b"left by a previous run")
    monkeypatch.delenv(metrics.MULTIPROC_ENV, raising=False)
    environment = metrics.share_between_workers(stale)
    assert list(stale.iterdir()) == []
    assert environment == {metrics.MULTIPROC_ENV: str(stale)}
    assert metrics.MULTIPROC_ENV not in os.environ  # the caller hands it to the workers
