"""Fig. 3: HR@1 and user-simulation P/R/F1 as a function of the round limit (1..N)."""

from __future__ import annotations

from dataclasses import dataclass

from app.eval.common import ExperimentOutput, line_plot, markdown_table
from app.eval.loops import EvalContext, LoopJob, eval_candidate_rows, hr, run_loop_jobs
from app.eval.metrics import mean_std
from app.eval.table5 import Table5Options, load_cases, summarise_usersim, usersim_records
from graph.state import total_usage


@dataclass(frozen=True)
class RoundsOptions:
    rec_model: str
    seeds: tuple[int, ...]
    max_round_limit: int = 5
    max_rows: int | None = None
    candidates_file: str | None = None
    usersim_file: str | None = None
    usersim_ratio: int = 1


def run_rounds(ctx: EvalContext, options: RoundsOptions) -> ExperimentOutput:
    limits = tuple(range(1, options.max_round_limit + 1))
    sources = eval_candidate_rows(
        ctx.dataset, options.seeds, options.candidates_file, options.max_rows, ctx.settings.n_candidates
    )
    jobs = [
        LoopJob(options.rec_model, source, row, limit)
        for limit in limits
        for source, rows in sources.items()
        for row in rows
    ]
    records = run_loop_jobs(ctx, jobs, desc=f"rounds HR@1 {ctx.dataset.name}")
    cases = load_cases(
        ctx,
        Table5Options(
            options.rec_model,
            ratios=(options.usersim_ratio,),
            max_rows=options.max_rows,
            usersim_file=options.usersim_file,
        ),
    )
    rows = []
    for limit in limits:
        mine = [r for r in records if r["max_rounds"] == limit]
        per_source = [hr([r for r in mine if r["source"] == s], "flow_pick") for s in sources]
        flow_mean, flow_std = mean_std(per_source)
        sim = usersim_records(ctx, cases, options.rec_model, limit, desc=f"rounds usersim r{limit}")
        flow_sim = next(
            r
            for r in summarise_usersim(ctx.dataset.name, sim, (options.usersim_ratio,))
            if r["method"] == "flow"
        )
        rows.append(
            {
                "dataset": ctx.dataset.name,
                "rec_model": options.rec_model,
                "max_rounds": limit,
                "model_hr1": hr(mine, "model_pick"),
                "flow_hr1": flow_mean,
                "flow_hr1_std": flow_std,
                "mean_rounds": sum(r["n_rounds"] for r in mine) / max(len(mine), 1),
                "usersim_precision": flow_sim["precision"],
                "usersim_recall": flow_sim["recall"],
                "usersim_f1": flow_sim["f1"],
            }
        )
    hr_plot = line_plot(
        ctx.run.path / "rounds_hr1.png",
        limits,
        {"Model": [r["model_hr1"] for r in rows], "FLOW": [r["flow_hr1"] for r in rows]},
        title=f"HR@1 vs round limit, {ctx.dataset.name}/{options.rec_model}",
        xlabel="round limit",
        ylabel="HR@1",
    )
    sim_plot = line_plot(
        ctx.run.path / "rounds_usersim.png",
        limits,
        {name: [r[f"usersim_{name}"] for r in rows] for name in ("precision", "recall", "f1")},
        title=f"User simulation (1:{options.usersim_ratio}) vs round limit",
        xlabel="round limit",
        ylabel="micro value",
    )
    table = markdown_table(
        ["Round limit", "Model HR@1", "FLOW HR@1", "mean rounds", "sim P", "sim R", "sim F1"],
        [
            [
                r["max_rounds"],
                r["model_hr1"],
                f"{r['flow_hr1']:.4f} ± {r['flow_hr1_std']:.4f}",
                f"{r['mean_rounds']:.2f}",
                r["usersim_precision"],
                r["usersim_recall"],
                r["usersim_f1"],
            ]
            for r in rows
        ],
    )
    report = (
        f"## Fig. 3: effect of the round limit on {ctx.dataset.name} ({ctx.agents} agents, "
        f"rec model {options.rec_model})\n\n{table}\n\n"
        f"![HR@1]({hr_plot.name}) ![user simulation]({sim_plot.name})\n"
    )
    return ExperimentOutput({"rows": rows, "usage": total_usage(records)}, report, {"rows": rows})
