"""Evaluation runs on disk (``settings.runs_dir``): list them, read one run, hand out its files.

A run directory is what `recloop eval` writes (lab/eval/common.py): config.json, results.json,
report.md and plots (PNG and SVG). Run and file names arrive in URLs, so a name is accepted only if it
is one plain path segment (letters, digits, '.', '_', '-'; no leading dot, so never '..'),
and the resolved path must stay a direct child of its parent: a symlink that leads out of the
runs directory is refused like a missing run.
"""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from app.services.errors import NotFound
from app.settings import Settings

NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$")
FILE_TYPES = {
    ".png": "image/png",
    ".svg": "image/svg+xml",
    ".md": "text/markdown",
    ".json": "application/json",
}
"""Files of a run that can be fetched, by suffix (rows.jsonl and anything else stay on disk). An SVG
can carry script: the route serves every file under a sandboxing CSP, so none of it runs."""
MAX_TEXT_BYTES = 5_000_000
"""report.md, config.json and results.json larger than this are listed but not read into a reply."""


@dataclass(frozen=True)
class EvalRunFile:
    name: str
    size: int


@dataclass(frozen=True)
class EvalRunSummary:
    name: str
    experiment: str | None
    dataset: str | None
    finished: bool
    """results.json is written: the run completed (an interrupted run has rows.jsonl only)."""
    modified_at: datetime
    plots: list[str]


@dataclass(frozen=True)
class EvalRunDetail:
    summary: EvalRunSummary
    config: dict[str, Any] | None
    """config.json: the settings that decide the run's numbers."""
    report: str | None
    """report.md as written (markdown; the client renders it as text, never as HTML)."""
    code_version: str | None
    finished_at: str | None
    files: list[EvalRunFile]


def _child(parent: Path, name: str, what: str) -> Path:
    """``parent / name`` if ``name`` is a plain segment that resolves to a direct child, else NotFound."""
    missing = NotFound(f"no {what} named {name!r}", field="name" if what == "run" else "file")
    if not NAME_PATTERN.fullmatch(name):
        raise missing
    path = parent / name
    try:
        resolved = path.resolve(strict=True)
    except (OSError, RuntimeError):  # missing, or a symlink loop
        raise missing from None
    if resolved.parent != parent.resolve():
        raise missing
    return resolved


def _read_json(path: Path) -> dict[str, Any] | None:
    if not path.is_file() or path.stat().st_size > MAX_TEXT_BYTES:
        return None
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None  # a run being written, or damaged: shown without it
    return value if isinstance(value, dict) else None


def _summary(path: Path) -> EvalRunSummary:
    config = _read_json(path / "config.json") or {}
    files = [f for f in path.iterdir() if f.is_file()]
    modified = max([path.stat().st_mtime, *(f.stat().st_mtime for f in files)])
    return EvalRunSummary(
        name=path.name,
        experiment=_text_or_none(config.get("experiment")),
        dataset=_text_or_none(config.get("dataset")),
        finished=(path / "results.json").is_file(),
        modified_at=datetime.fromtimestamp(modified, UTC),
        plots=sorted(f.name for f in files if f.suffix == ".png" and NAME_PATTERN.fullmatch(f.name)),
    )


def _text_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _list_eval_runs(root: Path) -> list[EvalRunSummary]:
    if not root.is_dir():
        return []
    runs = []
    for entry in root.iterdir():
        try:
            path = _child(root, entry.name, "run")
        except NotFound:
            continue
        if path.is_dir():
            runs.append(_summary(path))
    return sorted(runs, key=lambda run: (run.modified_at, run.name), reverse=True)


def _read_eval_run(root: Path, name: str) -> EvalRunDetail:
    path = _child(root, name, "run")
    if not path.is_dir():
        raise NotFound(f"no run named {name!r}", field="name")
    results = _read_json(path / "results.json") or {}
    report_path = path / "report.md"
    report = None
    if report_path.is_file() and report_path.stat().st_size <= MAX_TEXT_BYTES:
        report = report_path.read_text(encoding="utf-8", errors="replace")
    files = sorted(
        (EvalRunFile(name=f.name, size=f.stat().st_size) for f in path.iterdir() if f.is_file()),
        key=lambda f: f.name,
    )
    return EvalRunDetail(
        summary=_summary(path),
        config=_read_json(path / "config.json") or _dict_or_none(results.get("config")),
        report=report,
        code_version=_text_or_none(results.get("code_version")),
        finished_at=_text_or_none(results.get("finished_at")),
        files=files,
    )


def _dict_or_none(value: Any) -> dict[str, Any] | None:
    return value if isinstance(value, dict) else None


async def list_eval_runs(settings: Settings, *, limit: int, offset: int) -> tuple[list[EvalRunSummary], int]:
    """Runs newest first (by their newest file), one page of them, and how many there are."""
    runs = await asyncio.to_thread(_list_eval_runs, settings.runs_dir)
    return runs[offset : offset + limit], len(runs)


async def get_eval_run(settings: Settings, name: str) -> EvalRunDetail:
    return await asyncio.to_thread(_read_eval_run, settings.runs_dir, name)


def eval_run_file(settings: Settings, run_name: str, file_name: str) -> tuple[Path, str]:
    """The path of one of a run's files and its media type; NotFound for anything else."""
    run = _child(settings.runs_dir, run_name, "run")
    path = _child(run, file_name, "file")
    media_type = FILE_TYPES.get(path.suffix)
    if media_type is None or not path.is_file():
        raise NotFound(f"no file named {file_name!r} in run {run_name!r}", field="file")
    return path, media_type
