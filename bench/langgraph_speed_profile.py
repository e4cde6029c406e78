"""Where each server's CPU goes in bench/langgraph_speed.py: py-spy samples of both, under the same load.

After the timed slices, each server in turn gets one more slice (the highest concurrency,
``--profile-call``) while ``py-spy record`` samples its process (``--nonblocking``: the server is never
paused, so both pay the same small cost; idle threads are not sampled). The samples are split by
what they run (bench/service_profile.py's areas and layers, with LangGraph's server as one more),
and each share is charged per run: share x that slice's CPU per run (/proc).

py-spy (MIT) is installed in the benchmark's own venv with LangGraph's server, not in recloop's.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.service_profile import AREAS, LAYERS, summarise

LANGGRAPH_SERVER = (
    "LangGraph's server (langgraph_api, langgraph_runtime_inmem)",
    r"langgraph_(api|runtime_inmem)/",
)
# Before the catch-all: a frame of LangGraph's server anywhere in a stack whose work is none of the
# loop's (models, checkpoints, nodes, engine) is the server's own.
SPEED_AREAS = (*AREAS[:-1], (LANGGRAPH_SERVER[0], r"\(" + LANGGRAPH_SERVER[1]), AREAS[-1])
SPEED_LAYERS = (
    *LAYERS[:-1],
    (LANGGRAPH_SERVER[0], "^" + LANGGRAPH_SERVER[1]),
    ("logging (structlog, logging)", r"^(structlog|logging)/"),
    LAYERS[-1],
)
_PREFIX = re.compile(r"\((?:[^()]*/site-packages/|[^()]*/lib/python3\.\d+/|(?P<repo>/[^()]*?/)(?=(app|graph|"
                     r"recmodels|checkpointer|llm|steering|bench)/))")  # fmt: skip


_LOOP_ENTRY = re.compile(r"^(Runner\.run \(asyncio/runners|BaseEventLoop\.run_(forever|until_complete) \()")
_CODE_FRAME = re.compile(r"\([^()]*(\.pyx?|>)(:\d+)?\)$")


def relative_stacks(raw: str) -> str:
    """py-spy's collapsed stacks with each file relative to its site-packages, the stdlib or the
    checkout (as bench/profiled_uvicorn.py writes them), and without py-spy's process/thread frames."""
    lines = []
    for line in raw.splitlines():
        if not line.strip():
            continue
        stack, count = line.rsplit(" ", 1)
        frames = [f for f in stack.split(";") if _CODE_FRAME.search(f)]  # not process / thread frames
        # Both servers run everything under uvicorn's Server.run and asyncio's Runner.run: cut the
        # stack to the event loop's callback, or every sample would match uvicorn (HTTP).
        entry = [i for i, f in enumerate(frames) if _LOOP_ENTRY.match(_PREFIX.sub("(", f))]
        if entry:
            frames = frames[entry[-1] + 1 :] or frames[entry[-1] :]
        lines.append(f"{';'.join(_PREFIX.sub('(', f) for f in frames)} {count}")
    return "\n".join(lines)


def profile_server(
    server: dict[str, Any], args: argparse.Namespace, pyspy: Path, out_dir: Path, load_command
) -> dict[str, Any]:
    """One slice of load on ``server`` while py-spy samples it; the summary, charged per run."""
    out_dir.mkdir(parents=True, exist_ok=True)
    raw_path = out_dir / f"profile-{server['name']}.txt"
    load = subprocess.Popen(load_command, stdout=subprocess.PIPE, text=True)
    try:
        time.sleep(args.warmup + 1)  # the load generator's threads and warm-up first
        sampled = subprocess.run(
            [str(pyspy), "record", "--pid", str(server["pid"]), "--duration", str(int(args.profile_s)),
             "--rate", "200", "--nonblocking", "--format", "raw", "--output", str(raw_path)],
            check=False, capture_output=True, text=True,
        )  # fmt: skip
        if sampled.returncode != 0:
            raise RuntimeError(
                f"py-spy failed on {server['name']}: {(sampled.stderr or sampled.stdout)[-500:]}"
            )
        stdout, _ = load.communicate()
    finally:
        if load.poll() is None:
            load.kill()
            load.wait()
    if load.returncode != 0:
        raise RuntimeError(f"the profiled load on {server['name']} failed")
    piece = json.loads(stdout.strip().splitlines()[-1])
    cpu_ms = 1000 * piece["server_cpu_s"] / piece["requests"] if piece["requests"] else None
    return {
        "server": server["name"],
        "throughput_rps": piece["throughput_rps"],
        "samples_file": str(raw_path),
        **charged(raw_path.read_text(), cpu_ms),
    }


def charged(raw: str, cpu_ms: float | None) -> dict[str, Any]:
    """py-spy's samples split by area and layer, each share charged as CPU ms per run."""
    summary = summarise(relative_stacks(raw), 12, layers_by=SPEED_LAYERS, areas_by=SPEED_AREAS)
    summary.pop("sampled_cpu_s")  # py-spy's weights are sample counts, not microseconds
    for key in ("areas", "layers_self"):
        summary[f"{key}_ms_per_run"] = [
            [label, round(share * cpu_ms, 2) if cpu_ms else None] for label, share in summary[key]
        ]
    return {"cpu_ms_per_run": cpu_ms and round(cpu_ms, 2), **summary}


def markdown(profiles: list[dict[str, Any]], key: str = "areas_ms_per_run") -> str:
    """One row per area (or layer), a column of CPU ms per run for each server."""
    labels = list(dict.fromkeys(label for p in profiles for label, _ in p[key]))
    by_server = [dict(p[key]) for p in profiles]
    lines = [
        "| where | " + " | ".join(f"{p['server']} CPU ms/run" for p in profiles) + " |",
        "|---|" + "---:|" * len(profiles),
    ]
    for label in labels:
        cells = [f"{row[label]:.1f}" if row.get(label) is not None else "-" for row in by_server]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    totals = [f"**{p['cpu_ms_per_run']:.1f}**" if p["cpu_ms_per_run"] else "-" for p in profiles]
    lines.append("| **all (/proc)** | " + " | ".join(totals) + " |")
    return "\n".join(lines)


def echo_profile(profile: dict[str, Any]) -> None:
    print(f"{profile['server']}: top functions by self share", file=sys.stderr)
    for name, share in profile["functions_self"][:8]:
        print(f"  {100 * share:5.1f}%  {name}", file=sys.stderr)
