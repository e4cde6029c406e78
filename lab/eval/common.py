"""What every experiment shares: the run directory, the resumable row store, candidate sources,
progress, concurrency and the results/report writer (plots: :mod:`lab.eval.plots`).

A run directory holds::

    config.json    the experiment's exact settings; a resume must use the same ones
    rows.jsonl     one finished unit of work per line (appended as it finishes)
    results.json   every aggregated number + settings, artifacts, seeds, code version
    report.md      the tables in the paper's layout, plus links to the plots
    *.png, *.svg   plots, each with its data in *.plot.json (lab/eval/plots.py)

Rows already in ``rows.jsonl`` are never recomputed, so a crashed or interrupted run
continues where it stopped when started again with the same ``--run-dir``.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import random
import threading
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from llm.usage import format_usage
from recmodels.artifacts import code_version
from recmodels.dataset import Dataset, DatasetError, Row
from recmodels.progress import progress_bar


class EvalError(ValueError):
    """Bad evaluation input or state (resume with other settings, bad candidate file...)."""


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


# --------------------------------------------------------------------------- run directory


class RowStore:
    """Append-only JSONL of finished units, keyed by ``record["key"]``; safe across threads."""

    def __init__(self, path: Path):
        self.path = path
        self._lock = threading.Lock()
        self._records: dict[str, dict[str, Any]] = self._load()

    def _load(self) -> dict[str, dict[str, Any]]:
        if not self.path.exists():
            return {}
        lines = self.path.read_text().splitlines()
        records: dict[str, dict[str, Any]] = {}
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                if number == len(lines):
                    # A crash while appending leaves at most one torn last line: drop it, redo that unit.
                    self.path.write_text("".join(f"{kept}\n" for kept in lines[:-1]))
                    break
                raise EvalError(f"{self.path}:{number}: not valid JSON ({exc.msg})") from exc
            if not isinstance(record, dict) or "key" not in record:
                raise EvalError(f"{self.path}:{number}: a row needs a 'key' field")
            records[str(record["key"])] = record
        return records

    def __contains__(self, key: str) -> bool:
        return key in self._records

    def __len__(self) -> int:
        return len(self._records)

    def get(self, key: str) -> dict[str, Any] | None:
        return self._records.get(key)

    def records(self) -> list[dict[str, Any]]:
        return list(self._records.values())

    def append(self, record: Mapping[str, Any]) -> None:
        if "key" not in record:
            raise ValueError("a row needs a 'key' field")
        line = json.dumps(record, sort_keys=True)
        with self._lock:
            # Flushed to the OS per row: survives a crash or Ctrl-C of this process. No fsync: a
            # power loss costs at most the last rows (recomputed on resume), and fsync per row
            # would dominate offline runs on a busy disk.
            with self.path.open("a") as fh:
                fh.write(line + "\n")
            self._records[str(record["key"])] = dict(record)


def _claim_new_dir(root: Path, base: str) -> Path:
    """A directory no other run has: ``base``, else ``base-2``, ``base-3`` ... (made here, so two
    runs started in the same second, a quick evaluation and the next, never share one)."""
    root.mkdir(parents=True, exist_ok=True)
    for attempt in itertools.count(1):
        path = root / (base if attempt == 1 else f"{base}-{attempt}")
        try:
            path.mkdir()
        except FileExistsError:
            continue
        return path
    raise AssertionError("unreachable")


class RunDir:
    """One experiment run on disk; see the module docstring for the layout."""

    def __init__(self, path: Path, config: Mapping[str, Any]):
        self.path = Path(path)
        self.config = dict(config)
        self.path.mkdir(parents=True, exist_ok=True)
        self._check_or_write_config()
        self.rows = RowStore(self.path / "rows.jsonl")

    @classmethod
    def create(cls, run_dir: Path | None, runs_root: Path, name: str, config: Mapping[str, Any]) -> RunDir:
        """Open ``run_dir`` (resuming it) or a new timestamped directory under ``runs_root``."""
        if run_dir is None:
            stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
            run_dir = _claim_new_dir(runs_root, f"{name}-{stamp}")
        return cls(run_dir, config)

    def _check_or_write_config(self) -> None:
        config_path = self.path / "config.json"
        wanted = json.loads(json.dumps(self.config, sort_keys=True))
        if config_path.exists():
            stored = json.loads(config_path.read_text())
            changed = sorted(k for k in set(stored) | set(wanted) if stored.get(k) != wanted.get(k))
            if changed:
                details = ", ".join(f"{k}: {stored.get(k)!r} -> {wanted.get(k)!r}" for k in changed)
                raise EvalError(
                    f"{config_path}: cannot resume with different settings ({details}); "
                    "use a new --run-dir or the original settings"
                )
            return
        config_path.write_text(json.dumps(wanted, indent=2, sort_keys=True) + "\n")

    def write_results(self, results: Mapping[str, Any]) -> Path:
        path = self.path / "results.json"
        path.write_text(json.dumps(results, indent=2, sort_keys=True, default=str) + "\n")
        return path

    def write_report(self, markdown: str) -> Path:
        path = self.path / "report.md"
        path.write_text(markdown.rstrip() + "\n")
        return path


def results_envelope(experiment: str, config: Mapping[str, Any], **sections: Any) -> dict[str, Any]:
    """The fields every results.json carries, whatever the experiment."""
    return {
        "experiment": experiment,
        "config": dict(config),
        "code_version": code_version(),
        "finished_at": utc_now(),
        **sections,
    }


@dataclass(frozen=True)
class ExperimentOutput:
    """What a command writes: results.json sections, report.md text and the --json last line."""

    results: dict[str, Any]
    report: str
    json_line: dict[str, Any]


# --------------------------------------------------------------------------- work units


@dataclass(frozen=True)
class Unit:
    """One resumable piece of work: ``key`` names it in rows.jsonl, ``params`` feed the worker."""

    key: str
    params: Mapping[str, Any]


def run_units(
    units: Sequence[Unit],
    work: Callable[[Unit], Awaitable[Mapping[str, Any]]],
    store: RowStore,
    *,
    concurrency: int = 1,
    desc: str = "rows",
    progress: bool = True,
    aio: asyncio.Runner | None = None,
) -> list[dict[str, Any]]:
    """Run every unit not yet in ``store`` (at most ``concurrency`` at a time, all on one event
    loop), append each result as it finishes, and return the records of all units in ``units``
    order. Call it from synchronous code: it runs the batch on ``aio`` (the evaluation's one event
    loop, :attr:`lab.eval.loops.EvalContext.aio`), or with ``asyncio.run`` without one."""
    pending = [u for u in units if u.key not in store]
    bar = progress_bar(total=len(units), initial=len(units) - len(pending), desc=desc, disable=not progress)

    async def run_all() -> None:
        slots = asyncio.Semaphore(max(1, concurrency))

        async def one(unit: Unit) -> None:
            async with slots:
                result = await work(unit)
            store.append({**result, "key": unit.key})
            bar.update(1)

        if concurrency <= 1:  # in order, one at a time
            for unit in pending:
                await one(unit)
            return
        await asyncio.gather(*(one(unit) for unit in pending))  # the first failure propagates as is

    try:
        if pending:
            (aio.run if aio is not None else asyncio.run)(run_all())
    finally:
        bar.close()
    records = [store.get(u.key) for u in units]
    return [r for r in records if r is not None]


# --------------------------------------------------------------------------- candidates


@dataclass(frozen=True)
class CandidateRow:
    """One evaluation row: the history, the true next item and the candidates shown."""

    row_id: int
    history: tuple[int, ...]
    target: int
    candidates: tuple[int, ...]


def sampled_candidate_rows(
    rows: Sequence[Row], n_items: int, seed: int, n_candidates: int = 20
) -> list[CandidateRow]:
    """LLaRA protocol: one ``random.Random(seed)`` drawn through the rows in order, so seed 303
    on LastFM test reproduces AFL's reference candidate lists."""
    from recmodels.candidates import sample_candidates

    rng = random.Random(seed)
    return [
        CandidateRow(
            i,
            tuple(row.history),
            row.next,
            tuple(sample_candidates(list(row.history), row.next, n_items, rng, n=n_candidates)),
        )
        for i, row in enumerate(rows)
    ]


def file_candidate_rows(path: Path, rows: Sequence[Row], n_items: int) -> list[CandidateRow]:
    """Candidates from a JSONL file (``history``, ``next``, ``candidates`` per line, in row order),
    e.g. the shared ``lastfm/test_candidates_seed303.jsonl``; checked against the dataset rows."""
    path = Path(path)
    if not path.is_file():
        raise EvalError(f"{path}: candidate file not found")
    out: list[CandidateRow] = []
    with path.open() as fh:
        for number, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            index = len(out)
            raw = _json_line(path, number, line)
            for field in ("history", "next", "candidates"):
                if field not in raw:
                    raise DatasetError(path, number, f"missing field {field!r}")
            if index >= len(rows):
                raise DatasetError(path, number, f"more candidate lines than the {len(rows)} dataset rows")
            row = rows[index]
            if tuple(raw["history"]) != tuple(row.history) or raw["next"] != row.next:
                raise DatasetError(path, number, f"history/next differ from dataset row {index}")
            candidates = tuple(int(c) for c in raw["candidates"])
            _check_candidates(path, number, candidates, row, n_items)
            out.append(CandidateRow(index, tuple(row.history), row.next, candidates))
    if len(out) != len(rows):
        raise DatasetError(path, None, f"{len(out)} candidate lines for {len(rows)} dataset rows")
    return out


def _json_line(path: Path, number: int, line: str) -> dict[str, Any]:
    try:
        raw = json.loads(line)
    except json.JSONDecodeError as exc:
        raise DatasetError(path, number, f"not valid JSON ({exc.msg})") from exc
    if not isinstance(raw, dict):
        raise DatasetError(path, number, "expected a JSON object")
    return raw


def _check_candidates(path: Path, number: int, candidates: tuple[int, ...], row: Row, n_items: int) -> None:
    if row.next not in candidates:
        raise DatasetError(path, number, f"field 'candidates' lacks the target {row.next}")
    if len(set(candidates)) != len(candidates):
        raise DatasetError(path, number, "field 'candidates' has duplicates")
    bad = [c for c in candidates if not 0 <= c < n_items]
    if bad:
        raise DatasetError(path, number, f"field 'candidates' has unknown item ids {bad[:5]}")


def candidate_sets(
    dataset: Dataset,
    rows: Sequence[Row],
    seeds: Sequence[int],
    candidates_file: Path | None,
    n_candidates: int = 20,
) -> dict[str, list[CandidateRow]]:
    """Candidate lists per source label: ``seed<N>`` for sampled ones, ``file`` for a given file."""
    if candidates_file is not None:
        return {"file": file_candidate_rows(candidates_file, rows, dataset.n_items)}
    return {f"seed{s}": sampled_candidate_rows(rows, dataset.n_items, s, n_candidates) for s in seeds}


# --------------------------------------------------------------------------- report helpers


LLM_RUN_SETTINGS = (
    "llm_model",
    "llm_base_url",
    "llm_temperature",
    "llm_structured_method",
    "llm_max_retries",
    "llm_timeout_s",
    "llm_max_tokens_rec",
    "llm_max_tokens_user",
    "llm_max_tokens_items",
    "llm_max_tokens_parser",
    "llm_thoughts_max_chars",
    "llm_reason_max_chars",
    "llm_loop_budget_s",
)
"""The LLM settings that shape an LLM run's numbers (stored with it; a resume must match them)."""


def cost_section(results: dict[str, Any], wall_s: float) -> str:
    """What the run cost: wall time of this invocation and, with LLM agents, calls and tokens."""
    lines = [f"\n### Cost\n\nWall time of this invocation: {wall_s:.1f} s."]
    usage = results.get("usage") or {}
    if usage.get("calls"):
        lines.append(f"LLM: {format_usage(usage)}.")
    return "\n".join(lines) + "\n"


def markdown_table(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    def cell(value: Any) -> str:
        return f"{value:.4f}" if isinstance(value, float) else str(value)

    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)
