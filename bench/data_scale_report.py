"""The report of bench.data_scale: a markdown table and a log-log plot of cost against size."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

MOVIELENS_SUFFIX = "_movielens"
"""A figure taken on MovieLens in the same run: its key is the figure's with this suffix."""


TABLE_COLUMNS = (
    ("build_s", "build s"),
    ("build_peak_rss_mb", "build MB"),
    ("train_rows_per_s", "train rows/s"),
    ("train_peak_rss_mb", "train MB"),
    ("prepare_s", "prepare s"),
    ("ready_s", "ready s"),
    ("worker_rss_mb", "worker MB"),
    ("recommend_p50_ms", "recommend p50 ms"),
    ("command_p50_ms", "command p50 ms"),
    ("search_p50_ms", "search p50 ms"),
    ("sessions_p50_ms", "sessions p50 ms"),
)


def _cell(value: Any) -> str:
    if value is None:
        return "failed"
    if isinstance(value, float) and value >= 100:
        return f"{value:,.0f}"
    return f"{value:,}" if isinstance(value, int) else f"{value:.1f}" if value >= 10 else f"{value:.2f}"


def markdown_table(results: list[dict]) -> str:
    """One row per size, and MovieLens' row (from the first size: the same run) first."""
    header = "| dataset | items | interactions | " + " | ".join(t for _, t in TABLE_COLUMNS) + " |"
    lines = [header, "|---|---:|---:|" + "---:|" * len(TABLE_COLUMNS)]
    if results:
        ml = results[0]
        cells = " | ".join(_cell(ml.get(k + MOVIELENS_SUFFIX)) for k, _ in TABLE_COLUMNS)
        items = ml.get("n_items" + MOVIELENS_SUFFIX)
        lines.append(f"| MovieLens-100k | {'-' if items is None else _cell(items)} | 100,000 | {cells} |")
    for r in results:
        cells = " | ".join(_cell(r.get(k)) for k, _ in TABLE_COLUMNS)
        lines.append(f"| synthetic | {r['items']:,} | {r['interactions']:,} | {cells} |")
    notes = [
        f"- {r['items']:,} items / {r['interactions']:,} interactions, {stage_name}: {message}"
        for r in results
        for stage_name, message in r.get("errors", {}).items()
    ]
    if results:
        notes += [
            f"- MovieLens, {s}: {m}" for s, m in results[0].get("errors" + MOVIELENS_SUFFIX, {}).items()
        ]
    return "\n".join(lines + (["", "Failed or skipped stages:", *notes] if notes else []))


PLOTTED = (
    ("build_s", "build (s)"),
    ("train_s_per_100k_rows", "training (s per 100k rows)"),
    ("train_peak_rss_mb", "training peak RSS (MB)"),
    ("worker_rss_mb", "serving worker RSS (MB)"),
    ("ready_s", "start to /readyz (s)"),
    ("recommend_p50_ms", "recommendation p50 (ms)"),
    ("command_p50_ms", "steering command p50 (ms)"),
    ("search_p50_ms", "catalog search p50 (ms)"),
)


def _plotted(result: dict, key: str, suffix: str = "") -> float | None:
    if key == "train_s_per_100k_rows":
        rate = result.get("train_rows_per_s" + suffix)
        return 1e5 / rate if rate else None
    value = result.get(key + suffix)
    return value if isinstance(value, int | float) and value > 0 else None


def write_plot(results: list[dict], path: Path) -> None:
    """Cost against catalog size, log-log: a line per log size, MovieLens as a star."""
    import matplotlib

    matplotlib.use("Agg")  # headless: plots are files, never windows
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullFormatter

    fig, axes = plt.subplots(2, 4, figsize=(16, 7.5))
    for ax, (key, title) in zip(axes.flat, PLOTTED, strict=True):
        for interactions in sorted({r["interactions"] for r in results}):
            points = [(r["items"], _plotted(r, key)) for r in results if r["interactions"] == interactions]
            points = [(x, y) for x, y in sorted(points) if y is not None]
            if points:
                ax.plot(*zip(*points, strict=True), marker="o", label=f"{interactions:,} interactions")
        ml = _plotted(results[0], key, MOVIELENS_SUFFIX) if results else None
        movielens_items = results[0].get("n_items" + MOVIELENS_SUFFIX) if results else None
        if ml is not None and movielens_items:
            ax.plot([movielens_items], [ml], marker="*", markersize=12, linestyle="", color="black",
                    label="MovieLens-100k")  # fmt: skip
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.xaxis.set_minor_formatter(NullFormatter())  # catalog sizes in decades: minor labels overlap
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("catalog items")
        ax.grid(True, which="both", alpha=0.3)
    handles, labels = [], []
    for ax in axes.flat:
        for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
            if lab not in labels:
                handles.append(h)
                labels.append(lab)
    fig.legend(handles, labels, loc="lower center", ncol=max(1, len(labels)))
    fig.suptitle("recloop cost against catalog size (python -m bench.data_scale; synthetic data, cost only)")
    fig.tight_layout(rect=(0, 0.06, 1, 0.96))
    fig.savefig(path, dpi=120)
    plt.close(fig)


def write_report(results: list[dict], out_dir: Path, meta: dict) -> Path:
    """results.json, report.md (the table, the conditions) and data_scale.png in ``out_dir``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "results.json").write_text(json.dumps({"meta": meta, "results": results}, indent=2))
    write_plot(results, out_dir / "data_scale.png")
    conditions = ", ".join(f"{k} {v}" for k, v in meta.items())
    report = [
        "# How recloop's cost grows with the catalog and the log",
        "",
        f"`python -m bench.data_scale` ({conditions}).",
        "",
        markdown_table(results),
        "",
        "Training rows/s and MB: the served model (the others' in results.json); p50s one request at a "
        "time over real HTTP. Synthetic data: cost only, never accuracy.",
        "",
        "![cost against size](data_scale.png)",
        "",
    ]
    path = out_dir / "report.md"
    path.write_text("\n".join(report))
    return path
