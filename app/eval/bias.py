"""Popularity bias: do the loop's recommendations lean to popular items more than the rec
model's? Popularity = how often an item is a training target (each training interaction once).
Reported per pick kind: mean popularity percentile (0.5 = popularity-blind) and the Gini of how
often each catalog item is recommended (0 = spread evenly, near 1 = always the same few).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from app.eval.common import ExperimentOutput, bar_plot, markdown_table
from app.eval.loops import EvalContext, eval_candidate_rows, flow_jobs, run_loop_jobs
from app.eval.metrics import mean_popularity_percentile, popularity_percentiles, recommendation_gini
from graph.state import total_usage

PICK_KINDS = (("target", "target"), ("model", "model_pick"), ("agent", "agent_pick"), ("flow", "flow_pick"))


@dataclass(frozen=True)
class BiasOptions:
    rec_models: tuple[str, ...]
    seeds: tuple[int, ...]
    max_rows: int | None = None
    candidates_file: str | None = None


def train_popularity(ctx: EvalContext) -> Counter[int]:
    return Counter(row.next for row in ctx.dataset.iter_rows("train"))


def run_bias(ctx: EvalContext, options: BiasOptions) -> ExperimentOutput:
    sources = eval_candidate_rows(
        ctx.dataset, options.seeds, options.candidates_file, options.max_rows, ctx.settings.n_candidates
    )
    jobs = flow_jobs(options.rec_models, sources, ctx.settings.max_rounds)
    records = run_loop_jobs(ctx, jobs, desc=f"bias {ctx.dataset.name}")
    percentiles = popularity_percentiles(train_popularity(ctx), ctx.dataset.n_items)
    rows: list[dict[str, Any]] = []
    for rec_model in options.rec_models:
        mine = [r for r in records if r["rec_model"] == rec_model]
        for kind, field in PICK_KINDS:
            picks = [r[field] for r in mine]
            rows.append(
                {
                    "dataset": ctx.dataset.name,
                    "rec_model": rec_model,
                    "picks": kind,
                    "mean_popularity_percentile": mean_popularity_percentile(picks, percentiles),
                    "gini": recommendation_gini(picks, ctx.dataset.n_items),
                    "distinct_items": len(set(picks)),
                    "n": len(picks),
                }
            )
    plot = bar_plot(
        ctx.run.path / "bias_popularity.png",
        list(options.rec_models),
        {
            kind: [r["mean_popularity_percentile"] for r in rows if r["picks"] == kind]
            for kind, _ in PICK_KINDS
        },
        title=f"Mean popularity percentile, {ctx.dataset.name}",
        ylabel="percentile",
    )
    table = markdown_table(
        ["Rec model", "picks", "mean popularity percentile", "Gini", "distinct items", "n"],
        [
            [
                r["rec_model"],
                r["picks"],
                r["mean_popularity_percentile"],
                r["gini"],
                r["distinct_items"],
                r["n"],
            ]
            for r in rows
        ],
    )
    note = ""
    if not ctx.dataset.meta.get("train_complete", True):
        note = "\nThe training split of this dataset is incomplete: popularity comes from the partial set.\n"
    report = (
        f"## Popularity bias on {ctx.dataset.name} ({ctx.agents} agents)\n\n"
        "Popularity percentile 0.5 = popularity-blind; target = the users' true next items.\n"
        f"{note}\n{table}\n\n![popularity]({plot.name})\n"
    )
    return ExperimentOutput({"rows": rows, "usage": total_usage(records)}, report, {"rows": rows})
