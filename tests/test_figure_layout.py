"""Figures are readable as saved: no text of study 03's noise figures falls outside the canvas, and the
study-09 trend of one run spans days around it, not years."""

from __future__ import annotations

from pathlib import Path

import matplotlib.dates as mdates
import pandas as pd
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg

from axon_eval import reporting as plots
from axon_eval import runs
from axon_eval.bench.noise import simulated_samples_table
from axon_eval.reporting.estimates import trend_figure
from axon_eval.rubric import Rubric
from axon_eval.runs.trend import trend
from axon_eval.stats.noise import judge_noise_summary

ROOT = Path(__file__).resolve().parents[1]


def drawn_outside(fig, tolerance_px: float = 1.0) -> str | None:
    """Where what ``fig`` draws (its tight bounding box: every text and axis as drawn, the extent
    ``bbox_inches="tight"`` would save) leaves the canvas, or ``None`` when it all fits."""
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    box = fig.get_tightbbox(canvas.get_renderer())  # inches
    width, height = fig.get_size_inches()
    slack = tolerance_px / fig.dpi
    if box.x0 < -slack or box.y0 < -slack or box.x1 > width + slack or box.y1 > height + slack:
        return (f"drawn over x {box.x0:.2f}..{box.x1:.2f} in of {width:.2f}, "
                f"y {box.y0:.2f}..{box.y1:.2f} in of {height:.2f}")
    return None


@pytest.fixture(scope="module")
def summary():
    return judge_noise_summary(simulated_samples_table(60, 3, seed=1), Rubric.default(), seed=0, n_boot=20)


@pytest.mark.parametrize("name", ["sd_icc", "flip_curve", "decision_study", "ensemble"])
def test_no_text_of_a_noise_figure_is_cut_off(name, summary):
    figure = {
        "sd_icc": lambda: plots.noise_sd_icc(summary.sd, summary.icc, simulated=True),
        "flip_curve": lambda: plots.noise_flip_curve(summary.flip, simulated=True),
        "decision_study": lambda: plots.noise_decision_study(summary.decision, summary.variance, target=0.9,
                                                             simulated=True),
        "ensemble": lambda: plots.noise_ensemble(summary.ensemble.table, 0.05, simulated=True),
    }[name]()
    assert drawn_outside(figure) is None, drawn_outside(figure)


def test_the_trend_of_one_run_spans_days_around_it(tmp_path):
    run = runs.evaluate(ROOT / "data" / "turns" / "sample_turns.jsonl", "heuristic", out_dir=tmp_path,
                        progress=False, cache=False, limit=10)
    table = trend([run.run_dir], n_boot=20)
    when = pd.to_datetime(table["run_date"].iloc[0])
    fig = trend_figure(table)
    for ax in fig.axes:
        low, high = (pd.Timestamp(mdates.num2date(x)) for x in ax.get_xlim())
        assert low < when < high, (low, when, high)
        assert pd.Timedelta(hours=12) <= high - low <= pd.Timedelta(days=7), (low, high)
    assert drawn_outside(fig) is None, drawn_outside(fig)


def test_the_trend_of_runs_a_year_apart_shows_the_year(tmp_path):
    table = pd.DataFrame({"figure": ["mean score"] * 2, "run_date": ["2025-01-10T10:00:00Z", "2026-01-10T10:00:00Z"],
                          "estimate": [70.0, 72.0], "lo": [68.0, 70.0], "hi": [72.0, 74.0]})
    fig = trend_figure(table, figures=("mean score",))
    low, high = (pd.Timestamp(mdates.num2date(x)) for x in fig.axes[0].get_xlim())
    assert low < pd.Timestamp("2025-01-10", tz="UTC") and high > pd.Timestamp("2026-01-10", tz="UTC")
    assert high - low < pd.Timedelta(days=2 * 366)
