"""Checks on a report's plot data (``NAME.plot.json`` beside ``NAME.png``), not on its pixels."""

from __future__ import annotations

import json
import struct
from pathlib import Path

OLD_PLOT_PX = (384, 256)  # the plots' size before lab/eval/plots.py


def png_size(path: Path) -> tuple[int, int]:
    header = path.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    return struct.unpack(">II", header[16:24])


def check_plot(png: Path, *, paper: bool) -> dict:
    """The plot's data: intervals on every estimate, a caption with n / protocol / code version,
    the paper's values as markers (``paper``) or a note saying why there are none; SVG beside it
    and the PNG at least twice the old size in each direction. Returns the data."""
    stem = png.name.removesuffix(".png")
    data_path = png.with_name(f"{stem}.plot.json")
    assert data_path.is_file(), f"{png}: no plot data {data_path.name}"
    assert png.with_name(f"{stem}.svg").stat().st_size > 1000
    width, height = png_size(png)
    assert width >= 2 * OLD_PLOT_PX[0] and height >= 2 * OLD_PLOT_PX[1], (png, width, height)
    data = json.loads(data_path.read_text())
    assert data["series"], f"{png}: no series"
    for series in data["series"]:
        assert series["estimates"], f"{png}: {series['label']} has no estimates"
        for e in series["estimates"]:
            assert e["low"] <= e["value"] <= e["high"], (png.name, series["label"], e)
            assert e["low"] >= 0.0 and e["high"] <= 1.0, (png.name, series["label"], e)  # rates
    caption = data["caption"]
    assert caption.startswith("n = ") and "Intervals: 95 %" in caption and "Code " in caption, caption
    markers = [v for s in data["series"] for v in s["paper"].values()]
    if paper:
        assert markers, f"{png}: the paper has values for this plot but none is drawn"
        assert all(0.0 < v < 1.0 for v in markers)
        assert data["paper_note"].startswith("Paper:") or "Table" in data["paper_note"]
    else:
        assert not markers and data["paper_note"], f"{png}: say why the paper's values are missing"
    return data
