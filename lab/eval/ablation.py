"""Table 6: ablation of the loop's two model tools.

Base: neither the rec-model prior (recommendation agent) nor the reward model (user agent);
+Rec model: the prior only; +Reward model: the reward model only; FLOW: both.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lab.eval.common import ExperimentOutput, markdown_table
from lab.eval.loops import (
    EvalContext,
    LoopJob,
    Variant,
    eval_candidate_rows,
    hr,
    run_loop_jobs,
)
from lab.eval.metrics import mean_std
from lab.eval.paper import PAPER_AGENTS, TABLE6
from lab.eval.plots import Chart, Series, loop_caption, mean_estimate, save_chart
from lab.eval.table4 import per_user
from llm.usage import total_usage

VARIANTS = (
    Variant("base", {"rec_prior": False, "user_reward": False}),
    Variant("rec_model", {"rec_prior": True, "user_reward": False}),
    Variant("reward_model", {"rec_prior": False, "user_reward": True}),
    Variant("flow", {"rec_prior": True, "user_reward": True}),
)
LABELS = {"base": "Base", "rec_model": "+Rec model", "reward_model": "+Reward model", "flow": "FLOW"}


@dataclass(frozen=True)
class AblationOptions:
    rec_model: str
    seeds: tuple[int, ...]
    max_rows: int | None = None
    candidates_file: str | None = None


def run_ablation(ctx: EvalContext, options: AblationOptions) -> ExperimentOutput:
    sources = eval_candidate_rows(
        ctx.dataset, options.seeds, options.candidates_file, options.max_rows, ctx.settings.n_candidates
    )
    jobs = [
        LoopJob(options.rec_model, source, row, ctx.settings.max_rounds, variant=variant)
        for variant in VARIANTS
        for source, rows in sources.items()
        for row in rows
    ]
    records = run_loop_jobs(ctx, jobs, desc=f"ablation {ctx.dataset.name}")
    rows = []
    for variant in VARIANTS:
        mine = [r for r in records if r["variant"] == variant.name]
        mean, std = mean_std([hr([r for r in mine if r["source"] == s], "flow_pick") for s in sources])
        rows.append(
            {
                "dataset": ctx.dataset.name,
                "rec_model": options.rec_model,
                "variant": variant.name,
                "knobs": dict(variant.knobs),
                "hr1": mean,
                "hr1_std": std,
                "mean_rounds": sum(r["n_rounds"] for r in mine) / max(len(mine), 1),
            }
        )
    plot = save_chart(ctx.run.path, ablation_chart(ctx, options, records))
    paper = TABLE6.get(ctx.dataset.name, {})
    table = markdown_table(
        ["Variant", "rec-model prior", "reward model", "HR@1", "mean rounds", f"paper ({PAPER_AGENTS})"],
        [
            [
                LABELS[r["variant"]],
                "yes" if r["knobs"]["rec_prior"] else "no",
                "yes" if r["knobs"]["user_reward"] else "no",
                f"{r['hr1']:.4f} ± {r['hr1_std']:.4f}",
                f"{r['mean_rounds']:.2f}",
                f"{paper[r['variant']]:.4f}" if r["variant"] in paper else "n/a",
            ]
            for r in rows
        ],
    )
    report = (
        f"## Table 6: ablation on {ctx.dataset.name} ({ctx.agents} agents, rec model {options.rec_model})\n\n"
        "HR@1 of the loop's final item (20 candidates). The paper's column is Table 6 of AFL/FLOW "
        "(rec and reward model SASRec).\n\n"
        f"{table}\n\n![ablation]({plot.name})\n"
    )
    return ExperimentOutput({"rows": rows, "usage": total_usage(records)}, report, {"rows": rows})


def ablation_chart(ctx: EvalContext, options: AblationOptions, records: Sequence[Mapping[str, Any]]) -> Chart:
    """FLOW's HR@1 per variant with its interval over users; Table 6 as markers."""
    paper = TABLE6.get(ctx.dataset.name, {})
    estimates = tuple(
        mean_estimate(
            LABELS[v.name],
            list(per_user([r for r in records if r["variant"] == v.name], "flow_pick").values()),
        )
        for v in VARIANTS
    )
    n_users = len({r["row_id"] for r in records})
    n_sources = len({r["source"] for r in records})
    return Chart(
        name="ablation_hr1",
        title=f"Table 6: ablation on {ctx.dataset.name} / {options.rec_model}",
        xlabel="variant",
        ylabel="HR@1 of 20",
        series=(Series("ours: final item", estimates, {LABELS[k]: v for k, v in paper.items()}),),
        caption=loop_caption(ctx, f"{n_users} test users x {n_sources} candidate draws per variant"),
        paper_note=(
            f"Paper: Table 6, {PAPER_AGENTS} agents, SASRec rec and reward model."
            if paper
            else "The paper has no Table 6 values for this dataset."
        ),
    )
