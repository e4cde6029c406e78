"""Fig. 5: position bias. The target is placed first, at a random slot, or last in the
candidate order the agents see; HR@1 per placement and round limit. Position sensitivity is
the spread (max - min) of HR@1 over placements, averaged over round limits.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lab.eval.common import ExperimentOutput, markdown_table
from lab.eval.loops import (
    ARRANGEMENTS_FOR_POSITION,
    EvalContext,
    LoopJob,
    eval_candidate_rows,
    hr,
    run_loop_jobs,
)
from lab.eval.plots import Chart, Series, loop_caption, mean_estimate, save_chart
from lab.eval.table4 import per_user
from llm.usage import total_usage


@dataclass(frozen=True)
class PositionOptions:
    rec_model: str
    seeds: tuple[int, ...]
    max_round_limit: int = 5
    max_rows: int | None = None
    candidates_file: str | None = None


def run_position(ctx: EvalContext, options: PositionOptions) -> ExperimentOutput:
    limits = tuple(range(1, options.max_round_limit + 1))
    sources = eval_candidate_rows(
        ctx.dataset, options.seeds, options.candidates_file, options.max_rows, ctx.settings.n_candidates
    )
    jobs = [
        LoopJob(options.rec_model, source, row, limit, arrangement=arrangement)
        for arrangement in ARRANGEMENTS_FOR_POSITION
        for limit in limits
        for source, rows in sources.items()
        for row in rows
    ]
    records = run_loop_jobs(ctx, jobs, desc=f"position {ctx.dataset.name}")
    rows = [
        {
            "dataset": ctx.dataset.name,
            "rec_model": options.rec_model,
            "arrangement": arrangement,
            "max_rounds": limit,
            "flow_hr1": hr(
                [r for r in records if r["arrangement"] == arrangement and r["max_rounds"] == limit],
                "flow_pick",
            ),
        }
        for arrangement in ARRANGEMENTS_FOR_POSITION
        for limit in limits
    ]
    spreads = [
        max(r["flow_hr1"] for r in rows if r["max_rounds"] == limit)
        - min(r["flow_hr1"] for r in rows if r["max_rounds"] == limit)
        for limit in limits
    ]
    sensitivity = sum(spreads) / len(spreads)
    plot = save_chart(ctx.run.path, position_chart(ctx, options, records, limits))
    table = markdown_table(
        ["Round limit", *ARRANGEMENTS_FOR_POSITION, "spread"],
        [
            [
                limit,
                *(
                    next(r["flow_hr1"] for r in rows if r["arrangement"] == a and r["max_rounds"] == limit)
                    for a in ARRANGEMENTS_FOR_POSITION
                ),
                spread,
            ]
            for limit, spread in zip(limits, spreads, strict=True)
        ],
    )
    report = (
        f"## Fig. 5: position of the target on {ctx.dataset.name} ({ctx.agents} agents, "
        f"rec model {options.rec_model})\n\nFLOW HR@1 with the target first / at a random slot / last in "
        f"the candidate order. Position sensitivity of {ctx.agents} agents (mean spread): "
        f"**{sensitivity:.4f}**.\n\n{table}\n\n![position]({plot.name})\n"
    )
    summary = {"rows": rows, "position_sensitivity": {ctx.agents: sensitivity}, "spreads": spreads}
    return ExperimentOutput({**summary, "usage": total_usage(records)}, report, summary)


def position_chart(
    ctx: EvalContext, options: PositionOptions, records: Sequence[Mapping[str, Any]], limits: Sequence[int]
) -> Chart:
    """FLOW's HR@1 per target placement against the round limit, intervals over users."""
    series = tuple(
        Series(
            arrangement,
            tuple(
                mean_estimate(
                    limit,
                    list(
                        per_user(
                            [
                                r
                                for r in records
                                if r["arrangement"] == arrangement and r["max_rounds"] == limit
                            ],
                            "flow_pick",
                        ).values()
                    ),
                )
                for limit in limits
            ),
        )
        for arrangement in ARRANGEMENTS_FOR_POSITION
    )
    n_users = len({r["row_id"] for r in records})
    return Chart(
        name="position_hr1",
        title=f"Fig. 5: target position, {ctx.dataset.name} / {options.rec_model}",
        xlabel="round limit",
        ylabel="FLOW HR@1 of 20",
        series=series,
        layout="line",
        caption=loop_caption(ctx, f"{n_users} test users per placement and limit", limit_on_x=True),
        paper_note="The paper gives no numbers for Figure 5 in its text: no paper values drawn.",
    )
