"""The report of `recloop eval model`: tables with intervals, the paper's numbers beside ours, a plot.

The command's numbers (exact expected HR@1-of-20 with its 95 % bootstrap interval over users, the
5-seed sampled HR@1, Hit@10, NDCG@10, paired differences) are written to a run directory like every
other evaluation's (:mod:`app.eval.common`), so the runs API and the web UI list them too.

The paper's figures are AFL/FLOW's Table 4 "Model" column (test split, HR@1 of 20). They are
quoted only for the test split of the warm protocol: the paper has no validation or cold-start
numbers.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # headless: plots are files, never windows
import matplotlib.pyplot as plt  # noqa: E402

from app.eval.common import markdown_table  # noqa: E402
from app.eval.paper import PAPER_MODEL_HR1  # noqa: E402

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
    interval_plot(run_path / PLOT_NAME, results, dataset=dataset, split=split, with_paper=with_paper)
    lines += [f"![expected HR@1 with 95 % intervals]({PLOT_NAME})", ""]
    return "\n".join(lines)


def interval_plot(
    path: Path, results: Mapping[str, Mapping[str, Any]], *, dataset: str, split: str, with_paper: bool
) -> Path:
    """Each model's expected HR@1 with its interval (one row per model), the paper's value of the
    same model as a cross, the paper's text-aware references and chance as vertical lines."""
    names = list(results)
    fig, ax = plt.subplots(figsize=(7.0, 0.6 * len(names) + 1.6), dpi=80)
    paper_labelled = False
    for y, name in enumerate(names):
        r = results[name]
        low, high = r["hr1_expected_ci95"]
        ax.errorbar(
            r["hr1_expected"], y, xerr=[[r["hr1_expected"] - low], [high - r["hr1_expected"]]],
            fmt="o", capsize=4, color="tab:blue", label="ours, 95 % interval" if y == 0 else None,
        )  # fmt: skip
        paper = PAPER_MODEL_HR1.get((dataset, name)) if with_paper else None
        if paper is not None:
            ax.plot(paper, y, "x", color="tab:red", markersize=9, label=None if paper_labelled else "paper")
            paper_labelled = True
    if with_paper:
        for name, style in zip(REFERENCES, ("--", ":"), strict=True):
            value = PAPER_MODEL_HR1.get((dataset, name))
            if value is not None:
                ax.axvline(value, linestyle=style, color="tab:red", alpha=0.6, label=f"paper {name}")
    ax.axvline(CHANCE_HR1, color="grey", alpha=0.6, label="chance")
    ax.set_yticks(range(len(names)), names)
    ax.set(title=f"{dataset} / {split}: expected HR@1 of 20", xlabel="HR@1")
    ax.invert_yaxis()
    ax.grid(alpha=0.3, axis="x")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))  # beside the rows, never on them
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def _interval(diff: Mapping[str, float]) -> str:
    return f"{diff['mean']:+.4f} [{diff['low']:+.4f}, {diff['high']:+.4f}]"


def _cold_line(cold: Mapping[str, Any]) -> str:
    seeds = cold.get("seeds", [cold.get("seed", 0)])
    return (
        f"Cold start: {cold['fraction']:.0%} of the items held out ({cold['held_out_items']} per hold-out, "
        f"hold-out seeds {', '.join(map(str, seeds))}); {cold['rows']} rows whose target is held out. "
        f"Chance is {CHANCE_HR1:.2f}."
    )
