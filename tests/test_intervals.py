"""Intervals on every headline figure: Wilson, the cluster bootstrap, headline_intervals.

Oracles: statsmodels' ``proportion_confint(method="wilson")``; a plain, loop-per-replicate resampling
of the data written out here (against the vectorised multinomial weights); the normal interval
``mean -/+ 1.96 sd/sqrt(n)`` that the bootstrap approximates for independent units; plain ``groupby``
recomputations of the summary figures.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from statsmodels.stats.proportion import proportion_confint

from axon_eval import summaries
from axon_eval.rubric import BANDS, CAP_FACTS, DIMENSIONS, Rubric
from axon_eval.scoring import score_frame
from axon_eval.stats import intervals
from axon_eval.stats.intervals import (
    INTERVAL_COVERS,
    Interval,
    cluster_bootstrap,
    cluster_counts,
    format_headlines,
    headline_intervals,
    wilson_interval,
)


def run_results(n_turns: int = 120, *, bundled_every: int = 0, samples: int = 1, seed: int = 0,
                shift: int = 0) -> pd.DataFrame:
    """A synthetic ``results`` frame: ``n_turns`` turns, every ``bundled_every``-th split into 3 segments
    (``turn#1..#3``) sharing a turn-level quality, ``samples`` judge samples per segment (+-1 noise),
    every 9th turn without tools (capped), every 7th segment with no answer (null faithfulness)."""
    rubric = Rubric.default()
    rng = np.random.default_rng(seed)
    rows = []
    for t in range(n_turns):
        turn = f"eu-{t:04d}"
        n_seg = 3 if bundled_every and t % bundled_every == 0 else 1
        quality = rng.integers(0, 11, size=len(DIMENSIONS))
        for s in range(n_seg):
            seg = f"{turn}#{s + 1}" if n_seg > 1 else turn
            truth = np.clip(quality + rng.integers(-1, 2, size=len(DIMENSIONS)) + shift, 0, 10)
            for k in range(samples):
                values = np.clip(truth + (rng.integers(-1, 2, size=len(DIMENSIONS)) if samples > 1 else 0), 0, 10)
                row = {"segment_id": seg, "turn_id": turn, "sample_index": k, "surface": "web"}
                row.update({d: float(v) for d, v in zip(DIMENSIONS, values, strict=True)})
                if len(rows) % 7 == 3 and k == 0 or (k > 0 and rows[-1]["answer_faithfulness"] != rows[-1]["answer_faithfulness"]):
                    row["answer_faithfulness"] = np.nan
                row.update({f: False for f in CAP_FACTS})
                row["no_tools"] = t % 9 == 0
                rows.append(row)
    frame = score_frame(pd.DataFrame(rows), rubric)
    frame["band"] = frame["band"].astype(object)
    frame["caps_applied"] = np.where(frame["no_tools"] & (frame["raw_score"] > rubric.caps.no_tools), "no_tools", "")
    frame["status"] = "judged"
    frame["error"] = None
    frame["judge_id"] = "heuristic"
    frame["rubric_id"] = rubric.id
    return frame


# -- Wilson ------------------------------------------------------------------------------------------
@settings(max_examples=200, deadline=None)
@given(n=st.integers(1, 5000), frac=st.floats(0, 1), confidence=st.sampled_from([0.8, 0.9, 0.95, 0.99]))
def test_wilson_equals_statsmodels(n, frac, confidence):
    k = int(round(frac * n))
    iv = wilson_interval(k, n, confidence)
    lo, hi = proportion_confint(k, n, alpha=1 - confidence, method="wilson")
    assert iv.lo == pytest.approx(lo, abs=1e-12) and iv.hi == pytest.approx(hi, abs=1e-12)
    assert iv.estimate == k / n and iv.n == n and iv.method == "wilson"
    assert 0 <= iv.lo <= iv.estimate <= iv.hi <= 1


def test_wilson_hand_case_and_bad_input():
    # k=0 of n=10 at 95%: upper bound z^2/(n+z^2) = 3.8415/13.8415 (Brown, Cai & DasGupta 2001)
    z2 = 1.959963984540054 ** 2
    assert wilson_interval(0, 10).hi == pytest.approx(z2 / (10 + z2), rel=1e-12)
    assert wilson_interval(0, 10).lo == 0
    with pytest.raises(ValueError, match="k=11, n=10"):
        wilson_interval(11, 10)
    empty = wilson_interval(0, 0)
    assert math.isnan(empty.lo) and empty.note == "no units"


# -- cluster bootstrap -----------------------------------------------------------------------------------
def loop_bootstrap(values, clusters, n_boot, seed, confidence=0.95):
    """The definition, one replicate at a time: draw the clusters by the same multinomial counts,
    concatenate each drawn cluster's units as often as it was drawn, take the plain mean."""
    ids = list(dict.fromkeys(clusters))
    members = {c: [v for v, cc in zip(values, clusters, strict=True) if cc == c] for c in ids}
    counts = cluster_counts(len(ids), n_boot, seed)
    reps = []
    for row in counts:
        data = []
        for c, m in zip(ids, row, strict=True):
            data.extend(members[c] * int(m))
        reps.append(np.mean(data))
    a = 1 - confidence
    return np.quantile(reps, [a / 2, 1 - a / 2])


def test_cluster_bootstrap_equals_loop_over_resamples():
    rng = np.random.default_rng(3)
    clusters = np.repeat([f"t{i}" for i in range(40)], rng.integers(1, 4, size=40))
    values = rng.normal(50, 20, size=len(clusters))
    iv = cluster_bootstrap(values, clusters, n_boot=300, seed=11)
    lo, hi = loop_bootstrap(values.tolist(), clusters.tolist(), 300, 11)
    assert iv.lo == pytest.approx(lo, rel=1e-12) and iv.hi == pytest.approx(hi, rel=1e-12)
    assert iv.estimate == pytest.approx(values.mean()) and iv.n == len(values) and iv.n_clusters == 40
    assert iv.seed == 11 and iv.n_boot == 300


def test_cluster_counts_are_multinomial_draws_of_every_cluster():
    counts = cluster_counts(25, 400, seed=0)
    assert counts.shape == (400, 25) and (counts.sum(axis=1) == 25).all()
    # each cluster is drawn Binomial(25, 1/25) times: mean 1
    assert counts.mean() == pytest.approx(1.0, abs=0.05)
    np.testing.assert_array_equal(counts, cluster_counts(25, 400, seed=0))  # the seed reproduces


def test_independent_units_match_the_normal_interval():
    rng = np.random.default_rng(0)
    values = rng.normal(60, 15, size=900)
    iv = cluster_bootstrap(values, np.arange(900), n_boot=4000, seed=1)
    half = 1.959963984540054 * values.std() / math.sqrt(900)
    assert iv.width / 2 == pytest.approx(half, rel=0.08)
    assert iv.lo < values.mean() < iv.hi


def test_clusters_move_together_and_widen_the_interval():
    """Strongly correlated segments inside a turn: treating them as independent understates the
    uncertainty by about sqrt(design effect) = sqrt(1 + (m - 1) rho); here m = 5, rho ~ 0.9."""
    rng = np.random.default_rng(1)
    turn_effect = np.repeat(rng.normal(0, 10, size=100), 5)
    values = 60 + turn_effect + rng.normal(0, 3.5, size=500)
    turns = np.repeat(np.arange(100), 5)
    by_turn = cluster_bootstrap(values, turns, n_boot=3000, seed=2)
    by_segment = cluster_bootstrap(values, np.arange(500), n_boot=3000, seed=2)
    rho = 100 / (100 + 3.5 ** 2)
    assert by_turn.width / by_segment.width == pytest.approx(math.sqrt(1 + 4 * rho), rel=0.15)


def test_callable_statistic_and_chunking_give_the_same_replicates(monkeypatch):
    rng = np.random.default_rng(4)
    clusters = rng.integers(0, 30, size=200)
    values = rng.normal(size=200)
    mean_iv = cluster_bootstrap(values, clusters, "mean", n_boot=500, seed=5)
    weighted_mean = lambda v, w: (w @ v) / w.sum(axis=1)  # noqa: E731
    callable_iv = cluster_bootstrap(values, clusters, weighted_mean, n_boot=500, seed=5)
    monkeypatch.setattr(intervals, "_BLOCK_FLOATS", 1000)  # 5 replicates per block
    chunked_iv = cluster_bootstrap(values, clusters, weighted_mean, n_boot=500, seed=5)
    for iv in (callable_iv, chunked_iv):
        assert iv.lo == pytest.approx(mean_iv.lo, rel=1e-12) and iv.hi == pytest.approx(mean_iv.hi, rel=1e-12)


def test_cluster_bootstrap_reports_bad_input():
    with pytest.raises(ValueError, match="non-finite.*position 1"):
        cluster_bootstrap([1.0, np.nan, 2.0], [0, 1, 2])
    with pytest.raises(ValueError, match="clusters has 2 entries but values has 3"):
        cluster_bootstrap([1.0, 2.0, 3.0], [0, 1])
    one = cluster_bootstrap([1.0, 2.0, 3.0], ["t", "t", "t"])
    assert one.estimate == 2.0 and math.isnan(one.lo) and "fewer than 2 clusters" in one.note


# -- headline intervals of a run ---------------------------------------------------------------------------
def test_headline_estimates_are_the_summary_figures_with_turns_as_clusters():
    results = run_results(150, bundled_every=4, samples=3, seed=2)
    table = headline_intervals(results, n_boot=500, seed=7).set_index("figure")
    seg = results.groupby("segment_id").agg(turn=("turn_id", "first"), score=("score", "mean"))
    summary = summaries.summarise(results)
    assert table.loc["mean score", "estimate"] == pytest.approx(seg["score"].mean())
    assert table.loc["mean score", "n"] == len(seg) == summary["segments"]
    assert (table["n_clusters"].loc[["mean score", *(f"share {b}" for b in BANDS)]] == 150).all()
    for b in BANDS:
        assert table.loc[f"share {b}", "estimate"] == pytest.approx(summary["band_shares"][b])
        # bundled turns: the shares are not of independent units, so the cluster bootstrap is used
        assert table.loc[f"share {b}", "method"] == "cluster bootstrap percentile"
    capped = results.groupby("segment_id")["caps_applied"].agg(lambda v: any(v != ""))
    assert table.loc["share capped", "estimate"] == pytest.approx(capped.mean())
    faith = results.groupby("segment_id")["answer_faithfulness"].mean()
    assert table.loc["mean answer_faithfulness", "n"] == faith.notna().sum() < len(seg)
    assert "left out (null, not 0)" in table.loc["mean answer_faithfulness", "note"]
    for d in DIMENSIONS:
        assert table.loc[f"mean {d}", "estimate"] == pytest.approx(results.groupby("segment_id")[d].mean().mean())
    assert (table["lo"] <= table["estimate"]).all() and (table["estimate"] <= table["hi"]).all()
    assert (table.loc[table["method"] != "wilson", "seed"] == 7).all()
    assert table.attrs["covers"] == INTERVAL_COVERS and table.attrs["seed"] == 7


def test_headline_shares_of_independent_turns_use_wilson():
    results = run_results(80, seed=3)
    table = headline_intervals(results, n_boot=200).set_index("figure")
    for b in BANDS:
        k = int((results["band"] == b).sum())
        lo, hi = proportion_confint(k, len(results), alpha=0.05, method="wilson")
        assert table.loc[f"share {b}", "method"] == "wilson"
        assert (table.loc[f"share {b}", "lo"], table.loc[f"share {b}", "hi"]) == pytest.approx((lo, hi))
    assert table.loc["mean score", "method"] == "cluster bootstrap percentile"


def test_headline_refuses_mixed_judges_and_formats_for_people():
    results = run_results(30, seed=4)
    mixed = results.assign(judge_id=np.where(np.arange(len(results)) % 2, "a", "b"))
    with pytest.raises(summaries.MixedResultsError):
        headline_intervals(mixed)
    lines = format_headlines(headline_intervals(results, n_boot=200))
    assert lines[-1] == INTERVAL_COVERS
    assert any(line.startswith("share poor: ") and "%" in line for line in lines)
    assert not any("nan" in line.lower() or "e-" in line for line in lines)


def test_interval_text_never_prints_nan():
    assert Interval(0.62, 0.55, 0.69, 120, 80, "x").text(share=True) == "62% (55% to 69%), n = 120 segments in 80 turns"
    assert Interval(71.43, 68.0, 74.9, 5, 5, "x").text() == "71.4 (68.0 to 74.9), n = 5 segments"
    assert Interval(0.5, 0.5, 0.74, 5, 5, "x").text() == "0.50 (0.50 to 0.74), n = 5 segments"
    assert "nan" not in Interval(3.0, math.nan, math.nan, 1, 1, "x").text()
