"""Fig. 3: HR@1 and user-simulation P/R/F1 as a function of the round limit (1..N).

The paper draws Figure 3 without giving its numbers in the text, so its curves cannot be drawn
here. What the text does give is the end point of each: the paper's loop runs at most 4 rounds,
so Table 4's FLOW HR@1 and Table 5's FLOW F1 are its values at round limit 4 (markers), and
Table 4's Model and Table 5's Agent are what the loop starts from (reference lines).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lab.eval.common import ExperimentOutput, markdown_table
from lab.eval.loops import EvalContext, LoopJob, eval_candidate_rows, hr, run_loop_jobs
from lab.eval.metrics import confusion, mean_std
from lab.eval.paper import PAPER_AGENTS, PAPER_FLOW_HR1, PAPER_MODEL_HR1, paper_prf
from lab.eval.plots import Chart, Reference, Series, loop_caption, mean_estimate, save_chart
from lab.eval.table4 import per_user
from lab.eval.table5 import Table5Options, f1_estimate, load_cases, summarise_usersim, usersim_records
from llm.usage import total_usage


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
    rows, sims = [], {}
    for limit in limits:
        mine = [r for r in records if r["max_rounds"] == limit]
        per_source = [hr([r for r in mine if r["source"] == s], "flow_pick") for s in sources]
        flow_mean, flow_std = mean_std(per_source)
        sim = sims[limit] = usersim_records(
            ctx, cases, options.rec_model, limit, desc=f"rounds usersim r{limit}"
        )
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
    hr_plot = save_chart(ctx.run.path, hr_chart(ctx, options, records, limits))
    sim_plot = save_chart(ctx.run.path, usersim_chart(ctx, options, sims))
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


PAPER_ROUND_LIMIT = 4
"""The paper's loop runs at most 4 rounds: its tables are Figure 3's points at that limit."""
NO_CURVE = (
    "The paper gives no numbers for Figure 3's curves; markers are its Table {table} values at its "
    "round limit 4 ({agents} agents), where it has one for this dataset and rec model."
)


def hr_chart(
    ctx: EvalContext, options: RoundsOptions, records: Sequence[Mapping[str, Any]], limits: Sequence[int]
) -> Chart:
    """Model and FLOW HR@1 against the round limit, intervals over users (their candidate draws)."""
    key = (ctx.dataset.name, options.rec_model)
    series = []
    for label, field in (("Model", "model_pick"), ("FLOW", "flow_pick")):
        estimates = tuple(
            mean_estimate(
                limit, list(per_user([r for r in records if r["max_rounds"] == limit], field).values())
            )
            for limit in limits
        )
        paper = PAPER_FLOW_HR1.get(key) if label == "FLOW" else None
        series.append(Series(label, estimates, {str(PAPER_ROUND_LIMIT): paper} if paper is not None else {}))
    model = PAPER_MODEL_HR1.get(key)
    n_users = len({r["row_id"] for r in records})
    n_sources = len({r["source"] for r in records})
    return Chart(
        name="rounds_hr1",
        title=f"Fig. 3a: HR@1 against the round limit, {ctx.dataset.name} / {options.rec_model}",
        xlabel="round limit",
        ylabel="HR@1 of 20",
        series=tuple(series),
        layout="line",
        references=(Reference("paper Model (Table 4)", model),) if model is not None else (),
        caption=loop_caption(
            ctx, f"{n_users} test users x {n_sources} candidate draws per limit", limit_on_x=True
        ),
        paper_note=NO_CURVE.format(table=4, agents=PAPER_AGENTS),
    )


def usersim_chart(
    ctx: EvalContext, options: RoundsOptions, sims: Mapping[int, Sequence[Mapping[str, Any]]]
) -> Chart:
    """FLOW's user-simulation F1 (and the agent's without memory) against the round limit."""
    ratio = f"1:{options.usersim_ratio}"
    series = []
    for label, method in (("Agent (no memory)", "agent"), ("FLOW", "flow")):
        estimates = tuple(
            f1_estimate(
                limit,
                [
                    confusion(
                        r["ratios"][str(options.usersim_ratio)][method],
                        r["ratios"][str(options.usersim_ratio)]["labels"],
                    )
                    for r in sim
                ],
            )
            for limit, sim in sims.items()
        )
        found = paper_prf(ctx.dataset.name, ratio, method) if method == "flow" else None
        series.append(Series(label, estimates, {str(PAPER_ROUND_LIMIT): found[2]} if found else {}))
    agent = paper_prf(ctx.dataset.name, ratio, "agent")
    n_users = len(next(iter(sims.values()), []))
    return Chart(
        name="rounds_usersim",
        title=f"Fig. 3b: user simulation F1 ({ratio}) against the round limit, {ctx.dataset.name}",
        xlabel="round limit",
        ylabel="F1 (micro)",
        series=tuple(series),
        layout="line",
        references=(Reference("paper Agent (Table 5)", agent[2]),) if agent else (),
        caption=loop_caption(ctx, f"{n_users} users", f"user simulation {ratio}", limit_on_x=True),
        paper_note=NO_CURVE.format(table=5, agents=PAPER_AGENTS),
    )
