"""Evaluation runs: the service reads run directories safely; /v1/runs serves them to key holders."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

from app.services import eval_runs as service
from app.services.errors import NotFound
from app.settings import Settings


@pytest.fixture
def runs_settings(tmp_path: Path) -> Settings:
    settings = Settings(data_dir=tmp_path / "data", _env_file=None)
    settings.runs_dir.mkdir(parents=True)
    return settings


async def test_runs_are_listed_newest_first_with_experiment_plots_and_state(runs_settings, write_eval_run):
    nowhere = Settings(data_dir=runs_settings.data_dir / "none", _env_file=None)
    assert await service.list_eval_runs(nowhere, limit=10, offset=0) == ([], 0)
    older = write_eval_run(runs_settings.runs_dir, "table4-lastfm-older")
    newer = write_eval_run(runs_settings.runs_dir, "table4-lastfm-newer")
    os.utime(older / "report.md", (1_000_000_000, 1_000_000_000))
    for path in older.iterdir():
        os.utime(path, (1_000_000_000, 1_000_000_000))
    os.utime(older, (1_000_000_000, 1_000_000_000))
    (newer / "results.json").unlink()  # an interrupted run: rows only
    (runs_settings.runs_dir / "notes.txt").write_text("not a run")
    (runs_settings.runs_dir / ".hidden-run").mkdir()

    runs, count = await service.list_eval_runs(runs_settings, limit=10, offset=0)
    assert count == 2 and [r.name for r in runs] == ["table4-lastfm-newer", "table4-lastfm-older"]
    assert (runs[0].experiment, runs[0].dataset, runs[0].plots) == ("table4", "lastfm", ["table4_hr1.png"])
    assert [r.finished for r in runs] == [False, True]
    page, count = await service.list_eval_runs(runs_settings, limit=1, offset=1)
    assert count == 2 and [r.name for r in page] == ["table4-lastfm-older"]


async def test_a_run_has_its_report_settings_version_and_files(runs_settings, write_eval_run):
    write_eval_run(runs_settings.runs_dir, "table4-lastfm")
    run = await service.get_eval_run(runs_settings, "table4-lastfm")
    assert run.report.startswith("Reproduce: `recloop eval table4 ")
    assert "## Table 4" in run.report and "paper M/A/F" in run.report
    assert run.config["experiment"] == "table4" and run.code_version == "abc1234"
    assert run.finished_at == "2026-11-30T10:15:00+00:00"
    assert [f.name for f in run.files] == [
        "config.json",
        "report.md",
        "results.json",
        "rows.jsonl",
        "table4_hr1.plot.json",
        "table4_hr1.png",
        "table4_hr1.svg",
    ]
    path, media_type = service.eval_run_file(runs_settings, "table4-lastfm", "table4_hr1.png")
    assert media_type == "image/png" and path.read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize(
    ("run_name", "file_name"),
    [
        ("..", "config.json"),
        ("../data", "config.json"),
        (".hidden", "config.json"),
        ("", "config.json"),
        ("run\\..", "config.json"),
        ("outside", "config.json"),  # a symlink leading out of the runs directory
        ("table4-lastfm", ".."),
        ("table4-lastfm", "../table4-lastfm/config.json"),
        ("table4-lastfm", "rows.jsonl"),  # not a file type the browser hands out
        ("table4-lastfm", "secret.png"),  # a symlink leading out of the run
        ("table4-lastfm", "missing.png"),
        ("missing-run", "config.json"),
    ],
)
def test_names_outside_the_runs_directory_or_of_other_files_are_not_found(
    runs_settings, write_eval_run, tmp_path, run_name, file_name
):
    run = write_eval_run(runs_settings.runs_dir, "table4-lastfm")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "config.json").write_text("{}")
    (elsewhere / "secret.png").write_bytes(b"\x89PNG secret")
    (runs_settings.runs_dir / "outside").symlink_to(elsewhere, target_is_directory=True)
    (run / "secret.png").symlink_to(elsewhere / "secret.png")
    (runs_settings.runs_dir / ".hidden").mkdir()
    (runs_settings.runs_dir / ".hidden" / "config.json").write_text("{}")

    with pytest.raises(NotFound):
        service.eval_run_file(runs_settings, run_name, file_name)
    if file_name == "config.json":
        with pytest.raises(NotFound):
            service._read_eval_run(runs_settings.runs_dir, run_name)


def test_damaged_or_huge_files_are_left_out_instead_of_failing(runs_settings, write_eval_run, monkeypatch):
    run = write_eval_run(runs_settings.runs_dir, "broken")
    (run / "config.json").write_text("{not json")
    (run / "results.json").write_text("[1, 2]")
    monkeypatch.setattr(service, "MAX_TEXT_BYTES", 10)
    detail = service._read_eval_run(runs_settings.runs_dir, "broken")
    assert detail.config is None and detail.report is None and detail.code_version is None
    assert detail.summary.experiment is None and detail.summary.plots == ["table4_hr1.png"]


# --- over HTTP ----------------------------------------------------------------------------------


@pytest.mark.integration
async def test_runs_over_http_need_a_key_and_serve_report_settings_and_plots(
    api, service_settings, write_eval_run
):
    name = f"table4-lastfm-{uuid.uuid4().hex[:8]}"
    write_eval_run(service_settings.runs_dir, name)

    refused = await api.get("/v1/runs", headers={"Authorization": ""})
    assert refused.status_code == 401 and refused.json()["field"] == "Authorization"
    listed = (await api.get("/v1/runs", params={"limit": 200})).json()
    entry = next(r for r in listed["data"] if r["name"] == name)
    assert entry["experiment"] == "table4" and entry["finished"] and entry["plots"] == ["table4_hr1.png"]

    run = (await api.get(f"/v1/runs/{name}")).json()
    assert run["config"]["dataset"] == "lastfm" and "| sasrec |" in run["report"]
    assert {f["name"] for f in run["files"]} >= {"report.md", "table4_hr1.png", "config.json"}

    plot = await api.get(f"/v1/runs/{name}/files/table4_hr1.png")
    assert plot.status_code == 200 and plot.headers["content-type"] == "image/png"
    assert plot.content[:4] == b"\x89PNG"
    assert plot.headers["content-security-policy"] == "default-src 'none'; sandbox"
    report = await api.get(f"/v1/runs/{name}/files/report.md")
    assert report.headers["content-type"].startswith("text/markdown") and report.text == run["report"]


@pytest.mark.integration
async def test_an_svg_plot_is_served_sandboxed_so_its_script_cannot_run(
    api, service_settings, write_eval_run
):
    name = f"table4-lastfm-{uuid.uuid4().hex[:8]}"
    run_dir = write_eval_run(service_settings.runs_dir, name)
    svg = '<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script><rect width="4"/></svg>'
    (run_dir / "table4_hr1.svg").write_text(svg)

    plot = await api.get(f"/v1/runs/{name}/files/table4_hr1.svg")
    assert plot.status_code == 200 and plot.headers["content-type"].startswith("image/svg+xml")
    assert plot.text == svg
    assert plot.headers["content-security-policy"] == "default-src 'none'; sandbox"
    assert plot.headers["x-content-type-options"] == "nosniff"


@pytest.mark.integration
@pytest.mark.parametrize(
    "path",
    [
        "/v1/runs/..%2F..%2Fdatasets",
        "/v1/runs/%2E%2E",
        "/v1/runs/{name}/files/..%2Fconfig.json",
        "/v1/runs/{name}/files/%2E%2E%2F%2E%2E%2Fpg%2Fpostgresql.conf",
        "/v1/runs/{name}/files/rows.jsonl",
        "/v1/runs/no-such-run",
    ],
)
async def test_escaping_paths_over_http_are_404(api, service_settings, write_eval_run, path):
    name = f"table4-lastfm-{uuid.uuid4().hex[:8]}"
    write_eval_run(service_settings.runs_dir, name)
    response = await api.get(path.replace("{name}", name))
    assert response.status_code == 404, response.text
    assert "sasrec" not in response.text and "experiment" not in response.text
