"""Child processes for benchmarks: wall time and peak RSS of a command, and progress lines."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx


class StageFailed(RuntimeError):
    """A stage did not give its figures: it failed, or ran past the stage timeout."""


@dataclass(frozen=True)
class ChildRun:
    seconds: float
    peak_rss_mb: float | None  # None: killed at the timeout (its launcher's would be this process's)
    returncode: int | None  # None: killed at the timeout
    output: str  # the log's tail


_LAUNCHER = """
import os, signal, sys
pid = os.fork()
if pid == 0:
    os.execvp(sys.argv[2], sys.argv[2:])
_, status, usage = os.wait4(pid, 0)
with open(sys.argv[1], "w") as out:
    out.write(str(usage.ru_maxrss))
if os.WIFSIGNALED(status):
    signal.signal(os.WTERMSIG(status), signal.SIG_DFL)
    os.kill(os.getpid(), os.WTERMSIG(status))
sys.exit(os.waitstatus_to_exitcode(status))
"""
"""Runs the command as its own child and writes that child's peak RSS (``ru_maxrss``, KB) to a file.

A process forked from this one starts with this process's pages, and Linux counts them in the
child's ``ru_maxrss`` until it execs (a benchmark that has loaded torch would lend every small
child its 300 MB). A small launcher forked from here, which forks the command itself, lends it
only its own few megabytes."""


def run_child(
    command: Sequence[str],
    *,
    env: dict[str, str] | None = None,
    log_path: Path,
    timeout_s: float,
    tick: Callable[[float], None] = lambda elapsed: None,
) -> ChildRun:
    """Run ``command`` to its end, or kill its process group after ``timeout_s``.

    Its peak RSS is the command's own largest RSS (:data:`_LAUNCHER`: not this process's nor any
    earlier child's); unknown (None) for a command killed at the timeout. Its output goes to
    ``log_path``."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    peak_path = log_path.with_name(log_path.name + ".peak-rss")
    peak_path.unlink(missing_ok=True)
    launched = [sys.executable, "-c", _LAUNCHER, str(peak_path), *command]
    with log_path.open("ab") as log:
        child = subprocess.Popen(  # noqa: S603
            launched, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
    started = time.monotonic()
    timed_out = False
    while True:
        pid, status, _ = os.wait4(child.pid, os.WNOHANG)
        if pid:
            break
        elapsed = time.monotonic() - started
        if elapsed > timeout_s:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child.pid, signal.SIGKILL)
            pid, status, _ = os.wait4(child.pid, 0)
            timed_out = True
            break
        tick(elapsed)
        time.sleep(0.2)
    seconds = time.monotonic() - started
    child.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait again
    peak_kb = int(peak_path.read_text()) if peak_path.is_file() else None
    peak_path.unlink(missing_ok=True)
    return ChildRun(
        seconds=round(seconds, 2),
        peak_rss_mb=None if peak_kb is None else round(peak_kb / 1024, 1),  # Linux reports kilobytes
        returncode=None if timed_out else child.returncode,
        output=log_path.read_text(errors="replace")[-3000:],
    )


def checked(run: ChildRun, what: str, timeout_s: float) -> ChildRun:
    """``run``, or StageFailed saying how it ended."""
    if run.returncode is None:
        raise StageFailed(f"{what}: exceeded the stage timeout of {timeout_s:.0f} s (killed)")
    if run.returncode != 0:
        tail = " | ".join(run.output.strip().splitlines()[-3:])
        raise StageFailed(f"{what}: exited with {run.returncode}: {tail}")
    return run


def last_json_line(text: str) -> dict[str, Any]:
    for line in reversed(text.strip().splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    raise StageFailed("no JSON line in the command's output")


class Progress:
    """A line per stage on stderr; on a terminal also a live elapsed-time counter."""

    def __init__(self, stream=sys.stderr) -> None:
        self.stream = stream
        self.live = stream.isatty()
        self._last_tick = 0.0

    def say(self, message: str) -> None:
        if self.live:
            self.stream.write("\r\033[K")
        print(message, file=self.stream, flush=True)

    def ticker(self, label: str) -> Callable[[float], None]:
        def tick(elapsed: float) -> None:
            if self.live and time.monotonic() - self._last_tick >= 1:
                self._last_tick = time.monotonic()
                self.stream.write(f"\r\033[K  {label}: {elapsed:.0f} s")
                self.stream.flush()

        return tick


def proc_status_mb(pid: int, field_name: str) -> float | None:
    """A memory line of /proc/PID/status (VmRSS, VmHWM) in MB; None once the process is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(f"{field_name}:"):
                return round(int(line.split()[1]) / 1024, 1)
    except (FileNotFoundError, ProcessLookupError):
        return None
    return None


def settle(pid: int, *, quiet_s: float = 2.0, busy_share: float = 0.05, timeout_s: float = 600) -> float:
    """Seconds until the worker's CPU time grew by less than ``busy_share`` of a core over
    ``quiet_s``: its start-up warm-ups (steering, title index) are done, so the timed requests
    measure a warmed worker and not the warm-up beside them."""
    tick = os.sysconf("SC_CLK_TCK")

    def cpu_s() -> float:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / tick  # utime + stime

    started = time.monotonic()
    last = cpu_s()
    while time.monotonic() - started < timeout_s:
        time.sleep(quiet_s)
        now = cpu_s()
        if now - last < busy_share * quiet_s:
            break
        last = now
    return round(time.monotonic() - started, 1)


def percentile(sorted_values: Sequence[float], q: float) -> float:
    index = min(len(sorted_values) - 1, max(0, round(q * (len(sorted_values) - 1))))
    return sorted_values[index]


class Timed:
    """Latencies of one kind of request; a non-2xx answer is an error, not a latency."""

    def __init__(self, name: str, deadline: float) -> None:
        self.name, self.deadline = name, deadline
        self.ms: list[float] = []
        self.errors: dict[str, int] = {}

    def call(self, send: Callable[[], httpx.Response]) -> httpx.Response | None:
        if time.monotonic() > self.deadline:
            raise StageFailed(f"{self.name}: exceeded the stage timeout after {len(self.ms)} requests")
        started = time.perf_counter()
        try:
            response = send()
        except httpx.HTTPError as exc:
            self.errors[type(exc).__name__] = self.errors.get(type(exc).__name__, 0) + 1
            return None
        elapsed = (time.perf_counter() - started) * 1000
        if response.is_success:
            self.ms.append(elapsed)
            return response
        self.errors[str(response.status_code)] = self.errors.get(str(response.status_code), 0) + 1
        return None

    def p(self, q: float) -> float | None:
        return round(percentile(sorted(self.ms), q), 1) if self.ms else None
