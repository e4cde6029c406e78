"""The one plotting style (lab/eval/plots.py): what a plot's data file promises, checked without pixels."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from plot_data import check_plot, png_size

from lab.eval.plots import (
    Chart,
    Estimate,
    Reference,
    Series,
    caption,
    mean_estimate,
    save_chart,
    statistic_estimate,
)

CAPTION = caption(n="3 users", protocol="lastfm, offline agents", code="abc1234")


def _chart(**changes) -> Chart:
    ours = Series(
        "FLOW", (Estimate("sasrec", 0.3, 0.2, 0.4), Estimate("caser", 0.25, 0.1, 0.3)), {"sasrec": 0.377}
    )
    fields = dict(name="t", title="T", xlabel="x", ylabel="HR@1", series=(ours,), caption=CAPTION,
                  references=(Reference("chance (1/20)", 0.05),), paper_note="Paper: Table 4.")  # fmt: skip
    return Chart(**(fields | changes))


def test_a_chart_writes_png_svg_and_its_data(tmp_path: Path) -> None:
    png = save_chart(tmp_path, _chart())
    data = check_plot(png, paper=True)
    assert png_size(png)[0] >= 1500  # 2x the old 384 px and more
    assert data["series"][0]["estimates"][1] == {"x": "caser", "value": 0.25, "low": 0.1, "high": 0.3}
    assert data["series"][0]["paper"] == {"sasrec": 0.377}
    assert data["references"] == [{"label": "chance (1/20)", "value": 0.05}]
    assert (
        data["caption"]
        == "n = 3 users. lastfm, offline agents. Intervals: 95 % bootstrap over users. Code abc1234."
    )
    assert "<svg" in (tmp_path / "t.svg").read_text()


def test_a_line_chart_with_the_papers_end_point(tmp_path: Path) -> None:
    flow = Series("FLOW", tuple(Estimate(limit, 0.3, 0.25, 0.35) for limit in (1, 2, 3)), {"4": 0.377})
    data = check_plot(save_chart(tmp_path, _chart(series=(flow,), layout="line")), paper=True)
    assert [e["x"] for e in data["series"][0]["estimates"]] == [1, 2, 3]


def test_an_estimate_outside_its_interval_is_refused(tmp_path: Path) -> None:
    bad = Series("FLOW", (Estimate("sasrec", 0.5, 0.2, 0.4),))
    with pytest.raises(ValueError, match="outside"):
        save_chart(tmp_path, _chart(series=(bad,)))
    assert not list(tmp_path.iterdir())  # nothing half-written


def test_a_plot_without_paper_values_must_say_why(tmp_path: Path) -> None:
    plain = Series("FLOW", (Estimate("sasrec", 0.3, 0.2, 0.4),))
    png = save_chart(tmp_path, _chart(series=(plain,), paper_note="The paper gives no numbers for Figure 5."))
    check_plot(png, paper=False)
    with pytest.raises(AssertionError, match="none is drawn"):
        check_plot(png, paper=True)
    json_path = tmp_path / "t.plot.json"
    data = json.loads(json_path.read_text())
    json_path.write_text(json.dumps(data | {"paper_note": ""}))
    with pytest.raises(AssertionError, match="say why"):
        check_plot(png, paper=False)


def test_estimates_bracket_the_mean_and_a_statistic() -> None:
    e = mean_estimate("x", [0.0, 1.0, 1.0, 0.0, 1.0])
    assert e.value == pytest.approx(0.6) and e.low <= 0.6 <= e.high and e.high - e.low > 0.2
    same = mean_estimate("x", [0.5] * 4)
    assert (same.low, same.value, same.high) == (0.5, 0.5, 0.5)
    values = [0.0, 1.0, 1.0, 1.0]
    share = statistic_estimate("x", 4, lambda users: sum(values[u] for u in users) / len(users))
    assert share.value == pytest.approx(0.75) and share.low <= share.value <= share.high
