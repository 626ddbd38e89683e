"""``compare`` prints the paired tests: the band transition test and Holm-adjusted
p-values, checked against statsmodels (SquareTable.homogeneity = Stuart-Maxwell; multipletests holm) and
scipy's Wilcoxon on the two runs' rows read here."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.stats import wilcoxon
from statsmodels.stats.contingency_tables import SquareTable
from statsmodels.stats.multitest import multipletests

from axon_eval import runs
from axon_eval.cli import main
from axon_eval.rubric import BANDS, DIMENSIONS

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    out = tmp_path_factory.mktemp("runs")
    a = runs.evaluate(ROOT / "data/turns/sample_turns.jsonl", "heuristic", "axon-v1", out_dir=out, name="a",
                      progress=False, seed=0).run_dir
    b = runs.rescore(a, "axon-v1-faithcap", out_dir=out, name="b").run_dir
    return a, b


def test_compare_prints_the_band_test_and_holm_adjusted_p_values(two_runs, capsys):
    a, b = two_runs
    assert main(["compare", str(a), str(b), "--no-write", "--n-boot", "200"]) == 0
    out = capsys.readouterr().out
    ra, rb = (runs.load_run(x).results.set_index("segment_id") for x in (a, b))
    both = ra.index.intersection(rb.index)
    table = pd.crosstab(pd.Categorical(ra.loc[both, "band"], BANDS), pd.Categorical(rb.loc[both, "band"], BANDS),
                        dropna=False).to_numpy()
    assert "paired tests" in out and ("difference detected at alpha=0.05" in out)
    assert "Stuart-Maxwell" in out or "McNemar" in out
    off = table - np.diag(np.diag(table))
    if off.sum():  # some segment changed band
        # a band no segment moved into or out of carries no information on the difference: left out
        moving = [i for i in range(len(BANDS)) if off[i].sum() + off[:, i].sum() > 0]
        reduced = table[np.ix_(moving, moving)]
        if len(moving) == 2:  # McNemar's exact test: the discordant pairs against Binomial(b + c, 1/2)
            from scipy.stats import binomtest

            b_, c_ = int(reduced[0, 1]), int(reduced[1, 0])
            p_ref, label = binomtest(b_, b_ + c_, 0.5).pvalue, "McNemar exact"
        else:
            p_ref, label = SquareTable(reduced, shift_zeros=False).homogeneity().pvalue, "Stuart-Maxwell"
        if p_ref < 0.001:
            assert f"bands: {label} p < 0.001" in out
        else:
            shown = re.search(rf"bands: {label} p = ([0-9.]+)", out)
            assert shown and float(shown.group(1)) == pytest.approx(p_ref, rel=0.02, abs=1e-3)
    ps = []
    for d in DIMENSIONS:
        x, y = pd.to_numeric(ra.loc[both, d]), pd.to_numeric(rb.loc[both, d])
        keep = x.notna() & y.notna() & (x != y)
        ps.append(wilcoxon(x[keep], y[keep]).pvalue if keep.sum() else np.nan)
    finite = [p for p in ps if np.isfinite(p)]
    assert out.count("Holm-adjusted") == len(DIMENSIONS)
    if finite:
        holm = multipletests(finite, method="holm")[1]
        assert any(f"{v:.3g}" in out or f"{v:.2g}" in out for v in holm)
    else:  # a rescore keeps every subscore: no nonzero difference, nothing to reject
        assert out.count("Holm-adjusted p = 1.00") == len(DIMENSIONS)
