"""Table 4: HR@1 of Model (rec model's top candidate), Agent (recommendation agent, one round,
no user agent) and FLOW (the full loop), mean and spread over candidate seeds.

Agent is read from the loop's first proposal: the recommendation agent's first round never sees
the user agent, so it *is* the single-agent answer and costs no extra loop.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from app.eval.common import ExperimentOutput, bar_plot, markdown_table
from app.eval.loops import EvalContext, eval_candidate_rows, flow_jobs, hr, run_loop_jobs, total_usage
from app.eval.metrics import mean_std
from app.eval.paper import PAPER_AGENT_HR1, PAPER_FLOW_HR1, PAPER_MODEL_HR1, paper_value

PICKS = (("model", "model_pick"), ("agent", "agent_pick"), ("flow", "flow_pick"))


@dataclass(frozen=True)
class Table4Options:
    rec_models: tuple[str, ...]
    seeds: tuple[int, ...]
    max_rows: int | None = None
    candidates_file: str | None = None


def run_table4(ctx: EvalContext, options: Table4Options) -> ExperimentOutput:
    sources = eval_candidate_rows(
        ctx.dataset, options.seeds, options.candidates_file, options.max_rows, ctx.settings.n_candidates
    )
    jobs = flow_jobs(options.rec_models, sources, ctx.settings.max_rounds)
    records = run_loop_jobs(ctx, jobs, desc=f"table4 {ctx.dataset.name}")
    rows = [
        summarise(ctx.dataset.name, m, [r for r in records if r["rec_model"] == m])
        for m in options.rec_models
    ]
    plot = bar_plot(
        ctx.run.path / "table4_hr1.png",
        [r["rec_model"] for r in rows],
        {label: [r[f"{label}_hr1"] for r in rows] for label, _ in PICKS},
        title=f"HR@1, {ctx.dataset.name} ({ctx.agents} agents)",
        ylabel="HR@1",
    )
    results = {"rows": rows, "sources": sorted(sources), "usage": total_usage(records)}
    contract = ("dataset", "rec_model", "model_hr1", "agent_hr1", "flow_hr1", "n_rows")
    return ExperimentOutput(
        results=results,
        report=render_table4(ctx.dataset.name, ctx.agents, rows, plot.name),
        json_line={"rows": [{k: r[k] for k in contract} for r in rows]},
    )


def summarise(dataset: str, rec_model: str, records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Mean and spread over candidate sources (seeds) of each pick's HR@1 for one rec model."""
    by_source: dict[str, list[Mapping[str, Any]]] = {}
    for record in records:
        by_source.setdefault(record["source"], []).append(record)
    row: dict[str, Any] = {"dataset": dataset, "rec_model": rec_model}
    for label, field in PICKS:
        per_source = {source: hr(rs, field) for source, rs in sorted(by_source.items())}
        row[f"{label}_hr1"], row[f"{label}_hr1_std"] = mean_std(list(per_source.values()))
        row[f"{label}_hr1_per_source"] = per_source
    row["n_rows"] = len(next(iter(by_source.values()), []))
    row["n_sources"] = len(by_source)
    row["mean_rounds"] = sum(r["n_rounds"] for r in records) / len(records) if records else 0.0
    row["flow_changed_share"] = (
        sum(r["flow_pick"] != r["agent_pick"] for r in records) / len(records) if records else 0.0
    )
    return row


def render_table4(dataset: str, agents: str, rows: Sequence[Mapping[str, Any]], plot_name: str) -> str:
    def cell(row: Mapping[str, Any], label: str) -> str:
        return f"{row[f'{label}_hr1']:.4f} ± {row[f'{label}_hr1_std']:.4f}"

    table = markdown_table(
        [
            "Rec model",
            "Model",
            "Agent",
            "FLOW",
            "FLOW − Model",
            "mean rounds",
            "rows × sources",
            "paper M/A/F",
        ],
        [
            [
                r["rec_model"],
                cell(r, "model"),
                cell(r, "agent"),
                cell(r, "flow"),
                f"{r['flow_hr1'] - r['model_hr1']:+.4f}",
                f"{r['mean_rounds']:.2f}",
                f"{r['n_rows']} × {r['n_sources']}",
                " / ".join(
                    paper_value(t, dataset, r["rec_model"])
                    for t in (PAPER_MODEL_HR1, PAPER_AGENT_HR1, PAPER_FLOW_HR1)
                ),
            ]
            for r in rows
        ],
    )
    return (
        f"## Table 4: recommendation HR@1 on {dataset} ({agents} agents)\n\n"
        "HR@1 among 20 candidates (LLaRA protocol), mean ± population std over candidate sources.\n"
        "Model: the rec model's top candidate. Agent: the recommendation agent's first proposal "
        "(one round, no user agent). FLOW: the loop's final item.\n\n"
        f"{table}\n\n![HR@1]({plot_name})\n"
    )
