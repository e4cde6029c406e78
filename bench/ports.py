"""Ports and start-up for the servers that benchmarks and tests spawn (uvicorn, `recloop serve`,
PostgreSQL, HAProxy, PgBouncer).

A port found free and handed to a child is free only at that moment. Until the child binds it
(seconds later for the service, which loads its models and opens its pools first), any
outgoing connection on the machine may be given it as its ephemeral port, and the child then
fails to start (uvicorn exits with 3). :func:`reserved_port` closes that window: the port stays
bound in this process (SO_REUSEADDR, never listened on) until the caller lets it go. Linux
lets a server that sets SO_REUSEADDR itself (uvicorn, PostgreSQL, HAProxy and PgBouncer all
do) bind and listen on that port meanwhile, and hands it to nothing else: a plain bind fails
and connect() never picks a bound port as its ephemeral one.

:func:`wait_ready` waits for the child to answer, and when it exits first (or never answers)
raises with the tail of its log, so that the cause of a failed start is in the error.
"""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx


@contextmanager
def reserved_port(host: str = "127.0.0.1") -> Iterator[int]:
    """A free TCP port on ``host``, kept from everything but a server that binds it with
    SO_REUSEADDR, until the block ends (hold it until that server listens, or for as long as the
    server is to be restarted on the same port)."""
    with socket.socket() as holder:
        holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        holder.bind((host, 0))
        yield holder.getsockname()[1]


def spawn_logged(command: list[str], log_path: Path, **popen: object) -> subprocess.Popen:
    """Start ``command`` with its stdout and stderr appended to ``log_path`` (for :func:`wait_ready`)."""
    with log_path.open("ab") as log:
        return subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, **popen)


def log_tail(log_path: Path | None, chars: int = 3000) -> str:
    """The end of a child's log, as a suffix for an error message ("" without a log)."""
    if log_path is None or not log_path.exists():
        return ""
    return f":\n{log_path.read_text(errors='replace')[-chars:]}"


def http_ready(url: str) -> Callable[[], bool]:
    """Ready when ``url`` answers 200."""

    def ready() -> bool:
        try:
            return httpx.get(url, timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    return ready


def port_listening(port: int, host: str = "127.0.0.1") -> Callable[[], bool]:
    """Ready when ``host:port`` accepts a connection."""

    def ready() -> bool:
        try:
            socket.create_connection((host, port), timeout=0.5).close()
            return True
        except OSError:
            return False

    return ready


def wait_ready(
    process: subprocess.Popen,
    ready: Callable[[], bool],
    *,
    what: str,
    timeout_s: float,
    log_path: Path | None = None,
    poll_s: float = 0.3,
) -> None:
    """Return once ``ready()``; raise RuntimeError, with the tail of ``log_path``, if ``process``
    exits first or is not ready within ``timeout_s`` (it is then terminated)."""
    deadline = time.monotonic() + timeout_s
    while True:
        if ready():
            return
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited with {process.returncode} while starting{log_tail(log_path)}")
        if time.monotonic() > deadline:
            process.terminate()
            raise RuntimeError(f"{what} not ready after {timeout_s:.0f} s{log_tail(log_path)}")
        time.sleep(poll_s)
