"""The CLI summary carries an interval and n on the mean score and every band share;
checked against the plain mean and Wilson's interval written out here."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from axon_eval.bench.estimates import synthetic_results
from axon_eval.cli import main
from axon_eval.stats.intervals import INTERVAL_COVERS
from axon_eval.reporting.summary_intervals import interval_lines

ROOT = Path(__file__).resolve().parents[1]


def wilson(k: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def test_interval_lines_give_wilson_shares_for_independent_segments():
    res = synthetic_results(400, seed=2)
    lines = interval_lines(res, n_boot=200)
    assert lines[0].startswith("intervals (95%") and lines[-1].strip() == INTERVAL_COVERS
    poor = next(line for line in lines if line.strip().startswith("share poor"))
    k = int((res["band"] == "poor").sum())
    lo, hi = wilson(k, len(res))
    m = re.search(r"share poor: ([0-9.]+)% \(([0-9.]+)% to ([0-9.]+)%\), n = 400", poor)
    assert m, poor
    assert float(m.group(1)) == pytest.approx(100 * k / 400, abs=0.5)
    assert float(m.group(2)) == pytest.approx(100 * lo, rel=0.05) and float(m.group(3)) == pytest.approx(100 * hi, rel=0.05)
    mean = next(line for line in lines if line.strip().startswith("mean score"))
    assert f"{res['score'].mean():.1f}" in mean and "n = 400" in mean


def test_interval_lines_refuse_mixed_judges_and_skip_unjudged():
    a, b = synthetic_results(50, seed=1), synthetic_results(50, seed=2, judge_id="SIMULATED-other")
    import pandas as pd

    (line,) = interval_lines(pd.concat([a, b], ignore_index=True))
    assert line.startswith("intervals: not computed") and "judge ids" in line
    assert interval_lines(a.assign(status="error")) == []


def test_cli_summary_prints_intervals(tmp_path, capsys):
    assert main(["evaluate", "--turns", str(ROOT / "data/turns/sample_turns.jsonl"), "--judge", "heuristic",
                 "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    for figure in ("mean score", "share good", "share partial", "share poor"):
        assert re.search(rf"  {figure}: [0-9.]+%? \([0-9.]+%? to [0-9.]+%?\), n = 97 segments", out), figure
    assert "not judge error" in out
