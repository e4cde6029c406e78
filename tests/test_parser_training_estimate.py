"""How far a parser training is and what it announces: the estimate of the seconds left, and the
status file the trainer keeps up to date as it goes (what `/readyz` and a command's answer repeat)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import pytest

import cli.steering as cli_steering
from app.services.parser_status import status_path, write_status
from app.settings import Settings
from lab.steering.training import BESIDE_SHARES, STAGE_SHARES, STAGES, TrainingEstimate


def test_the_stage_shares_cover_every_stage_and_add_up_to_one():
    assert set(STAGE_SHARES) == set(STAGES) and set(BESIDE_SHARES) <= set(STAGES)
    assert sum(STAGE_SHARES.values()) == pytest.approx(1.0)
    assert sum(BESIDE_SHARES.values()) == pytest.approx(1.0)


def test_the_estimate_waits_for_a_twentieth_then_scales_the_elapsed_time_by_what_is_left():
    now = [100.0]
    estimate = TrainingEstimate(STAGE_SHARES, clock=lambda: now[0])
    now[0] = 110.0
    assert estimate.remaining_s("encode", 1, 100) is None  # too early to say
    now[0] = 160.0  # a minute in, half-way through the first fit
    done = sum(STAGE_SHARES[stage] for stage in ("encode", "natural", "validate")) + STAGE_SHARES["train"] / 2
    assert estimate.remaining_s("train", 50, 100) == pytest.approx(60 * (1 - done) / done)
    now[0] = 400.0
    assert estimate.remaining_s("refit", 100, 100) == pytest.approx(0.0)  # the last stage, finished
    beside = TrainingEstimate(BESIDE_SHARES, clock=lambda: now[0])
    assert beside.remaining_s("train", 50, 100) is None  # off the longest path: the refit is counted
    assert beside.remaining_s("refit", 100, 100) == pytest.approx(0.0)


def test_an_updated_estimate_moves_the_due_time_and_keeps_when_training_began(tmp_path):
    settings = Settings(data_dir=tmp_path, database_url="postgresql://unused/none")
    write_status(settings, "movielens", "training", expected_s=600, pid=4321)
    first = json.loads(status_path(settings, "movielens").read_text())
    write_status(settings, "movielens", "training", expected_s=60, pid=4321)
    second = json.loads(status_path(settings, "movielens").read_text())
    assert second["since"] == first["since"]
    due = datetime.fromisoformat(second["expected_ready_at"])
    assert due < datetime.fromisoformat(first["expected_ready_at"])
    assert abs(due - (datetime.now(UTC) + timedelta(seconds=60))) < timedelta(seconds=5)
    write_status(settings, "movielens", "ready", pid=4321)
    assert "expected_ready_at" not in json.loads(status_path(settings, "movielens").read_text())


def test_prepare_parser_announces_its_progress_and_due_time_as_it_trains(tmp_path, monkeypatch):
    settings = Settings(
        data_dir=tmp_path, database_url="postgresql://unused/none",
        steering_parser_artifact=tmp_path / "models" / "command-parser.pt",
    )  # fmt: skip
    seen: list[dict] = []

    class Saved:
        def save(self, path):
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(b"artifact")

    def fake_train(index, encoder, config, *, on_progress):
        for stage in ("encode", "train", "select", "refit"):
            for done in (1, 5, 10):
                on_progress(stage, done, 10)
                seen.append(json.loads(status_path(settings, "movielens").read_text()))
        return Saved(), SimpleNamespace(seconds=1.0)

    monkeypatch.setattr(cli_steering, "PROGRESS_EVERY_S", 0.0)
    monkeypatch.setattr(cli_steering, "load_text_encoder", lambda purpose: None)
    monkeypatch.setattr(cli_steering, "CommandEncoder", lambda model: None)
    monkeypatch.setattr(cli_steering, "CatalogIndex", lambda dataset: None)
    monkeypatch.setattr(cli_steering, "retired_sets", lambda name: [])
    monkeypatch.setattr(cli_steering, "train_parser", fake_train)
    lines: list[str] = []
    path = cli_steering.prepare_parser(settings, SimpleNamespace(name="movielens"), lines.append)
    assert path == settings.steering_parser_artifact and path.is_file()
    assert all(record["state"] == "training" and "expected_ready_at" in record for record in seen)
    assert len({record["since"] for record in seen}) == 1
    assert any("refit 5/10" in line and "min left" in line for line in lines), lines
    assert json.loads(status_path(settings, "movielens").read_text())["state"] == "ready"
