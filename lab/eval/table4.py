"""Table 4: HR@1 of Model (rec model's top candidate), Agent (recommendation agent, one round,
no user agent) and FLOW (the full loop), next to the baselines FLOW must beat: the reward model
alone, the plain score ensemble of both models, and the trust-weighted ensemble the calibration
learned on validation (the loop's evidence without the loop).

Two figures per pick:

- **sampled**: HR@1 on the first ``seeds`` candidate draws (``random.Random(seed)`` through the
  rows, the LLaRA protocol), mean and spread over those draws (the paper's kind of number);
- **expected**: HR@1 averaged over ``draws`` candidate draws per user (seeds 0..draws-1, the
  sampled ones included): close to the exact expectation over the 19 uniform negatives. For the
  models and ensembles that exact expectation is also computed from their full-catalog scores.

Differences are paired user by user (same candidate draws) with 95 % bootstrap intervals over the
test users. Agent is read from the loop's first proposal: the recommendation agent's first round
never sees the user agent, so it *is* the single-agent answer and costs no extra loop.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lab.eval.adapters import exact_expected_hr1
from lab.eval.common import ExperimentOutput, markdown_table
from lab.eval.loops import (
    FLOW,
    EvalContext,
    eval_candidate_rows,
    flow_jobs,
    hr,
    run_loop_jobs,
)
from lab.eval.metrics import Interval, mean_std, paired_interval
from lab.eval.paper import PAPER_AGENT_HR1, PAPER_AGENTS, PAPER_FLOW_HR1, PAPER_MODEL_HR1, paper_value
from lab.eval.plots import Chart, Reference, Series, loop_caption, mean_estimate, save_chart
from llm.usage import total_usage

PICKS = (
    ("model", "model_pick"),
    ("agent", "agent_pick"),
    ("flow", "flow_pick"),
    ("reward", "reward_pick"),
    ("ensemble", "ensemble_pick"),
    ("weighted", "weighted_pick"),
)
COMPARED = ("model", "reward", "ensemble", "weighted", "agent")
"""FLOW is compared, user by user, with each of these."""
EXACT = ("model", "reward", "ensemble", "agent", "weighted")
PLOTTED = ("model", "reward", "ensemble", "agent", "flow")
SHOWN = ("model", "reward", "ensemble", "weighted", "agent", "flow")
PAPER_COLUMNS = (PAPER_MODEL_HR1, PAPER_AGENT_HR1, PAPER_FLOW_HR1)
PAPER_BY_PICK = {"model": PAPER_MODEL_HR1, "agent": PAPER_AGENT_HR1, "flow": PAPER_FLOW_HR1}
REFERENCES = ("llara",)
"""The paper's rows drawn as reference lines (its best, LLM-based recommender: Model column)."""


@dataclass(frozen=True)
class Table4Options:
    rec_models: tuple[str, ...]
    seeds: tuple[int, ...]
    max_rows: int | None = None
    candidates_file: str | None = None
    draws: int = 20
    """Candidate draws per user for the expected HR@1 (seeds 0..draws-1; at least ``seeds``)."""


def draw_seeds(options: Table4Options) -> tuple[int, ...]:
    """Every seed the loops run on: the sampled ones plus the further draws for the expectation."""
    return tuple(range(max(len(options.seeds), options.draws, max(options.seeds, default=-1) + 1)))


def run_table4(ctx: EvalContext, options: Table4Options) -> ExperimentOutput:
    sources = eval_candidate_rows(
        ctx.dataset, draw_seeds(options), options.candidates_file, options.max_rows, ctx.settings.n_candidates
    )
    sampled = {f"seed{s}" for s in options.seeds} if not options.candidates_file else set(sources)
    jobs = flow_jobs(options.rec_models, sources, ctx.settings.max_rounds)
    records = run_loop_jobs(ctx, jobs, desc=f"table4 {ctx.dataset.name}")
    test_rows = _test_rows(ctx, options)
    reward = ctx.models.get(ctx.dataset, ctx.settings.reward_model)
    rows, exact_by_model = [], {}
    for m in options.rec_models:
        deps = ctx.deps(m, FLOW)
        exact = exact_expected_hr1(deps, ctx.models.get(ctx.dataset, m), reward, test_rows)
        if ctx.agents != "offline":  # that expectation is the offline agent's first proposal, not an LLM's
            exact = {label: values for label, values in exact.items() if label != "agent"}
        exact_by_model[m] = exact
        row = summarise(ctx.dataset.name, m, [r for r in records if r["rec_model"] == m], sampled, exact)
        row["calibration"] = deps.calibration.summary()
        rows.append(row)
    overall = {
        "flow_minus_model_over_models": mean_gain(records, options.rec_models).to_json(),
        "weighted_minus_model_over_models_exact": mean_exact_gain(exact_by_model).to_json(),
    }
    plot = save_chart(ctx.run.path, table4_chart(ctx, records, rows))
    results = {
        "rows": rows,
        "sources": sorted(sources),
        "sampled_sources": sorted(sampled),
        "usage": total_usage(records),
        **overall,
    }
    contract = ("dataset", "rec_model", "model_hr1", "agent_hr1", "flow_hr1", "n_rows")
    extra = (
        "reward_hr1",
        "ensemble_hr1",
        *(f"{label}_hr1_expected" for label, _ in PICKS),
        *(f"flow_minus_{other}" for other in COMPARED),
    )
    return ExperimentOutput(
        results=results,
        report=render_table4(
            ctx.dataset.name, ctx.agents, rows, plot.name, overall, ctx.settings.reward_model
        ),
        json_line={"rows": [{k: r[k] for k in (*contract, *extra)} for r in rows], **overall},
    )


def table4_chart(
    ctx: EvalContext, records: Sequence[Mapping[str, Any]], rows: Sequence[Mapping[str, Any]]
) -> Chart:
    """Expected HR@1 per rec model and pick with its interval over users; the paper's Model, Agent
    and FLOW of the same rec model as markers; the paper's LLaRA and chance as lines."""
    dataset = ctx.dataset.name
    series = []
    for label in PLOTTED:
        field = dict(PICKS)[label]
        estimates, paper = [], {}
        for row in rows:
            mine = [r for r in records if r["rec_model"] == row["rec_model"]]
            if not mine or field not in mine[0]:
                continue
            estimates.append(mean_estimate(row["rec_model"], list(per_user(mine, field).values())))
            value = PAPER_BY_PICK.get(label, {}).get((dataset, row["rec_model"]))
            if value is not None:
                paper[row["rec_model"]] = value
        series.append(Series({**LABELS, "flow": "FLOW"}[label], tuple(estimates), paper))
    references = [
        Reference(f"paper {name} (Model)", value)
        for name in REFERENCES
        if (value := PAPER_MODEL_HR1.get((dataset, name))) is not None
    ]
    n_rows = rows[0]["n_rows"] if rows else 0
    n_draws = rows[0]["n_draws"] if rows else 0
    n_candidates = ctx.settings.n_candidates
    return Chart(
        name="table4_hr1",
        title=f"Table 4: expected HR@1 of 20 on {dataset}",
        xlabel="rec model",
        ylabel="expected HR@1",
        series=tuple(series),
        references=(*references, Reference(f"chance (1/{n_candidates})", 1 / n_candidates)),
        caption=loop_caption(ctx, f"{n_rows} test users x {n_draws} candidate draws"),
        paper_note=(
            f"Paper: Table 4 of {PAPER_AGENTS} agents on one candidate draw."
            if any(s.paper for s in series)
            else "The paper has no Table 4 values for these rec models."
        ),
    )


def _test_rows(ctx: EvalContext, options: Table4Options) -> list[Any]:
    rows, _dropped = ctx.dataset.eval_rows("test")
    return rows[: options.max_rows] if options.max_rows else rows


def per_user(records: Sequence[Mapping[str, Any]], field: str) -> dict[int, float]:
    """Per test row (user): the share of its candidate draws on which ``field`` hit the target."""
    hits: dict[int, list[bool]] = {}
    for r in records:
        hits.setdefault(int(r["row_id"]), []).append(r[field] == r["target"])
    return {row: sum(h) / len(h) for row, h in sorted(hits.items())}


def summarise(
    dataset: str,
    rec_model: str,
    records: Sequence[Mapping[str, Any]],
    sampled: set[str] | None = None,
    exact: Mapping[str, Sequence[float]] | None = None,
) -> dict[str, Any]:
    """One rec model's row: sampled mean and spread over the ``sampled`` sources, the expected HR@1
    over every source, paired differences FLOW - X with bootstrap intervals, exact expectations."""
    by_source: dict[str, list[Mapping[str, Any]]] = {}
    for record in records:
        by_source.setdefault(record["source"], []).append(record)
    sampled = set(by_source) if sampled is None else sampled & set(by_source)
    row: dict[str, Any] = {"dataset": dataset, "rec_model": rec_model}
    users: dict[str, dict[int, float]] = {}
    for label, field in PICKS:
        present = [r for r in records if field in r]
        if len(present) != len(records):
            continue  # rows from an older run without this baseline
        per_source = {s: hr(rs, field) for s, rs in sorted(by_source.items()) if s in sampled}
        row[f"{label}_hr1"], row[f"{label}_hr1_std"] = mean_std(list(per_source.values()))
        row[f"{label}_hr1_per_source"] = per_source
        users[label] = per_user(records, field)
        row[f"{label}_hr1_expected"] = _mean(users[label].values())
    for other in COMPARED:
        if other in users:
            diffs = [users["flow"][u] - users[other][u] for u in users["flow"]]
            row[f"flow_minus_{other}"] = paired_interval(diffs).to_json()
    if exact is not None:
        for label in (label for label in EXACT if label in exact):
            row[f"{label}_hr1_exact"] = _mean(exact[label])
        for other in (o for o in ("model", "reward", "ensemble", "agent") if o in exact):  # no draw noise
            diffs = [w - o for w, o in zip(exact["weighted"], exact[other], strict=True)]
            row[f"weighted_minus_{other}_exact"] = paired_interval(diffs).to_json()
    row["n_rows"] = len(next(iter(by_source.values()), []))
    row["n_sources"] = len(sampled)
    row["n_draws"] = len(by_source)
    row["mean_rounds"] = sum(r["n_rounds"] for r in records) / len(records) if records else 0.0
    row["flow_changed_share"] = _share(records, lambda r: r["flow_pick"] != r["agent_pick"])
    if records and "weighted_pick" in records[0]:
        row["flow_is_weighted_share"] = _share(records, lambda r: r["flow_pick"] == r["weighted_pick"])
    return row


def mean_gain(records: Sequence[Mapping[str, Any]], rec_models: Sequence[str]) -> Interval:
    """FLOW - Model averaged over the rec models, per user, with one bootstrap over the users."""
    flow = {m: per_user([r for r in records if r["rec_model"] == m], "flow_pick") for m in rec_models}
    model = {m: per_user([r for r in records if r["rec_model"] == m], "model_pick") for m in rec_models}
    users = sorted(set.intersection(*(set(flow[m]) for m in rec_models))) if rec_models else []
    diffs = [sum(flow[m][u] - model[m][u] for m in rec_models) / len(rec_models) for u in users]
    return paired_interval(diffs)


def mean_exact_gain(exact: Mapping[str, Mapping[str, Sequence[float]]]) -> Interval:
    """The trust-weighted combination (what FLOW's pick equals, see ``flow_is_weighted_share``)
    minus the rec model, exact per user, averaged over the rec models, one bootstrap over users."""
    if not exact:
        return Interval(0.0, 0.0, 0.0)
    per_model = [[w - m for w, m in zip(e["weighted"], e["model"], strict=True)] for e in exact.values()]
    return paired_interval([sum(d) / len(d) for d in zip(*per_model, strict=True)])


def _mean(values: Any) -> float:
    values = list(values)
    return sum(values) / len(values) if values else 0.0


def _share(records: Sequence[Mapping[str, Any]], test: Any) -> float:
    return sum(1 for r in records if test(r)) / len(records) if records else 0.0


LABELS = {"model": "Model", "reward": "Reward", "ensemble": "Ensemble", "agent": "Agent"}


def _exact_ci(row: Mapping[str, Any], other: str) -> str:
    ci = row.get(f"weighted_minus_{other}_exact")
    return str(Interval(ci["mean"], ci["low"], ci["high"])) if ci else "n/a"


def _ci(row: Mapping[str, Any], other: str) -> str:
    if f"flow_minus_{other}" not in row:
        return "n/a"
    ci = row[f"flow_minus_{other}"]
    return str(Interval(ci["mean"], ci["low"], ci["high"]))


def render_table4(
    dataset: str,
    agents: str,
    rows: Sequence[Mapping[str, Any]],
    plot_name: str,
    overall: Mapping[str, Any] | None = None,
    reward_model: str = "sasrec",
) -> str:
    def sampled(row: Mapping[str, Any], label: str) -> str:
        if f"{label}_hr1" not in row:
            return "n/a"
        return f"{row[f'{label}_hr1']:.4f} ± {row[f'{label}_hr1_std']:.4f}"

    def expected(row: Mapping[str, Any], label: str) -> str:
        value = row.get(f"{label}_hr1_expected")
        exact = row.get(f"{label}_hr1_exact")
        if value is None:
            return "n/a"
        return f"{value:.4f}" + (f" ({exact:.4f})" if exact is not None else "")

    paper = [" / ".join(paper_value(t, dataset, r["rec_model"]) for t in PAPER_COLUMNS) for r in rows]
    main = markdown_table(
        [
            "Rec model",
            "Model",
            f"Reward ({reward_model})",
            "Ensemble",
            "λ-ensemble",
            "Agent",
            "FLOW",
            "FLOW − Model",
            "FLOW − Reward",
            "FLOW − Ensemble",
            "FLOW − λ-ensemble",
            "FLOW − Agent",
            "paper M/A/F",
        ],
        [
            [
                r["rec_model"],
                *(expected(r, label) for label in SHOWN),
                *(_ci(r, other) for other in COMPARED),
                p,
            ]
            for r, p in zip(rows, paper, strict=True)
        ],
    )
    five = markdown_table(
        ["Rec model", "Model", "Reward", "Ensemble", "Agent", "FLOW", "mean rounds", "rows × draws"],
        [
            [
                r["rec_model"],
                *(sampled(r, label) for label in ("model", "reward", "ensemble", "agent", "flow")),
                f"{r['mean_rounds']:.2f}",
                f"{r['n_rows']} × {r['n_sources']}",
            ]
            for r in rows
        ],
    )
    exact = markdown_table(
        ["Rec model", *(f"λ-ensemble − {LABELS[o]}" for o in ("model", "reward", "ensemble", "agent"))],
        [
            [r["rec_model"], *(_exact_ci(r, o) for o in ("model", "reward", "ensemble", "agent"))]
            for r in rows
        ],
    )
    trust = markdown_table(
        ["Rec model", "trust λ", "T rec", "T reward", "FLOW pick = λ-ensemble pick", "FLOW ≠ first proposal"],
        [
            [
                r["rec_model"],
                f"{r['calibration']['trust']:.2f}" if "calibration" in r else "n/a",
                f"{r['calibration']['rec_temperature']:.3g}" if "calibration" in r else "n/a",
                f"{r['calibration']['reward_temperature']:.3g}" if "calibration" in r else "n/a",
                f"{r.get('flow_is_weighted_share', 0.0):.1%}",
                f"{r['flow_changed_share']:.1%}",
            ]
            for r in rows
        ],
    )
    gain = ""
    if overall and "flow_minus_model_over_models" in overall:
        g = overall["flow_minus_model_over_models"]
        gain = (
            "\n\nFLOW − Model averaged over the rec models (per user, one bootstrap over users): "
            f"**{Interval(g['mean'], g['low'], g['high'])}**"
        )
        x = overall.get("weighted_minus_model_over_models_exact")
        if x:
            gain += (
                "; the same for the λ-ensemble FLOW's pick equals (table below), from exact "
                f"expectations without draw noise: **{Interval(x['mean'], x['low'], x['high'])}**"
            )
        gain += ".\n"
    n_draws = rows[0]["n_draws"] if rows else 0
    learned_note = "" if agents == "offline" else " (the LLM agents' fallbacks, and the λ-ensemble)"
    return (
        f"## Table 4: recommendation HR@1 on {dataset} ({agents} agents)\n\n"
        f"Expected HR@1 among 20 candidates (LLaRA protocol): the mean over {n_draws} candidate draws "
        "per user; in parentheses the exact expectation over every draw of the 19 negatives, for the "
        "picks that rank by one score. Model: the rec model's top candidate; Reward: the reward model's; "
        "Ensemble: the plain mean of both models' log-probabilities; λ-ensemble: the two calibrated "
        "models weighted by the trust the offline agents learned on validation (the loop's evidence "
        "without the loop); Agent: the recommendation agent's first proposal; FLOW: the loop's final "
        "item. FLOW − X: mean paired difference over users [95 % bootstrap interval].\n\n"
        f"{main}{gain}\nThe same differences for the λ-ensemble, from exact expectations (no draw noise; "
        "FLOW's pick equals the λ-ensemble's in the share of loops the last table shows):\n\n"
        f"{exact}\n\nSampled HR@1 (mean ± population std over the first candidate seeds, the "
        f"paper's kind of number):\n\n{five}\n\nWhat the offline agents learned on validation"
        f"{learned_note}:\n\n"
        f"{trust}\n\n![HR@1]({plot_name})\n"
    )
