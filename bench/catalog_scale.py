"""What a large catalog costs a serving worker: the title index (catalog search) and the model's weights.

    python -m bench.catalog_scale                          # 10^6 items (a minute or two)
    python -m bench.catalog_scale --items 100000 --json

- **Title index** (app/services/title_search.py): the time to build it once for ``--items`` synthetic
  titles, then p50/p99 of a search (first words, two words, whole titles, misses, 10 results),
  beside a Python scan of every title (what a search did before the index), on the same queries.
- **Weights** (recmodels/artifacts.py): a SASRec with ``--items`` items is saved, then two worker-like
  processes load it and read every weight, memory-mapped (as served) and copied (``mmap=False``,
  as before), and are measured together (``/proc/<pid>/smaps_rollup``): RSS, PSS (shared pages
  split between the processes that map them) and private memory. Mapped weights are one copy in
  the page cache: they count in each RSS, but in the PSS only once over all workers.

``--json``: one JSON object on the last line.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from app.services.title_search import TitleIndex, match_rank
from recmodels.dataset import Item

SYLLABLES = ("ka", "to", "ri", "mo", "the", "star", "war", "love", "night", "dark", "sun", "ra", "ne", "lo")


def synthetic_titles(n: int, seed: int) -> list[Item]:
    rng = random.Random(seed)

    def word() -> str:
        return "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(1, 3))).title()

    return [Item(i, " ".join(word() for _ in range(rng.randint(1, 4)))) for i in range(n)]


def _queries(items: list[Item], n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    queries = []
    for i in range(n):
        words = rng.choice(items).title.split()
        kind = i % 4
        queries.append(
            " ".join(words[:1] if kind == 0 else words[:2] if kind == 1 else words) if kind < 3 else "xyzzy"
        )
    return queries


def _ms(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "p50": round(statistics.median(ordered), 3),
        "p99": round(ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))], 3),
    }


def title_index(n_items: int, n_queries: int, seed: int) -> dict[str, Any]:
    items = synthetic_titles(n_items, seed)
    started = time.perf_counter()
    index = TitleIndex.build([item.title for item in items])  # item i is titled titles[i]
    build_s = time.perf_counter() - started
    queries = _queries(items, n_queries, seed)
    indexed, scanned = [], []
    for query in queries:
        needle = query.casefold()
        started = time.perf_counter()
        index.search(needle, 10)
        indexed.append((time.perf_counter() - started) * 1000)
    for query in queries[:20]:  # a scan is slow: a few are enough
        needle = query.casefold()
        started = time.perf_counter()
        ranked = sorted(
            (rank, len(i.title), i.id) for i in items if (rank := match_rank(i.title, needle)) is not None
        )
        ranked[:10]
        scanned.append((time.perf_counter() - started) * 1000)
    return {
        "index_build_s": round(build_s, 2),
        "search_ms": _ms(indexed),
        "scan_ms": _ms(scanned),
        "queries": len(queries),
    }


_READER = """
import os, sys, torch
from recmodels import artifacts
if sys.argv[2] == "copy":  # what loading did before memory-mapping: a private copy of every weight
    load = torch.load
    artifacts.torch.load = lambda *a, **k: load(*a, **{**k, "mmap": False})
scorer = artifacts.load_scorer(sys.argv[1])
with torch.no_grad():
    read = sum(float(t.sum()) for t in scorer.model.state_dict().values() if t.is_floating_point())
print("ready", flush=True)
sys.stdin.readline()  # every reader has read everything: measured together
lines = open(f"/proc/{os.getpid()}/smaps_rollup").read().splitlines()[1:]
kb = {name: int(value.split()[0]) for name, value in (line.split(":", 1) for line in lines)}
print(kb["Rss"] // 1024, kb["Pss"] // 1024, (kb["Private_Clean"] + kb["Private_Dirty"]) // 1024, flush=True)
sys.stdin.readline()  # alive until every reader is measured
"""


def weights(n_items: int, readers: int = 2) -> dict[str, Any]:
    import os
    import types

    from recmodels.artifacts import save_artifact
    from recmodels.registry import build_model

    with tempfile.TemporaryDirectory(prefix="recloop-catalog-scale-") as tmp:
        path = Path(tmp) / "sasrec.pt"
        model = build_model("sasrec", n_items)
        fake = types.SimpleNamespace(name="synthetic", fingerprint="0" * 64)
        save_artifact(path, model, model_name="sasrec", dataset=fake, metrics={})
        del model
        os.sync()  # the file's pages clean in the page cache, as a trained artifact's are
        result: dict[str, Any] = {"artifact_mb": round(path.stat().st_size / 2**20, 1), "readers": readers}
        for mode in ("mmap", "copy"):
            started = [
                subprocess.Popen(  # noqa: S603
                    [sys.executable, "-c", _READER, str(path), mode],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    text=True,
                )
                for _ in range(readers)
            ]
            for reader in started:
                assert reader.stdout is not None and reader.stdout.readline().strip() == "ready"
            measured = []
            for reader in started:
                assert reader.stdin is not None and reader.stdout is not None
                reader.stdin.write("measure\n")
                reader.stdin.flush()
                rss, pss, private = (int(v) for v in reader.stdout.readline().split())
                measured.append({"rss_mb": rss, "pss_mb": pss, "private_mb": private})
            for reader in started:
                reader.communicate("done\n", timeout=60)
            result[mode] = measured
            result[f"{mode}_pss_total_mb"] = sum(m["pss_mb"] for m in measured)
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-weights", action="store_true", help="Measure the title index only.")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    print(f"title index over {args.items:,} synthetic titles ...", file=sys.stderr, flush=True)
    result: dict[str, Any] = {
        "items": args.items,
        "title_index": title_index(args.items, args.queries, args.seed),
    }
    if not args.no_weights:
        print(
            f"SASRec weights for {args.items:,} items, two readers each way ...", file=sys.stderr, flush=True
        )
        result["weights"] = weights(args.items)
    if args.json:
        print(json.dumps(result))
    else:
        print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
