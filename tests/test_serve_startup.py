"""A start-up that reads true and stops when told (issue 46): a failed `recloop serve` ends on its cause
and the command that fixes it, never on "serving"; SIGTERM ends a start-up at once, in training or
while a worker loads."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from app.services import startup
from lab.data.synthetic import SyntheticSpec, build_synthetic
from recmodels.training import train

REPO_ROOT = Path(__file__).resolve().parents[1]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _serve(data_dir: Path, database_url: str, *args: str) -> subprocess.Popen:
    env = {
        **os.environ,
        "RECLOOP_DATA_DIR": str(data_dir),
        "RECLOOP_DATABASE_URL": database_url,
        "RECLOOP_DATASET": "synthetic",
        "RECLOOP_STEERING_WARMUP": "false",
        "RECLOOP_STEERING_PARSER_TRAIN_ON_SERVE": "false",  # no minutes-long trainer outliving a test
    }
    env.pop("RECLOOP_LLM_BASE_URL", None)
    command = [
        sys.executable,
        "-m",
        "cli",
        "serve",
        "--host",
        "127.0.0.1",
        "--port",
        str(_free_port()),
        *args,
    ]
    return subprocess.Popen(
        command, cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )


def _lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


def test_a_stop_signal_interrupts_a_start_up_where_it_is_and_restores_the_handlers():
    before = signal.getsignal(signal.SIGTERM)
    threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGTERM)).start()
    started = time.monotonic()
    with pytest.raises(startup.StartupInterrupted) as stopped, startup.interruptible():
        while time.monotonic() - started < 30:  # a long encoding loop, say
            sum(range(1000))
    assert time.monotonic() - started < 5
    assert stopped.value.signum == signal.SIGTERM
    assert signal.getsignal(signal.SIGTERM) is before
    startup.state.interrupted = None  # this process goes on


def test_failure_lines_end_on_the_cause_and_a_command():
    named = startup.failure_lines(
        ValueError("trained on other data; retrain with `recloop train --dataset x`")
    )
    assert named == [
        "recloop did not start: ValueError: trained on other data; retrain with `recloop train --dataset x`"
    ]
    unnamed = startup.failure_lines(OSError("disk full"))
    assert unnamed[0] == "recloop did not start: OSError: disk full" and "`recloop prepare`" in unnamed[-1]


@pytest.mark.integration
def test_a_worker_that_fails_to_start_ends_the_log_on_its_cause_and_fix_never_on_serving(
    tmp_path: Path, make_database
):
    data_dir = tmp_path / "data"
    spec = SyntheticSpec(items=60, users=40, interactions=600, seed=1)
    dataset = build_synthetic(data_dir / "datasets", "synthetic", spec)
    train(dataset, "sasrec", models_dir=data_dir / "models", epochs=1, progress=False)
    # The data changes under the model: the artifact no longer fits it.
    build_synthetic(
        data_dir / "datasets",
        "synthetic",
        SyntheticSpec(items=60, users=40, interactions=600, seed=2),
        force=True,
    )
    # --no-prepare: the files exist, so only the worker, loading the model, finds the mismatch.
    server = _serve(data_dir, make_database(), "--no-prepare")
    err, _ = server.communicate(timeout=300)  # stdout and stderr as one log
    assert server.returncode == 1, err
    lines = _lines(err)
    assert not any("serving" in line for line in lines), lines
    assert lines[-2].startswith("API key (shown once, store it now): rl_")  # the first key is not lost
    assert lines[-1].startswith("recloop did not start: ArtifactError: ")
    assert "`recloop train --dataset synthetic --model sasrec`" in lines[-1]


@pytest.mark.integration
def test_sigterm_during_training_at_start_up_stops_at_once_and_says_nothing_was_served(
    tmp_path: Path, make_database
):
    data_dir = tmp_path / "data"
    spec = SyntheticSpec(items=3000, users=2000, interactions=120_000, seed=3)
    build_synthetic(data_dir / "datasets", "synthetic", spec)
    server = _serve(data_dir, make_database())
    assert server.stdout is not None
    for line in server.stdout:  # wait until it trains (the first start's longest step)
        if line.startswith("training sasrec"):
            break
    time.sleep(2)
    stopped_at = time.monotonic()
    server.send_signal(signal.SIGTERM)
    rest = server.stdout.read()
    server.wait(timeout=60)
    assert time.monotonic() - stopped_at < 10
    assert server.returncode == 128 + signal.SIGTERM
    assert _lines(rest)[-1] == "recloop stopped during start-up (SIGTERM): nothing was served"
    assert not list((data_dir / "models").rglob("*.pt"))  # stopped before a model was saved


@pytest.mark.integration
def test_a_worker_without_its_calibration_stops_naming_prepare_and_serve_prepares_it_first(
    tmp_path: Path, make_database
):
    data_dir = tmp_path / "data"
    spec = SyntheticSpec(items=60, users=40, interactions=600, seed=1)
    dataset = build_synthetic(data_dir / "datasets", "synthetic", spec)
    train(dataset, "sasrec", models_dir=data_dir / "models", epochs=1, progress=False)
    calibration = data_dir / "models" / "synthetic" / "calibration" / "sasrec+sasrec.json"
    database_url = make_database()

    # --no-prepare: data and model are there, the calibration is not; the worker never fits it.
    server = _serve(data_dir, database_url, "--no-prepare")
    err, _ = server.communicate(timeout=300)
    assert server.returncode == 1, err
    lines = _lines(err)
    assert not any("serving" in line for line in lines), lines
    assert lines[-1].startswith("recloop did not start: CalibrationMissing: "), lines
    assert "sasrec+sasrec on synthetic is missing" in lines[-1] and "run `recloop prepare`" in lines[-1]
    assert not calibration.exists()

    # serve (preparing): fits it before any worker starts, then the worker reads it and serves.
    server = _serve(data_dir, database_url, "--no-migrate")
    assert server.stdout is not None
    said: list[str] = []
    try:
        for line in server.stdout:
            said.append(line.rstrip())
            if line.startswith("recloop serving"):
                break
        assert said and said[-1].startswith("recloop serving synthetic"), said
        calibrated = said.index("calibration of the offline agents for sasrec+sasrec ...")
        assert calibrated < said.index(next(s for s in said if s.startswith("starting the server")))
        assert calibration.is_file()
    finally:
        server.send_signal(signal.SIGTERM)
        server.communicate(timeout=60)
