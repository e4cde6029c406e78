"""Table 5: user simulation. Can the user agent tell a user's true future items from items the
user never touched, and does the feedback loop's memory help?

Protocol (AFL, ``lastfm_usersim``): the user agent knows ``init_history``; a recommendation loop
runs on the history before it (filling the agents' memories); then the user agent judges
evaluation items where true future items and non-interacted items are in ratio 1:m.

Methods: ``reward_model`` (positive iff the reward model ranks the item within the best
``accept_top_k / n_candidates`` share of the list; 1/20 unless accept_top_k is set), ``agent``
(the user agent with empty memory) and ``flow`` (the same agent with the loop's memory: its rejected
rounds and the item it accepted, as AFL's user memory keeps every round). The offline user agent
judges each item on its own against one threshold learned on validation (graph/calibration.py).
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from graph.usersim import (  # noqa: F401  (re-exported: the protocol's names, as before)
    RATIOS,
    EvalList,
    UserSimCase,
    build_eval_list,
    cases_from_rows,
    split_positives,
)
from lab.eval.adapters import reward_ranks, run_flow, simulated_likes
from lab.eval.common import ExperimentOutput, Unit, markdown_table, run_units
from lab.eval.loops import FLOW, EvalContext
from lab.eval.metrics import PRF, Confusion, Interval, confusion, macro_prf, micro_prf, paired_f1_interval
from lab.eval.paper import PAPER_AGENTS, paper_prf
from lab.eval.plots import Chart, Estimate, Series, loop_caption, save_chart, statistic_estimate
from llm.usage import sum_usage, total_usage
from recmodels.dataset import DatasetError

METHODS = ("reward_model", "agent", "flow")


@dataclass(frozen=True)
class Table5Options:
    rec_model: str
    ratios: tuple[int, ...] = RATIOS
    seeds: tuple[int, ...] = (0,)
    max_rows: int | None = None
    usersim_file: str | None = None
    n_eval: int = 20


def cases_from_reference(
    path: Path, n_items: int, ratios: Sequence[int], seed: int, n_eval: int
) -> list[UserSimCase]:
    """AFL's LastFM user-simulation set (``usersim_candidates_seed303.jsonl``): its recommendation
    candidates and, for 1:1, its exact evaluation lists. Other ratios keep the same user and
    loop and draw negatives outside the user's ``full_list`` (read from the sibling
    ``test_users.jsonl``) and the recommendation candidates."""
    path = Path(path)
    full_lists = _full_lists(path.parent / "test_users.jsonl")
    rng = random.Random(seed)
    cases: list[UserSimCase] = []
    with path.open() as fh:
        for number, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            raw = json.loads(line)
            missing = [
                f
                for f in ("id", "history", "next", "rec_candidates", "init_history", "pred_items")
                if f not in raw
            ]
            if missing:
                raise DatasetError(path, number, f"missing field(s) {missing}")
            if raw["id"] not in full_lists:
                raise DatasetError(path, number, f"user id {raw['id']} not in test_users.jsonl")
            future = list(raw["pred_items"])
            excluded = set(full_lists[raw["id"]]) | set(raw["rec_candidates"])
            pool = [item for item in range(n_items) if item not in excluded]
            eval_lists: dict[int, EvalList] = {}
            for m in ratios:
                if m == 1 and "eval_candidates" in raw:
                    labels = tuple(bool(v) for v in raw["eval_labels"])
                    eval_lists[m] = EvalList(tuple(raw["eval_candidates"]), labels)
                else:
                    eval_lists[m] = build_eval_list(
                        future, *split_positives(n_eval, m, len(future)), pool, rng
                    )
            cases.append(
                UserSimCase(
                    f"s{seed}-{raw['id']}",
                    tuple(raw["init_history"]),
                    tuple(raw["history"]),
                    int(raw["next"]),
                    tuple(raw["rec_candidates"]),
                    eval_lists,
                )
            )
    return cases


def _full_lists(path: Path) -> dict[int, list[int]]:
    if not path.is_file():
        raise DatasetError(path, None, "test_users.jsonl (with full_list per user) must sit beside the file")
    out: dict[int, list[int]] = {}
    with path.open() as fh:
        for number, line in enumerate(fh, start=1):
            raw = json.loads(line)
            if "full_list" not in raw:
                raise DatasetError(path, number, "missing field 'full_list'")
            out[int(raw["id"])] = list(raw["full_list"])
    return out


def usersim_records(
    ctx: EvalContext, cases: Sequence[UserSimCase], rec_model: str, max_rounds: int, desc: str
) -> list[dict[str, Any]]:
    """Run (or resume) the loop per simulated user, then every method's verdicts per ratio."""
    deps = ctx.deps(rec_model, FLOW)
    reward = ctx.models.get(ctx.dataset, ctx.settings.reward_model)
    share = (ctx.settings.accept_top_k or 1) / ctx.settings.n_candidates
    by_key = {f"usersim/{rec_model}/r{max_rounds}/{case.case_id}": case for case in cases}

    async def work(unit: Unit) -> dict[str, Any]:
        case = by_key[unit.key]
        loop = await run_flow(ctx.runner, deps, case.rec_history, case.rec_candidates, max_rounds)
        judged: dict[str, Any] = {}
        usages = [loop.usage]
        for m, eval_list in case.eval_lists.items():
            agent, agent_usage = await simulated_likes(deps, case.init_history, eval_list.items, [])
            flow, flow_usage = await simulated_likes(
                deps, case.init_history, eval_list.items, loop.user_memory, loop.accepted_items()
            )
            usages += [agent_usage, flow_usage]
            judged[str(m)] = {
                "labels": list(eval_list.labels),
                "reward_model": reward_model_verdicts(
                    reward_ranks(reward, case.init_history, eval_list.items), share
                ),
                "agent": agent,
                "flow": flow,
            }
        return {
            "case_id": case.case_id,
            "max_rounds": max_rounds,
            "n_rounds": loop.n_rounds,
            "usage": dict(sum_usage(usages)),
            "ratios": judged,
        }

    concurrency = ctx.concurrency if ctx.agents == "llm" else 1
    units = [Unit(key, {}) for key in by_key]
    return run_units(
        units, work, ctx.run.rows, concurrency=concurrency, desc=desc, progress=ctx.progress, aio=ctx.aio
    )


def reward_model_verdicts(ranks: Sequence[int], share: float) -> list[bool]:
    """The reward model alone likes its best ``ceil(share * n)`` items (at least one): the same
    share the offline user agent accepts, so Agent and reward model differ only by the agent."""
    n_liked = max(1, math.ceil(len(ranks) * share))
    return [rank <= n_liked for rank in ranks]


def run_table5(ctx: EvalContext, options: Table5Options) -> ExperimentOutput:
    cases = load_cases(ctx, options)
    records = usersim_records(
        ctx, cases, options.rec_model, ctx.settings.max_rounds, desc=f"table5 {ctx.dataset.name}"
    )
    rows = summarise_usersim(ctx.dataset.name, records, options.ratios)
    gains = flow_minus_agent(records, options.ratios)
    calibration = ctx.deps(options.rec_model, FLOW).calibration.summary()
    plot = save_chart(ctx.run.path, table5_chart(ctx, records, options.ratios))
    contract = ("dataset", "ratio", "method", "precision", "recall", "f1")
    return ExperimentOutput(
        results={
            "rows": rows,
            "n_users": len(records),
            "mean_rounds": sum(r["n_rounds"] for r in records) / max(len(records), 1),
            "usage": total_usage(records),
            "protocol": "reference file" if options.usersim_file else "test rows",
            "flow_minus_agent_f1": gains,
            "verdicts_changed_by_memory": changed_share(records, options.ratios),
            "calibration": calibration,
        },
        report=render_table5(ctx.dataset.name, ctx.agents, rows, len(records), plot.name, gains, calibration),
        json_line={"rows": [{k: r[k] for k in contract} for r in rows], "flow_minus_agent_f1": gains},
    )


METHOD_LABELS = {"reward_model": "Reward model alone", "agent": "Agent", "flow": "FLOW"}


def f1_estimate(x: str, per_user: Sequence[Confusion]) -> Estimate:
    """Micro F1 over the users' pooled items, with its bootstrap interval over the users."""
    return statistic_estimate(x, len(per_user), lambda users: micro_prf(per_user[u] for u in users).f1)


def table5_chart(ctx: EvalContext, records: Sequence[Mapping[str, Any]], ratios: Sequence[int]) -> Chart:
    """Micro F1 per ratio and method with its interval over users; Table 5's F1 as markers."""
    series = []
    for method in METHODS:
        estimates, paper = [], {}
        for m in ratios:
            judged = [r["ratios"][str(m)] for r in records]
            estimates.append(f1_estimate(f"1:{m}", [confusion(j[method], j["labels"]) for j in judged]))
            found = paper_prf(ctx.dataset.name, f"1:{m}", method)
            if found is not None:
                paper[f"1:{m}"] = found[2]
        series.append(Series(METHOD_LABELS[method], tuple(estimates), paper))
    return Chart(
        name="table5_f1",
        title=f"Table 5: user simulation F1 (micro) on {ctx.dataset.name}",
        xlabel="positives : negatives",
        ylabel="F1",
        series=tuple(series),
        caption=loop_caption(
            ctx, f"{len(records)} users", "the user agent judges true future vs untouched items"
        ),
        paper_note=(
            f"Paper: Table 5, {PAPER_AGENTS} agents, SASRec rec and reward model."
            if any(s.paper for s in series)
            else "The paper has no Table 5 values for this dataset."
        ),
    )


def flow_minus_agent(records: Sequence[Mapping[str, Any]], ratios: Sequence[int]) -> dict[str, Any]:
    """Per ratio: micro F1 of FLOW minus Agent, paired over users, with a 95 % bootstrap interval."""
    out: dict[str, Any] = {}
    for m in ratios:
        per = {
            method: [confusion(r["ratios"][str(m)][method], r["ratios"][str(m)]["labels"]) for r in records]
            for method in ("flow", "agent")
        }
        out[f"1:{m}"] = paired_f1_interval(per["flow"], per["agent"]).to_json()
    return out


def changed_share(records: Sequence[Mapping[str, Any]], ratios: Sequence[int]) -> dict[str, float]:
    """Per ratio: the share of judged items whose verdict the loop's memory changed (FLOW vs Agent)."""
    out: dict[str, float] = {}
    for m in ratios:
        pairs = [
            (a, f)
            for r in records
            for a, f in zip(r["ratios"][str(m)]["agent"], r["ratios"][str(m)]["flow"], strict=True)
        ]
        out[f"1:{m}"] = sum(a != f for a, f in pairs) / len(pairs) if pairs else 0.0
    return out


def load_cases(ctx: EvalContext, options: Table5Options) -> list[UserSimCase]:
    """Cases per seed (the seed draws candidates and negatives), first ``max_rows`` users each."""
    cases: list[UserSimCase] = []
    for seed in options.seeds:
        if options.usersim_file:
            found = cases_from_reference(
                Path(options.usersim_file), ctx.dataset.n_items, options.ratios, seed, options.n_eval
            )
        else:
            rows, _dropped = ctx.dataset.eval_rows("test")
            found = cases_from_rows(
                rows, ctx.dataset.n_items, options.ratios, seed, options.n_eval, ctx.settings.n_candidates
            )
        cases += found[: options.max_rows] if options.max_rows else found
    return cases


def summarise_usersim(
    dataset: str, records: Sequence[Mapping[str, Any]], ratios: Sequence[int]
) -> list[dict[str, Any]]:
    """Per ratio and method: micro P/R/F1 (pooled items) at top level, macro (per-user mean) nested."""
    rows: list[dict[str, Any]] = []
    for m in ratios:
        for method in METHODS:
            per_user = [
                confusion(r["ratios"][str(m)][method], r["ratios"][str(m)]["labels"]) for r in records
            ]
            micro, macro = micro_prf(per_user), macro_prf(per_user)
            rows.append(
                {
                    "dataset": dataset,
                    "ratio": f"1:{m}",
                    "method": method,
                    **micro.to_json(),
                    "macro": macro.to_json(),
                    "n_users": len(per_user),
                    "n_items": sum(c.tp + c.fp + c.fn + c.tn for c in per_user),
                }
            )
    return rows


def render_table5(
    dataset: str,
    agents: str,
    rows: Sequence[Mapping[str, Any]],
    n_users: int,
    plot: str,
    gains: Mapping[str, Any] | None = None,
    calibration: Mapping[str, Any] | None = None,
) -> str:
    def fmt(prf: PRF | Mapping[str, float]) -> str:
        values = prf.to_json() if isinstance(prf, PRF) else prf
        return f"{values['precision']:.4f} / {values['recall']:.4f} / {values['f1']:.4f}"

    def paper(row: Mapping[str, Any]) -> str:
        found = paper_prf(dataset, row["ratio"], row["method"])
        return " / ".join(f"{v:.4f}" for v in found) if found else "n/a"

    def gain(row: Mapping[str, Any]) -> str:
        if not gains or row["method"] != "flow" or row["ratio"] not in gains:
            return ""
        g = gains[row["ratio"]]
        return str(Interval(g["mean"], g["low"], g["high"]))

    table = markdown_table(
        ["Ratio", "Method", "micro P / R / F1", "macro P / R / F1", "FLOW − Agent F1", "paper P / R / F1"],
        [[r["ratio"], r["method"], fmt(r), fmt(r["macro"]), gain(r), paper(r)] for r in rows],
    )
    learned = ""
    if calibration and calibration.get("verdict_threshold") is not None:
        who = "The user agent" if agents == "offline" else "Where an LLM call fails, the offline user agent"
        learned = (
            f"\n{who} likes an item when the reward model's log-probability of it over the catalog "
            f"+ {calibration['user_history_weight']:g} × its similarity to the history "
            f"+ {calibration['user_liked_weight']:g} × its similarity to what it liked in the loop "
            f"− {calibration['user_turned_down_weight']:g} × its similarity to what it turned down "
            f"(similarity: {calibration['user_similarity']}) reaches {calibration['verdict_threshold']:.3f}: "
            "one threshold for every ratio, all chosen on validation users.\n"
        )
    return (
        f"## Table 5: user simulation on {dataset} ({agents} agents, {n_users} users)\n\n"
        "Positives are the user's true future items, negatives items it never interacted with.\n"
        "reward_model: the reward model alone likes its best accept_top_k / n_candidates share of a list "
        "(1 / 20 by default, like the paper's SASRec row); agent: the user agent with an empty memory; "
        "flow: the same agent with the loop's memory (rejected rounds and the accepted item). "
        "FLOW − Agent: paired over users [95 % bootstrap interval]. Paper: GPT-4o-mini agents, "
        "SASRec rec and reward model.\n"
        f"{learned}\n{table}\n\n![F1]({plot})\n"
    )
