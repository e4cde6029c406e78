"""`python -m bench.data_scale` without its hours: the flags, the JSON contract's keys, a failed or
timed-out stage reported as null with its cause, the child's own peak RSS, and the report files.
(The benchmark itself runs outside CI: bench/README.md.)"""

from __future__ import annotations

import json
import sys

import pytest

from bench import data_scale
from bench.data_scale import (
    CONTRACT_KEYS,
    FIGURES,
    MOVIELENS_SUFFIX,
    DatasetRun,
    Options,
    Progress,
    catalog_sample,
    measure_dataset,
    natural_commands,
    parse_args,
    run_child,
    search_queries,
    size_result,
    write_report,
)

# The keys issue 45 names: a contract, never renamed.
ISSUE_KEYS = {
    "items", "interactions", "build_s", "build_peak_rss_mb", "train_rows_per_s", "train_rows_per_s_movielens",
    "train_peak_rss_mb", "worker_rss_mb", "recommend_p50_ms", "recommend_p50_ms_movielens", "command_p50_ms",
    "command_p50_ms_movielens", "search_p50_ms", "ready_s",
}  # fmt: skip


def _options(**overrides) -> Options:
    return Options(
        **{
            "models": ("sasrec",),
            "serve_model": "sasrec",
            "train_rows": 100,
            "requests": 3,
            "stage_timeout_s": 60,
            "database_url": "postgresql://unused",
            "seed": 0,
            **overrides,
        }
    )


def test_flags_one_size_or_the_grid():
    one = parse_args(["--items", "300", "--interactions", "3000", "--json"])
    assert (one.items, one.interactions, one.json) == (300, 3000, True)
    assert data_scale.sizes(one) == [(300, 3000)]
    grid = data_scale.sizes(parse_args([]))
    assert {i for i, _ in grid} == {10**4, 10**5, 10**6} and {m for _, m in grid} == {10**6, 10**7}
    assert data_scale.default_users(3000) == 30 and data_scale.default_users(100) == 10
    with pytest.raises(SystemExit):
        parse_args(["--items", "300"])  # one without the other
    with pytest.raises(SystemExit):
        parse_args(["--items", "0", "--interactions", "10"])


def test_the_json_object_holds_the_contract_keys_first_and_nulls_where_a_stage_failed(tmp_path):
    assert set(CONTRACT_KEYS) == ISSUE_KEYS
    synthetic = DatasetRun("s", "synthetic", tmp_path / "s")
    movielens = DatasetRun("m", "movielens", tmp_path / "m")
    synthetic.figures |= {"build_s": 1.5, "train_rows_per_s": 900.0, "recommend_p50_ms": 30.0}
    synthetic.errors["serve"] = "recloop serve not ready after 10 s"
    movielens.figures |= {"train_rows_per_s": 5000.0, "command_p50_ms": 12.0}
    result = size_result(300, 3000, 30, synthetic, movielens)
    assert list(result)[: len(CONTRACT_KEYS)] == list(CONTRACT_KEYS)
    assert {k + MOVIELENS_SUFFIX for k in FIGURES} <= set(result)
    assert result["train_rows_per_s"] == 900.0 and result["train_rows_per_s_movielens"] == 5000.0
    assert result["command_p50_ms_movielens"] == 12.0
    assert result["worker_rss_mb"] is None and result["errors"] == {
        "serve": "recloop serve not ready after 10 s"
    }
    json.dumps(result)


def test_a_failed_build_skips_what_needs_it_and_fakes_no_figure(tmp_path):
    run = DatasetRun("s", "synthetic", tmp_path / "s")
    failing = [sys.executable, "-c", "import sys; print('no such catalog'); sys.exit(3)"]
    measure_dataset(run, failing, _options(), Progress())
    assert "exited with 3" in run.errors["build"] and "no such catalog" in run.errors["build"]
    assert run.errors["serve"].startswith("skipped")
    assert all(value is None for value in run.figures.values())


def test_a_child_reports_its_own_peak_rss_and_is_killed_at_the_timeout(tmp_path):
    grow = [sys.executable, "-c", "b = bytearray(200 * 2**20); b[::4096] = b'x' * len(b[::4096])"]
    done = run_child(grow, log_path=tmp_path / "grow.log", timeout_s=60)
    assert done.returncode == 0 and done.peak_rss_mb >= 200
    ballast = bytearray(300 * 2**20)  # this process holds 300 MB more: no child may count it
    ballast[:: 2**12] = b"x" * len(ballast[:: 2**12])
    small = run_child([sys.executable, "-c", "pass"], log_path=tmp_path / "small.log", timeout_s=60)
    assert (
        small.peak_rss_mb is not None and small.peak_rss_mb < 150
    )  # not the parent's, nor the earlier child's
    del ballast
    slow = run_child(
        [sys.executable, "-c", "import time; time.sleep(60)"], log_path=tmp_path / "s.log", timeout_s=1
    )
    assert slow.returncode is None and slow.seconds < 30 and slow.peak_rss_mb is None
    with pytest.raises(data_scale.StageFailed, match="stage timeout"):
        data_scale.checked(slow, "train sasrec", 1)


def test_requests_come_from_the_catalog_itself(synthetic_dataset):
    sample = catalog_sample(synthetic_dataset.root, rows=20, items=100)
    assert len(sample.histories) == 20 and len(sample.titles) == 100 and sample.genres and sample.years
    commands = natural_commands(sample, 16, seed=0)
    assert commands == natural_commands(sample, 16, seed=0) and len(set(commands)) > 8
    assert any(title in c for c in commands for title in sample.titles)
    queries = search_queries(sample, 9, seed=0)
    assert all(q and q == q.lower() for q in queries)


def test_the_report_has_the_table_the_failures_and_the_plot(tmp_path):
    synthetic = DatasetRun("s", "synthetic", tmp_path / "s")
    movielens = DatasetRun("m", "movielens", tmp_path / "m")
    movielens.extra["n_items"] = 1682
    for run, scale in ((synthetic, 3.0), (movielens, 1.0)):
        run.figures |= {k: scale * (i + 1) for i, k in enumerate(FIGURES)}
    synthetic.figures["search_p50_ms"] = None
    synthetic.errors["serve"] = "exceeded the stage timeout"
    results = [size_result(10**4, 10**6, 10**4, synthetic, movielens)]
    report = write_report(results, tmp_path / "out", {"cpus": 2})
    text = report.read_text()
    assert "| MovieLens-100k | 1,682 |" in text and "| synthetic | 10,000 | 1,000,000 |" in text
    assert "failed" in text and "exceeded the stage timeout" in text
    assert (tmp_path / "out" / "data_scale.png").stat().st_size > 10_000
    saved = json.loads((tmp_path / "out" / "results.json").read_text())
    assert saved["results"][0]["items"] == 10**4
