"""The report of `recloop eval model`: tables with intervals, the paper's numbers beside ours, a plot.

The command's numbers (exact expected HR@1-of-20 with its 95 % bootstrap interval over users, the
5-seed sampled HR@1, Hit@10, NDCG@10, paired differences) are written to a run directory like every
other evaluation's (:mod:`lab.eval.common`), so the runs API and the web UI list them too.

The paper's figures are AFL/FLOW's Table 4 "Model" column (test split, HR@1 of 20). They are
quoted only for the test split of the warm protocol: the paper has no validation or cold-start
numbers.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from lab.eval.common import markdown_table
from lab.eval.paper import PAPER_MODEL_HR1
from lab.eval.plots import Chart, Estimate, Reference, Series, caption, save_chart
from recmodels.artifacts import code_version

CHANCE_HR1 = 1 / 20  # one target among 20 candidates
PLOT_NAME = "hr1.png"
REFERENCES = ("llara", "morec")  # the paper's text-aware rows: the LLM-based one and the text-encoder one


def model_report(
    run_path: Path,
    results: Mapping[str, Mapping[str, Any]],
    paired: Mapping[str, Mapping[str, Any]],
    *,
    dataset: str,
    split: str,
    cold: Mapping[str, Any] | None = None,
) -> str:
    """report.md's text; writes the interval plot into ``run_path``. ``results``: each model's
    result with its ``hr1_expected_ci95`` (the evaluated model first); ``paired``: the first model
    minus each other one (the command's ``compare`` section)."""
    with_paper = split == "test" and not cold
    main = next(iter(results))
    rows = []
    for name, r in results.items():
        members = r.get("members", 1)
        low, high = r["hr1_expected_ci95"]
        paper = PAPER_MODEL_HR1.get((dataset, name)) if with_paper else None
        rows.append(
            [
                name + (f" x{members}" if members > 1 else ""),
                r["n_rows"],
                f"{r['hr1_expected']:.4f} [{low:.4f}, {high:.4f}]",
                f"{r['hr1_mean']:.4f} ± {r['hr1_std']:.4f}",
                r["hit10"],
                r["ndcg10"],
                f"{paper:.4f}" if paper is not None else "n/a",
            ]
        )
    header = ["model", "rows", "HR@1 exp. [95 %]", "HR@1, 5 seeds", "Hit@10", "NDCG@10", "paper HR@1"]
    lines = [f"## `eval model`: {main} on {dataset} / {split}", ""]
    if cold:
        lines += [_cold_line(cold), ""]
    lines += [markdown_table(header, rows), ""]
    if with_paper:
        references = {name: PAPER_MODEL_HR1.get((dataset, name)) for name in REFERENCES}
        quoted = ", ".join(f"{name} {value:.4f}" for name, value in references.items() if value is not None)
        lines += [f"Paper (AFL/FLOW Table 4, model column, test): {quoted}.", ""]
    else:
        lines += ["The paper reports test HR@1 of the warm protocol only: no paper column here.", ""]
    if paired:
        diff_rows = [
            [
                f"{main} − {other}",
                _interval(d["hr1_expected_diff"]),
                _interval(d["hr1_sampled_diff"]),
            ]
            for other, d in paired.items()
        ]
        lines += [
            "Paired differences (same users, same candidate draws; 95 % bootstrap):",
            "",
            markdown_table(["difference", "expected HR@1", "5-seed sampled HR@1"], diff_rows),
            "",
        ]
    save_chart(
        run_path,
        interval_chart(results, dataset=dataset, split=split, with_paper=with_paper, cold=bool(cold)),
    )
    lines += [f"![expected HR@1 with 95 % intervals]({PLOT_NAME})", ""]
    return "\n".join(lines)


def interval_chart(
    results: Mapping[str, Mapping[str, Any]],
    *,
    dataset: str,
    split: str,
    with_paper: bool,
    cold: bool = False,
) -> Chart:
    """Each model's expected HR@1 with its interval, the paper's value of the same model as a marker,
    the paper's text-aware references and chance as lines."""
    names = list(results)
    estimates = []
    for name in names:
        low, high = results[name]["hr1_expected_ci95"]
        estimates.append(Estimate(name, results[name]["hr1_expected"], low, high))
    paper = {n: v for n in names if with_paper and (v := PAPER_MODEL_HR1.get((dataset, n))) is not None}
    references = [
        Reference(f"paper {name}", value)
        for name in REFERENCES
        if with_paper and (value := PAPER_MODEL_HR1.get((dataset, name))) is not None
    ]
    n_rows = max((r["n_rows"] for r in results.values()), default=0)
    protocol = (
        f"{dataset} / {split}" + (", cold start" if cold else "") + ", exact expected HR@1 of 20 (LLaRA)"
    )
    return Chart(
        name=PLOT_NAME.removesuffix(".png"),
        title=f"{dataset} / {split}: expected HR@1 of 20",
        xlabel="model",
        ylabel="expected HR@1",
        series=(Series("ours", tuple(estimates), paper),),
        references=(*references, Reference("chance (1/20)", CHANCE_HR1)),
        caption=caption(n=f"{n_rows} rows", protocol=protocol, code=code_version()),
        paper_note=(
            "Paper: AFL/FLOW Table 4, model column (test)."
            if with_paper
            else "The paper reports test HR@1 of the warm protocol only: no paper values here."
        ),
    )


def _interval(diff: Mapping[str, float]) -> str:
    return f"{diff['mean']:+.4f} [{diff['low']:+.4f}, {diff['high']:+.4f}]"


def _cold_line(cold: Mapping[str, Any]) -> str:
    seeds = cold.get("seeds", [cold.get("seed", 0)])
    return (
        f"Cold start: {cold['fraction']:.0%} of the items held out ({cold['held_out_items']} per hold-out, "
        f"hold-out seeds {', '.join(map(str, seeds))}); {cold['rows']} rows whose target is held out. "
        f"Chance is {CHANCE_HR1:.2f}."
    )
