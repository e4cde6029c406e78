"""Start-up that a person can read and stop: what failed and how to fix it, and SIGTERM at any point.

A worker loads models, reads calibrations and encodes a catalog's titles inside its
lifespan, on the event loop's thread, before it answers anything. uvicorn's own signal handlers
only set a flag that it reads once start-up is over, so a SIGTERM sent meanwhile went unanswered
for minutes (a supervisor then had to SIGKILL). :func:`interruptible` makes a stop signal end the
start-up at once; :func:`failure_lines` turns the cause of a failed start into the last lines a
person reads.
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


class StartupInterrupted(BaseException):  # noqa: N818 - a stop, like KeyboardInterrupt, not an error
    """A stop signal arrived while the service was starting; nothing was served."""

    def __init__(self, signum: int):
        super().__init__(f"stopped by {signal.Signals(signum).name} during start-up")
        self.signum = signum


class _State:
    interrupted: int | None = None  # the signal that stopped a start-up in this process
    error: BaseException | None = None  # what made this process's start-up fail


state = _State()


def _quiet_uvicorn(record: logging.LogRecord) -> bool:
    """Once a stop signal ended the start-up, uvicorn's "startup failed" traceback is noise."""
    return state.interrupted is None


def _raise_stop(signum: int, frame: object) -> None:
    state.interrupted = signum
    raise StartupInterrupted(signum)


@contextmanager
def interruptible() -> Iterator[None]:
    """While the body runs, SIGTERM and SIGINT raise :class:`StartupInterrupted` where the main thread
    is (inside an encoding loop, a model load, a fit); the previous handlers come back afterwards.
    Outside the main thread (an in-process test server) signals cannot be handled: the body just runs."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {signum: signal.getsignal(signum) for signum in STOP_SIGNALS}
    logging.getLogger("uvicorn.error").addFilter(_quiet_uvicorn)
    for signum in STOP_SIGNALS:
        signal.signal(signum, _raise_stop)
    try:
        yield
    except Exception as exc:
        state.error = exc
        raise
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def failure_lines(exc: BaseException | None) -> list[str]:
    """The last lines of a start that failed: its cause, then the command that fixes it."""
    if exc is None:
        return [
            "recloop did not start: a worker failed during start-up (its error is above)",
            "  fix what it names, or run `recloop prepare` (rebuilds missing data and models); start again",
        ]
    cause = str(exc) or type(exc).__name__
    lines = [f"recloop did not start: {type(exc).__name__}: {cause}"]
    if "`recloop " not in cause:  # the message names no command of its own
        lines.append("  `recloop prepare` rebuilds missing data, models and calibrations; then start again")
    return lines
