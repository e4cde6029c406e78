"""Progress bars in a log: a plain line every few seconds, not a redraw per update (issue 46)."""

from __future__ import annotations

import io
import time

from recmodels.progress import progress_bar


def test_a_quick_step_leaves_no_line_in_a_log():
    log = io.StringIO()
    with progress_bar(total=10_000, desc="encode", file=log) as bar:
        for _ in range(10_000):
            bar.update(1)
    assert log.getvalue() == ""  # tqdm's default wrote ~10,000 carriage-return redraws here


def test_a_long_step_writes_plain_lines_at_the_interval():
    log = io.StringIO()
    started = time.monotonic()
    with progress_bar(total=50, desc="train", file=log, delay=0.1, mininterval=0.1, maxinterval=0.1) as bar:
        for _ in range(50):
            time.sleep(0.01)
            bar.update(1)
    elapsed = time.monotonic() - started
    lines = log.getvalue().splitlines()
    assert "\r" not in log.getvalue() and all(line.startswith("train:") for line in lines)
    assert 1 <= len(lines) <= elapsed / 0.1 + 2  # a line per interval, not one per update (50)
    assert lines[-1].startswith("train: 100%")
