"""One plotting style for every evaluation report: estimates with their 95 % intervals, the paper's
values as markers, reference lines, the legend beside the data, and a caption with n, the protocol
and the code version.

A report builds a :class:`Chart` (plain data) and :func:`save_chart` writes three files from it::

    NAME.png        1600 x 900 px (twice the old plots' 384 x 256 in each direction, and more)
    NAME.svg        the same figure as vectors
    NAME.plot.json  the chart's data: every estimate with its interval, the paper's values,
                    the references and the caption (what tests read instead of pixels)

Axes are honest: a rate's axis starts at 0, so a difference of 0.01 looks like one, not a slope.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import matplotlib

matplotlib.use("Agg")  # headless: plots are files, never windows
import matplotlib.pyplot as plt  # noqa: E402

from lab.eval.metrics import bootstrap_interval, bootstrap_statistic  # noqa: E402
from recmodels.artifacts import code_version  # noqa: E402

if TYPE_CHECKING:
    from lab.eval.loops import EvalContext

FIGSIZE = (8.0, 4.5)  # inches; at DPI 200: 1600 x 900 px
DPI = 200
PAPER_NAME = "AFL/FLOW"
COLORS = ("tab:blue", "tab:orange", "tab:green", "tab:purple", "tab:brown", "tab:pink", "tab:olive")
REFERENCE_STYLES = ("--", ":", "-.", (0, (5, 1, 1, 1)))

X = str | int | float


@dataclass(frozen=True)
class Estimate:
    """One of our numbers with its 95 % interval."""

    x: X
    value: float
    low: float
    high: float


@dataclass(frozen=True)
class Series:
    """A named row of estimates; ``paper`` maps an x to the paper's value of the same thing."""

    label: str
    estimates: tuple[Estimate, ...]
    paper: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Reference:
    """A horizontal line: a value that holds for every x (the paper's LLaRA, chance...)."""

    label: str
    value: float


@dataclass(frozen=True)
class Chart:
    """Everything a plot shows. ``layout``: "grouped" (categories on x, one bar per series) or
    "line" (numeric x, one line with an interval band per series). ``paper_note`` says where the
    paper's values come from, or why there are none."""

    name: str
    title: str
    xlabel: str
    ylabel: str
    series: tuple[Series, ...]
    caption: str
    layout: Literal["grouped", "line"] = "grouped"
    references: tuple[Reference, ...] = ()
    paper_note: str = ""
    y_max: float | None = None


def caption(*, n: str, protocol: str, code: str, interval: str = "95 % bootstrap over users") -> str:
    """The caption every plot carries: how many, how measured, which code, which interval."""
    return f"n = {n}. {protocol}. Intervals: {interval}. Code {code}."


def mean_estimate(x: X, values: Sequence[float], *, seed: int = 0) -> Estimate:
    """The mean of per-user values with its bootstrap interval over the users."""
    values = list(values)
    mean = sum(values) / len(values) if values else 0.0
    low, high = bootstrap_interval(values, seed=seed)
    return Estimate(x, mean, low, high)


def statistic_estimate(x: X, n_users: int, statistic: Callable[[Sequence[int]], float]) -> Estimate:
    """A statistic of the users (e.g. micro F1 of pooled items) with its bootstrap interval."""
    low, high = bootstrap_statistic(n_users, statistic)
    return Estimate(x, statistic(range(n_users)), low, high)


def paper_key(x: X) -> str:
    return str(x)


# --------------------------------------------------------------------------- rendering


def save_chart(directory: Path, chart: Chart) -> Path:
    """Write NAME.png, NAME.svg and NAME.plot.json into ``directory``; returns the PNG's path."""
    _check(chart)
    fig, ax = plt.subplots(figsize=FIGSIZE, dpi=DPI)
    (_draw_grouped if chart.layout == "grouped" else _draw_lines)(ax, chart)
    for style, ref in zip(_cycle(REFERENCE_STYLES, len(chart.references)), chart.references, strict=True):
        ax.axhline(ref.value, linestyle=style, color="dimgrey", linewidth=1.2, label=ref.label)
    ax.set(title=chart.title, xlabel=chart.xlabel, ylabel=chart.ylabel)
    ax.set_ylim(0.0, chart.y_max if chart.y_max is not None else _top(chart))
    ax.grid(alpha=0.3, axis="y")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)  # beside the data
    note = f"{chart.caption} {chart.paper_note}".strip()
    fig.text(0.01, 0.01, "\n".join(textwrap.wrap(note, 150)), fontsize=7, va="top", ha="left")
    png = directory / f"{chart.name}.png"
    for path in (png, directory / f"{chart.name}.svg"):
        fig.savefig(path, bbox_inches="tight", pad_inches=0.15)
    plt.close(fig)
    (directory / f"{chart.name}.plot.json").write_text(
        json.dumps(asdict(chart), indent=1, default=str) + "\n"
    )
    return png


def _check(chart: Chart) -> None:
    for series in chart.series:
        for e in series.estimates:
            if not e.low - 1e-9 <= e.value <= e.high + 1e-9:
                raise ValueError(f"{chart.name}/{series.label}@{e.x}: {e.value} outside [{e.low}, {e.high}]")


def _top(chart: Chart) -> float:
    values = [e.high for s in chart.series for e in s.estimates]
    values += [v for s in chart.series for v in s.paper.values()] + [r.value for r in chart.references]
    top = max(values, default=1.0)
    return min(1.0, max(top * 1.15, 0.1)) if top <= 1.0 else top * 1.15  # an all-zero plot still has an axis


def _cycle(values: Sequence, n: int) -> list:
    return [values[i % len(values)] for i in range(n)]


def _categories(chart: Chart) -> list[X]:
    seen: list[X] = []
    for series in chart.series:
        seen += [e.x for e in series.estimates if e.x not in seen]
    return seen


def _draw_grouped(ax: plt.Axes, chart: Chart) -> None:
    groups = _categories(chart)
    width = 0.8 / max(len(chart.series), 1)
    paper_labelled = False
    for offset, (color, series) in enumerate(
        zip(_cycle(COLORS, len(chart.series)), chart.series, strict=True)
    ):
        shift = (offset - (len(chart.series) - 1) / 2) * width
        xs = [groups.index(e.x) + shift for e in series.estimates]
        values = [e.value for e in series.estimates]
        errors = [[e.value - e.low for e in series.estimates], [e.high - e.value for e in series.estimates]]
        ax.bar(xs, values, width=width * 0.9, color=color, alpha=0.75, label=series.label)
        ax.errorbar(xs, values, yerr=errors, fmt="none", ecolor="black", elinewidth=1, capsize=3)
        for x, key in ((groups.index(e.x) + shift, paper_key(e.x)) for e in series.estimates):
            if key in series.paper:
                label = None if paper_labelled else f"paper ({PAPER_NAME})"
                ax.plot(
                    x, series.paper[key], "D", color="red", markeredgecolor="black", markersize=6, label=label
                )
                paper_labelled = True
    ax.set_xticks(range(len(groups)), [str(g) for g in groups])


def _draw_lines(ax: plt.Axes, chart: Chart) -> None:
    paper_labelled = False
    for color, series in zip(_cycle(COLORS, len(chart.series)), chart.series, strict=True):
        xs = [float(e.x) for e in series.estimates]
        ax.plot(xs, [e.value for e in series.estimates], marker="o", color=color, label=series.label)
        ax.fill_between(
            xs, [e.low for e in series.estimates], [e.high for e in series.estimates], color=color, alpha=0.18
        )
        for key, value in series.paper.items():
            label = f"paper {series.label} ({PAPER_NAME})" if not paper_labelled else f"paper {series.label}"
            ax.plot(float(key), value, "D", color=color, markeredgecolor="black", markersize=8, label=label)
            paper_labelled = True
    xs = sorted(
        {float(e.x) for s in chart.series for e in s.estimates}
        | {float(k) for s in chart.series for k in s.paper}
    )
    ax.set_xticks(xs, [f"{x:g}" for x in xs])


def loop_caption(ctx: EvalContext, n: str, detail: str = "", *, limit_on_x: bool = False) -> str:
    """The caption of a loop experiment's plot: n, the protocol of ``ctx``'s run, the code version
    (``limit_on_x``: the plot's x axis is the round limit, so the settings' one is not quoted)."""
    s = ctx.settings
    limit = "" if limit_on_x else f"round limit {s.max_rounds}, "
    protocol = (
        f"{ctx.dataset.name}, {ctx.agents} agents, reward model {s.reward_model}, "
        f"{limit}{s.n_candidates} candidates (LLaRA protocol)" + (f"; {detail}" if detail else "")
    )
    return caption(n=n, protocol=protocol, code=code_version())
