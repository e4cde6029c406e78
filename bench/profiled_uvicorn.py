"""uvicorn with a CPU-time sampling profiler, for bench/service_profile.py.

    RECLOOP_BENCH_PROFILE_OUT=stacks.txt python -m bench.profiled_uvicorn app.main:create_app --factory

Takes uvicorn's own arguments. SIGUSR1 starts sampling, SIGUSR2 stops it and writes the samples
as collapsed stacks (``frame;frame;... microseconds``). The sampler is the kernel's profiling timer
(``ITIMER_PROF``): it fires after every ``INTERVAL_S`` of CPU the process uses, and records the
main thread's Python stack (where the event loop, the routes and the graph run) with the process
CPU time since the previous sample: Python runs the handler only between bytecodes, so the signals
of a long C call (a torch op, a syscall) arrive as one, and weighing by CPU time keeps its share.
So samples are CPU time, not wall time: on a shared, loaded machine a wall-clock sampler (py-spy
included, which counts a runnable thread that waits for a core as busy) mostly measures the queue
for the CPU.
Time inside C code (uvloop, torch, psycopg's libpq) is charged to the Python frame that called it.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from collections import Counter
from pathlib import Path
from types import FrameType

INTERVAL_S = 0.002
"""One sample per 2 ms of the process's CPU (cheap enough not to change what it measures)."""
_ROOTS = (
    "site-packages/",
    f"{os.getcwd()}/",
    f"/lib/python{sys.version_info.major}.{sys.version_info.minor}/",
)


def _where(frame: FrameType) -> str:
    """``function (file)``, the file relative to its site-packages, the checkout or the stdlib."""
    file = frame.f_code.co_filename
    for root in _ROOTS:
        file = file.split(root, 1)[-1]
    return f"{frame.f_code.co_qualname} ({file})"


def main() -> None:
    out = Path(os.environ["RECLOOP_BENCH_PROFILE_OUT"])
    samples: Counter[str] = Counter()
    last = [0.0]

    def sample(_signum: int, frame: FrameType | None) -> None:
        now = time.process_time()
        spent, last[0] = now - last[0], now
        stack = []
        while frame is not None:
            stack.append(_where(frame))
            frame = frame.f_back
        samples[";".join(reversed(stack))] += spent

    def start(*_) -> None:
        samples.clear()
        last[0] = time.process_time()
        signal.setitimer(signal.ITIMER_PROF, INTERVAL_S, INTERVAL_S)

    def stop(*_) -> None:
        signal.setitimer(signal.ITIMER_PROF, 0, 0)
        tmp = out.with_suffix(".tmp")
        tmp.write_text("".join(f"{stack} {round(s * 1e6)}\n" for stack, s in samples.items() if s > 0))
        tmp.replace(out)

    signal.signal(signal.SIGPROF, sample)
    signal.signal(signal.SIGUSR1, start)
    signal.signal(signal.SIGUSR2, stop)
    from uvicorn.main import main as uvicorn_main

    uvicorn_main(sys.argv[1:])


if __name__ == "__main__":
    main()
