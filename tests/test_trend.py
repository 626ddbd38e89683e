"""Trends across runs through DuckDB: each run's figures equal that run's own summary
(summaries.summarise on its results read with pandas, and Wilson's formula written out here), a
breakdown by client equals a pandas groupby, mixed judges are refused unless allowed, and the CLI verb."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from axon_eval.bench.estimates import synthetic_run_folders
from axon_eval.cli import main
from axon_eval.runs.manifest import RunManifest
from axon_eval.runs.trend import trend, wide
from axon_eval.summaries import MixedResultsError, summarise


def wilson(k: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    return synthetic_run_folders(tmp_path_factory.mktemp("trend"), 4, 300, seed=3)


def test_each_run_equals_its_own_summary(folders):
    table = trend(folders, n_boot=100, seed=0)
    assert table.attrs["n_runs"] == 4 and table.attrs["n_rows"] == 1200
    assert list(dict.fromkeys(table["run_id"])) == [f.name for f in folders]  # run-date order
    for folder in folders:
        res = pd.read_parquet(folder / "results")
        s = summarise(res)
        rows = table[table["run_id"] == folder.name].set_index("figure")
        assert rows.loc["mean score", "estimate"] == pytest.approx(s["score"]["mean"], abs=1e-9)
        assert rows.loc["mean score", "n"] == s["judged"] == 300
        for band in ("good", "partial", "poor"):
            assert rows.loc[f"share {band}", "estimate"] == pytest.approx(s["band_shares"][band], abs=1e-9)
            k = int((res["band"] == band).sum())
            lo, hi = wilson(k, len(res))  # one segment per turn: Wilson
            assert (rows.loc[f"share {band}", "lo"], rows.loc[f"share {band}", "hi"]) == pytest.approx((lo, hi), abs=1e-9)
        assert rows.loc["mean sql_quality", "estimate"] == pytest.approx(res["sql_quality"].mean(), abs=1e-9)
        lo, hi = rows.loc["mean score", ["lo", "hi"]]
        assert lo < rows.loc["mean score", "estimate"] < hi
    assert "mean score" in wide(table).columns and len(wide(table)) == 4


def test_breakdown_by_client_equals_a_groupby(folders):
    table = trend(folders[:2], by="client", n_boot=50)
    res = pd.read_parquet(folders[0] / "results")
    expected = res.groupby("client")["score"].mean()
    got = table[(table["run_id"] == folders[0].name) & (table["figure"] == "mean score")].set_index("client")["estimate"]
    pd.testing.assert_series_equal(got.sort_index(), expected.sort_index(), check_names=False, atol=1e-9)
    with pytest.raises(ValueError, match="by must be one of"):
        trend(folders, by="question")


def test_mixed_judges_are_refused_unless_allowed(tmp_path):
    same = synthetic_run_folders(tmp_path / "a", 2, 100, seed=0)
    other = synthetic_run_folders(tmp_path / "b", 1, 100, seed=9, judge_id="SIMULATED-other-judge")
    with pytest.raises(MixedResultsError, match="2 judge ids"):
        trend([*same, *other], n_boot=20)
    mixed = trend([*same, *other], allow_mixed=True, n_boot=20)
    assert "judge ids" in mixed.attrs["mixed"] and mixed["run_dir"].nunique() == 3  # two share a run id
    # a manifest naming another rubric is refused even when the rows agree
    m = RunManifest.read(same[1])
    m.rubric_id = "ffffffffffff"
    m.write(same[1])
    with pytest.raises(MixedResultsError, match="rubric ids"):
        trend(same, n_boot=20)


def test_cli_trend_prints_the_table_and_refuses_mixed(folders, tmp_path, capsys):
    assert main(["trend", *map(str, folders[:2]), "--n-boot", "50"]) == 0
    out = capsys.readouterr().out
    assert folders[0].name in out and "read by DuckDB" in out and "not judge error" in out
    other = synthetic_run_folders(tmp_path, 1, 50, seed=1, judge_id="SIMULATED-other-judge")
    assert main(["trend", str(folders[0]), str(other[0]), "--n-boot", "20"]) == 2
    assert "judge ids" in capsys.readouterr().err
    assert main(["trend", str(tmp_path / "nope")]) == 2


def test_synthetic_folders_are_seeded(tmp_path):
    a = synthetic_run_folders(tmp_path / "a", 1, 50, seed=5)[0]
    b = synthetic_run_folders(tmp_path / "b", 1, 50, seed=5)[0]
    pd.testing.assert_frame_equal(pd.read_parquet(a / "results"), pd.read_parquet(b / "results"))
    assert np.isfinite(pd.read_parquet(a / "results")["score"]).all()
