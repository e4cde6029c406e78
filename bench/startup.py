"""How long `recloop serve` takes, on prepared files, to answer ``GET /readyz`` with 200 (issue 44's
target: under 10 s), and the CPU seconds it spent until then (what a loaded machine cannot inflate).

    recloop prepare                                   # RECLOOP_DATA_DIR: once, fits everything
    python -m bench.startup --json                    # serve --no-migrate --no-prepare, one worker
    python -m bench.startup --json -- --no-migrate    # serve checking what prepare made first

Runs in the environment's RECLOOP_DATA_DIR and RECLOOP_DATABASE_URL (migrated already); the LLM
endpoint is left out (offline agents). The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

DEFAULT_SERVE_ARGS = ("--no-migrate", "--no-prepare")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure(serve_args: list[str], timeout_s: float) -> dict:
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if k != "RECLOOP_LLM_BASE_URL"}
    command = [sys.executable, "-m", "cli", "serve", "--host", "127.0.0.1", "--port", str(port), *serve_args]
    started = time.monotonic()
    server = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    ready_s = cpu_s = None
    try:
        while time.monotonic() - started < timeout_s and server.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=1) as answer:
                    if answer.status == 200:
                        ready_s, cpu_s = time.monotonic() - started, _cpu_seconds(server.pid)
                        break
            except OSError:
                pass
            time.sleep(0.1)
    finally:
        server.terminate()
        server.wait(timeout=120)
    return {
        "serve_args": serve_args,
        "readyz_200_s": None if ready_s is None else round(ready_s, 2),
        "cpu_s_until_ready": cpu_s,
        "load_average_1m": round(os.getloadavg()[0], 1),
        "cpus": os.cpu_count(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--timeout", type=float, default=300.0, help="Give up after this many seconds.")
    parser.add_argument("--json", action="store_true", help="Print only the JSON object.")
    parser.add_argument("serve_args", nargs="*", help="Arguments of `recloop serve` (after --).")
    args = parser.parse_args()
    result = measure(args.serve_args or list(DEFAULT_SERVE_ARGS), args.timeout)
    if not args.json:
        print(f"/readyz 200 after {result['readyz_200_s']} s ({result['cpu_s_until_ready']} s CPU)")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
