"""Progress bars that suit where they are written.

A terminal sees tqdm's live bar. A log (stderr is a file or a pipe: `make serve > log`, systemd,
Docker) gets a plain line at most every ``LOG_INTERVAL_S`` seconds, the first after that long, and
one at the end of a bar that was shown (a step done sooner leaves no line): tqdm's
default redraws on every update and left about 150 kB of bar lines in a first start's log.
Every progress bar in recloop is made here.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import IO, Any, TypeVar

from tqdm import tqdm

LOG_INTERVAL_S = 10.0
T = TypeVar("T")


class _Lines:
    """A stream for tqdm that writes each redraw as one line (no carriage returns, no blank lines)."""

    def __init__(self, stream: IO[str]):
        self.stream = stream
        self._last = ""

    def write(self, text: str) -> None:
        line = text.replace("\r", "").strip()
        state = line.split("[", 1)[0]  # the count, without the timing that closing recomputes
        if line and state != self._last:  # closing redraws the last state once more
            self.stream.write(line + "\n")
            self._last = state

    def flush(self) -> None:
        self.stream.flush()


def _is_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # closed or not a real stream
        return False


def progress_bar(iterable: Iterable[T] | None = None, **kwargs: Any) -> tqdm:
    """``tqdm(iterable, **kwargs)``, throttled to a line every few seconds outside a terminal."""
    stream = kwargs.pop("file", None) or sys.stderr
    if _is_terminal(stream):
        return tqdm(iterable, file=stream, **kwargs)
    kwargs.setdefault("delay", LOG_INTERVAL_S)  # a bar done sooner leaves no line at all
    kwargs.setdefault("mininterval", LOG_INTERVAL_S)
    kwargs.setdefault("maxinterval", LOG_INTERVAL_S)
    kwargs.setdefault("ncols", 100)
    kwargs.setdefault("ascii", True)
    return tqdm(iterable, file=_Lines(stream), **kwargs)


def quiet_library_bars(stream: Any = None) -> None:
    """Outside a terminal, turn off the bars libraries draw themselves (transformers' weight loading)."""
    if _is_terminal(stream or sys.stderr):
        return
    try:
        from transformers.utils import logging as transformers_logging
    except ImportError:
        return
    transformers_logging.disable_progress_bar()
