"""Which steering parser a dataset is served with, and where its learned parser stands.

The learned parser is trained by `recloop prepare-parser` (inside `recloop prepare`, as the compose
and Kubernetes parser jobs, or started in the background by a first `recloop serve`); the trainer
writes its state here, in ``data_dir/run/parser-<dataset>.json``, and every worker reads it, so
``/readyz`` and a command's answer can say that the learned parser is on its way and when it is due.
A worker switches to the learned parser at its next command once the artifact is written
(:func:`app.services.steering.session_parser` keys its parser by the artifact's mtime): no restart,
no failed request.
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

from app.settings import Settings
from steering.choice import learned_artifact, parser_kind

LearnedState = Literal["ready", "training", "failed", "absent"]

EXPECTED_TRAINING_S = 300
"""The first announced time, before the trainer has measured its own pace (the default recipe takes
3.5-4 min on an idle 2-core box, bench/README.md); the trainer then updates it as it goes."""


def status_path(settings: Settings, dataset: str) -> Path:
    return settings.data_dir / "run" / f"parser-{dataset}.json"


def write_status(
    settings: Settings, dataset: str, state: LearnedState, *, expected_s: float = EXPECTED_TRAINING_S,
    error: str | None = None, pid: int | None = None,
) -> None:  # fmt: skip
    """Record the trainer's state (atomically: a worker never reads half a file); ``expected_s``: the
    seconds it expects to take still (the trainer updates it as it goes)."""
    path = status_path(settings, dataset)
    path.parent.mkdir(parents=True, exist_ok=True)
    now = datetime.now(UTC)
    since = now.isoformat(timespec="seconds")
    record: dict[str, Any] = {"state": state, "since": since, "pid": pid or os.getpid()}
    try:  # a trainer's updated estimate: the state holds since it was first written
        earlier = json.loads(path.read_text())
        if (earlier.get("state"), earlier.get("pid")) == (state, record["pid"]):
            record["since"] = earlier.get("since", record["since"])
    except (OSError, ValueError, AttributeError):
        pass
    if state == "training":
        record["expected_ready_at"] = (now + timedelta(seconds=expected_s)).isoformat(timespec="seconds")
    if error:
        record["error"] = error
    partial = path.with_suffix(".json.partial")
    partial.write_text(json.dumps(record))
    partial.replace(path)


def training_elsewhere(settings: Settings, dataset: str) -> bool:
    """A trainer of this data directory is running now (its process is alive)."""
    try:
        record = json.loads(status_path(settings, dataset).read_text())
        if record.get("state") != "training":
            return False
        os.kill(int(record["pid"]), 0)
    except (OSError, ValueError, KeyError, TypeError):
        return False
    return True


def parser_details(settings: Settings, dataset: str) -> dict[str, Any]:
    """{"parser": the kind that reads commands now, "learned": its state[, "expected_ready_at",
    "error"]}: what ``/readyz`` shows and a command's answer repeats."""
    config = settings.parser_config()
    details: dict[str, Any] = {"parser": parser_kind(config, dataset)}
    if learned_artifact(config, dataset).is_file():
        details["learned"] = "ready"
        return details
    try:
        record = json.loads(status_path(settings, dataset).read_text())
    except (OSError, ValueError):
        details["learned"] = "absent"
        return details
    details["learned"] = record.get("state", "absent")
    for key in ("expected_ready_at", "error"):
        if key in record:
            details[key] = record[key]
    return details
