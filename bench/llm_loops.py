"""LLM benchmark: the feedback loop against a real model, as a user with a local LLM would run it.

Runs the loop with LLM agents on the first test rows of each dataset (20 LLaRA candidates, seed 0)
through the same graph and client as the service, and reports what the issue asks to be measured:

- p50/p95 time of one call attempt (per agent) and of one loop;
- calls, prompt, completion and cached tokens per loop and per accepted item;
- first-attempt valid-answer rate and fallback rate per agent, with the fallbacks' causes;
- the largest completion of any attempt against its cap;
- HR@1 of the LLM loop, of the offline loop and of the rec model alone on the same rows, with 95 %
  bootstrap intervals over users and the paired intervals of the differences;
- the LLM weights used (fitted on validation by ``recloop calibrate --agents llm``, which this runs
  first when the endpoint has none) and the chosen prompt form;
- our token totals against the server's own counters (llama.cpp ``--metrics``), when it has them.

    bench/llm_local.sh start && eval "$(bench/llm_local.sh env)"
    python -m bench.llm_loops --datasets movielens lastfm --rows 20 [--json]

Settings (models, caps, budget) come from the environment like every recloop command.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
import sys
import time
from collections import Counter
from typing import Any

import httpx
import torch

from app.settings import Settings, get_settings
from graph.runner import LoopResult, LoopRunner
from lab.calibration.deps import calibrated_deps
from lab.eval.common import sampled_candidate_rows
from lab.eval.llm_calibrate import calibrate_llm
from lab.eval.metrics import bootstrap_interval, paired_interval
from llm.client import server_root
from llm.usage import sum_usage
from recmodels.artifacts import load_latest_scorer
from recmodels.dataset import Dataset

TOKEN_KEYS = ("calls", "prompt_tokens", "completion_tokens")
SERVER_COUNTERS = (
    "prompt_tokens_total",
    "prompt_tokens_cached_total",
    "tokens_predicted_total",
    "prompt_seconds_total",
    "tokens_predicted_seconds_total",
)


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100); 0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered) + 0.5) - 1))]


def server_counters(base_url: str) -> dict[str, float] | None:
    """llama.cpp's token counters (started with --metrics), or None for servers without them."""
    try:
        response = httpx.get(f"{server_root(base_url)}/metrics", timeout=10)
    except httpx.HTTPError:
        return None
    if response.status_code != 200:
        return None
    found = {
        name: re.search(rf"^llamacpp:{name} (\S+)$", response.text, re.MULTILINE) for name in SERVER_COUNTERS
    }
    return {name: float(match.group(1)) if match else 0.0 for name, match in found.items()}


def run_loops(
    settings: Settings,
    dataset_name: str,
    rows: int,
    max_rounds: int,
    concurrency: int,
    calibrate_rows: int = 60,
    budget_calls: int | None = None,
):
    dataset = Dataset.open(settings.datasets_dir, dataset_name)
    rec = load_latest_scorer(settings.models_dir, dataset, settings.rec_model)
    reward = load_latest_scorer(settings.models_dir, dataset, settings.reward_model)
    test_rows, _ = dataset.eval_rows("test")
    cases = sampled_candidate_rows(
        test_rows[:rows], dataset.n_items, seed=0, n_candidates=settings.n_candidates
    )
    runner = LoopRunner()

    slots = asyncio.Semaphore(concurrency)

    async def one(deps, case) -> tuple[Any, LoopResult, float]:
        async with slots:
            started = time.perf_counter()
            result = await runner.run(deps, list(case.history), list(case.candidates), max_rounds)
            return case, result, time.perf_counter() - started

    async def all_loops():
        config = settings.loop_config()
        fit = await calibrate_llm(
            config, dataset, rec, reward, n_rows=calibrate_rows, budget_calls=budget_calls, progress=False,
            echo=lambda line: print(line, file=sys.stderr), concurrency=concurrency,
        )  # fmt: skip
        deps = await calibrated_deps(config, dataset, rec, reward, "llm", llm_weights=fit.weights)
        offline = await calibrated_deps(config, dataset, rec, reward, "offline")
        offline_done = [await one(offline, case) for case in cases]
        before = server_counters(settings.llm_base_url or "")
        started = time.perf_counter()
        done = list(await asyncio.gather(*(one(deps, case) for case in cases)))
        wall = time.perf_counter() - started
        extra = {"offline": offline_done, "weights": deps.llm_weights, "calibration": fit.summary()}
        return done, wall, before, server_counters(settings.llm_base_url or ""), extra

    return asyncio.run(all_loops())


def summarise(
    dataset: str,
    settings: Settings,
    done: list,
    wall: float,
    before: dict | None,
    after: dict | None,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    results = [result for _, result, _ in done]
    rounds = [r for result in results for r in result.rounds]
    attempts = [a for r in rounds for a in r.get("llm_attempts", [])]
    usage = sum_usage(result.usage for result in results)
    accepted = sum(result.stop_reason == "accepted" for result in results)
    loop_seconds = [seconds for _, _, seconds in done]
    hits = [float(result.final_item == case.target) for case, result, _ in done]
    prior_hits = [float(result.prior_item == case.target) for case, result, _ in done]
    caps = {"rec": settings.llm_max_tokens_rec, "user": settings.llm_max_tokens_user}
    out: dict[str, Any] = {
        "dataset": dataset,
        "loops": len(results),
        "max_rounds": max(r.n_rounds for r in results) if results else 0,
        "mean_rounds": statistics.fmean(r.n_rounds for r in results) if results else 0.0,
        "accepted": accepted,
        "wall_s": round(wall, 1),
        "loop_p50_s": round(percentile(loop_seconds, 50), 2),
        "loop_p95_s": round(percentile(loop_seconds, 95), 2),
        "loop_max_s": round(max(loop_seconds, default=0.0), 2),
        "usage": dict(usage),
        "per_loop": {k: round(usage[k] / max(len(results), 1), 1) for k in TOKEN_KEYS + ("cached_tokens",)},
        "per_accepted_item": {
            k: round(usage[k] / accepted, 1) if accepted else None
            for k in TOKEN_KEYS
        },
        "cached_share": round(usage["cached_tokens"] / max(usage["prompt_tokens"], 1), 3),
        "hr1": statistics.fmean(hits) if hits else 0.0,
        "hr1_ci95": bootstrap_interval(hits),
        "model_hr1": statistics.fmean(prior_hits) if prior_hits else 0.0,
        "model_hr1_ci95": bootstrap_interval(prior_hits),
    }  # fmt: skip
    for agent in ("rec", "user"):
        out[agent] = agent_summary(agent, rounds, attempts, caps[agent])
    out["counted_locally"] = usage["counted_calls"]
    if extra:
        offline_hits = [float(result.final_item == case.target) for case, result, _ in extra["offline"]]
        weights = extra["weights"]
        out["offline_hr1"] = statistics.fmean(offline_hits) if offline_hits else 0.0
        out["offline_hr1_ci95"] = bootstrap_interval(offline_hits)
        for name, other in (("model", prior_hits), ("offline", offline_hits)):
            diff = paired_interval([a - b for a, b in zip(hits, other, strict=True)])
            out[f"hr1_minus_{name}"] = {"mean": diff.mean, "low": diff.low, "high": diff.high}
        out["llm_weights"] = weights.summary() if weights else None
        out["llm_weights_status"] = weights.status if weights else None
        out["calibration"] = extra["calibration"]
    if before is not None and after is not None:
        served = {name: after[name] - before[name] for name in SERVER_COUNTERS}
        server_prompt = served["prompt_tokens_total"] + served["prompt_tokens_cached_total"]
        out["server"] = {
            "prompt_tokens": server_prompt,
            "cached_tokens": served["prompt_tokens_cached_total"],
            "completion_tokens": served["tokens_predicted_total"],
            "prompt_ratio": round(usage["prompt_tokens"] / server_prompt, 4) if server_prompt else None,
            "completion_ratio": round(usage["completion_tokens"] / served["tokens_predicted_total"], 4)
            if served["tokens_predicted_total"]
            else None,
            # the server's own speeds over this run: tokens evaluated / its seconds evaluating them
            "prompt_tokens_per_s": _rate(served["prompt_tokens_total"], served["prompt_seconds_total"]),
            "decode_tokens_per_s": _rate(
                served["tokens_predicted_total"], served["tokens_predicted_seconds_total"]
            ),
        }
    return out


def _rate(tokens: float, seconds: float) -> float | None:
    return round(tokens / seconds, 1) if seconds > 0 else None


def _pair(a: Any, b: Any, fmt: str = "{}") -> str:
    return f"{fmt.format(a)} / {fmt.format(b)}"


def _ci(value: float, interval: tuple[float, float]) -> str:
    return f"{value:.3f} [{interval[0]:.3f}, {interval[1]:.3f}]"


COLUMNS = (
    "dataset", "loops", "rounds (mean)", "loop p50 / p95 s", "rec call p50 / p95 s",
    "user call p50 / p95 s", "calls / loop", "prompt / loop (cached)", "completion / loop",
    "first valid rec / user", "fallback rec / user", "HR@1 loop [95 % CI]", "HR@1 model [95 % CI]",
    "tokens vs server (prompt / completion)", "HR@1 offline loop [95 % CI]",
    "LLM loop - model [paired]", "LLM loop - offline [paired]", "weights rec / user (form)",
    "server prompt / decode tok/s",
)  # fmt: skip


def _diff(d: dict[str, float] | None) -> str:
    return f"{d['mean']:+.3f} [{d['low']:+.3f}, {d['high']:+.3f}]" if d else "n/a"


def _weights(w: dict[str, Any] | None) -> str:
    if not w:
        return "n/a"
    fitted = "" if w["learned"] else ", default"
    return f"{w['rec_weight']:g} / {w['user_weight']:g} ({w['prompt_form']}{fitted})"


def agent_summary(agent: str, rounds: list[dict], attempts: list[dict], cap: int) -> dict[str, Any]:
    """One agent's call times, valid-answer and fallback rates, and its largest completion."""
    mine = [a for a in attempts if a["agent"] == agent]
    first = [a for a in mine if a["attempt"] == 1]
    fallbacks = [r for r in rounds if r.get(f"{agent}_fallback")]
    causes = Counter(str(r[f"{agent}_fallback_cause"]).split(":")[0] for r in fallbacks)
    seconds = [a["seconds"] for a in mine]

    def mean(key: str) -> float:
        return round(statistics.fmean(a[key] for a in mine), 1) if mine else 0.0

    return {
        "attempts": len(mine),
        "call_p50_s": round(percentile(seconds, 50), 2),
        "call_p95_s": round(percentile(seconds, 95), 2),
        "first_attempt_valid": round(sum(a["ok"] for a in first) / len(first), 3) if first else None,
        "fallback_rate": round(len(fallbacks) / len(rounds), 3) if rounds else None,
        "fallback_causes": dict(causes),
        "max_completion_tokens": max((a["completion_tokens"] for a in mine), default=0),
        "cap": cap,
        "mean_prompt_tokens": mean("prompt_tokens"),
        "mean_completion_tokens": mean("completion_tokens"),
    }


def table(rows: list[dict[str, Any]]) -> str:
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for r in rows:
        per_loop, rec, user, server = r["per_loop"], r["rec"], r["user"], r.get("server")
        cells = [
            r["dataset"],
            r["loops"],
            f"{r['mean_rounds']:.2f}",
            _pair(r["loop_p50_s"], r["loop_p95_s"], "{:.1f}"),
            _pair(rec["call_p50_s"], rec["call_p95_s"], "{:.1f}"),
            _pair(user["call_p50_s"], user["call_p95_s"], "{:.1f}"),
            f"{per_loop['calls']:.1f}",
            f"{per_loop['prompt_tokens']:.0f} ({per_loop['cached_tokens']:.0f})",
            f"{per_loop['completion_tokens']:.0f}",
            _pair(rec["first_attempt_valid"], user["first_attempt_valid"]),
            _pair(rec["fallback_rate"], user["fallback_rate"]),
            _ci(r["hr1"], r["hr1_ci95"]),
            _ci(r["model_hr1"], r["model_hr1_ci95"]),
            _pair(server["prompt_ratio"], server["completion_ratio"]) if server else "n/a",
            _ci(r["offline_hr1"], r["offline_hr1_ci95"]) if "offline_hr1" in r else "n/a",
            _diff(r.get("hr1_minus_model")),
            _diff(r.get("hr1_minus_offline")),
            _weights(r.get("llm_weights")),
            _pair(server["prompt_tokens_per_s"], server["decode_tokens_per_s"]) if server else "n/a",
        ]
        lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=["movielens", "lastfm"])
    parser.add_argument("--rows", type=int, default=20, help="First N test rows (len_seq >= 3) per dataset.")
    parser.add_argument("--max-rounds", type=int, default=4)
    parser.add_argument("--concurrency", type=int, default=1, help="Loops at once (1: pure latency).")
    parser.add_argument("--calibrate-rows", type=int, default=60, help="Validation rows of the LLM fit.")
    parser.add_argument("--budget-calls", type=int, default=None, help="Call budget of the LLM fit.")
    parser.add_argument("--out", default=None, help="Also write the results as JSON to this file.")
    parser.add_argument("--json", action="store_true", help="Print one JSON object as the last line.")
    args = parser.parse_args(argv)
    settings = get_settings()
    if not settings.llm_enabled:
        sys.exit("set RECLOOP_LLM_BASE_URL (bench/llm_local.sh start prints it)")
    torch.set_num_threads(settings.torch_threads)
    rows = []
    for name in args.datasets:
        done, wall, before, after, extra = run_loops(
            settings,
            name,
            args.rows,
            args.max_rounds,
            args.concurrency,
            args.calibrate_rows,
            args.budget_calls,
        )
        rows.append(summarise(name, settings, done, wall, before, after, extra))
        print(f"{name}: {len(done)} loops in {wall:.0f} s", file=sys.stderr)
    result = {
        "model": settings.llm_model,
        "method": settings.llm_structured_method,
        "rec_model": settings.rec_model,
        "reward_model": settings.reward_model,
        "concurrency": args.concurrency,
        "caps": {k: getattr(settings, f"llm_max_tokens_{k}") for k in ("rec", "user", "items", "parser")},
        "thoughts_max_chars": settings.llm_thoughts_max_chars,
        "loop_budget_s": settings.llm_loop_budget_s,
        "rows": rows,
    }
    print(table(rows))
    if args.out:
        with open(args.out, "w") as fh:
            json.dump(result, fh, indent=2)
    if args.json:
        print(json.dumps(result))


if __name__ == "__main__":
    main()
