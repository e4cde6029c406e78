"""Popularity bias: do the loop's recommendations lean to popular items more than the rec
model's? Popularity = how often an item is a training target (each training interaction once).
Reported per pick kind: mean popularity percentile (0.5 = popularity-blind) and the Gini of how
often each catalog item is recommended (0 = spread evenly, near 1 = always the same few).
The plots show the whole distribution: the share of each kind's picks in each popularity decile
of the catalog, against the test targets'. The paper reports no popularity numbers.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lab.eval.common import ExperimentOutput, markdown_table
from lab.eval.loops import EvalContext, eval_candidate_rows, flow_jobs, run_loop_jobs
from lab.eval.metrics import mean_popularity_percentile, popularity_percentiles, recommendation_gini
from lab.eval.plots import Chart, Series, loop_caption, mean_estimate, save_chart
from llm.usage import total_usage

PICK_KINDS = (("target", "target"), ("model", "model_pick"), ("agent", "agent_pick"), ("flow", "flow_pick"))
KIND_LABELS = {"target": "test targets", "model": "Model", "agent": "Agent", "flow": "FLOW"}
DECILES = 10


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
    plots = [
        save_chart(
            ctx.run.path, decile_chart(ctx, m, [r for r in records if r["rec_model"] == m], percentiles)
        )
        for m in options.rec_models
    ]
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
        f"{note}\n{table}\n\nShare of the picks by popularity decile of the catalog (D1 least popular, "
        "D10 most), per rec model, against the test targets' share:\n\n"
        + " ".join(f"![popularity deciles]({p.name})" for p in plots)
        + "\n"
    )
    return ExperimentOutput({"rows": rows, "usage": total_usage(records)}, report, {"rows": rows})


def decile(percentile: float) -> int:
    """0..9: the popularity decile of an item from its mid-rank percentile."""
    return min(DECILES - 1, int(percentile * DECILES))


def decile_chart(
    ctx: EvalContext, rec_model: str, records: Sequence[Mapping[str, Any]], percentiles: Sequence[float]
) -> Chart:
    """Per pick kind: the share of its picks in each popularity decile, with an interval over users
    (each user's share over its candidate draws)."""
    by_user: dict[int, list[Mapping[str, Any]]] = {}
    for r in records:
        by_user.setdefault(int(r["row_id"]), []).append(r)
    series = []
    for kind, field in PICK_KINDS:
        estimates = []
        for d in range(DECILES):
            shares = [
                sum(decile(percentiles[r[field]]) == d for r in rs) / len(rs) for rs in by_user.values()
            ]
            estimates.append(mean_estimate(f"D{d + 1}", shares))
        series.append(Series(KIND_LABELS[kind], tuple(estimates)))
    n_sources = len({r["source"] for r in records})
    return Chart(
        name=f"bias_popularity_{rec_model}",
        title=f"Popularity of the picks by decile, {ctx.dataset.name} / {rec_model}",
        xlabel="popularity decile of the catalog (training targets; D1 least, D10 most popular)",
        ylabel="share of picks",
        series=tuple(series),
        caption=loop_caption(ctx, f"{len(by_user)} test users x {n_sources} candidate draws"),
        paper_note="The paper reports no popularity numbers: no paper values drawn.",
    )
