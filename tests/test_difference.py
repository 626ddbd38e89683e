"""Human-corrected differences of two runs (PPI++ on a difference).

Oracles: ``ppi_py`` (the reference implementation of PPI++) on the paired differences and on each run
alone, and a seeded SIMULATED population with a known true difference: two agents, a judge whose bias
differs between them.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import ppi_py
import pytest

from axon_eval.stats.difference import corrected_differences, independent_difference, paired_difference


def population(rng: np.random.Generator, n: int, *, true_difference: float, bias_a: float, bias_b: float):
    """SIMULATED: a question's difficulty is shared by both agents; the judge adds its bias per agent."""
    difficulty = rng.normal(70, 10, n)
    human_a = difficulty + rng.normal(0, 4, n)
    human_b = difficulty + true_difference + rng.normal(0, 4, n)
    judge_a = human_a + bias_a + rng.normal(0, 3, n)
    judge_b = human_b + bias_b + rng.normal(0, 3, n)
    return judge_a, judge_b, human_a, human_b


def test_paired_corrected_difference_is_ppi_py_on_the_paired_differences():
    rng = np.random.default_rng(0)
    ja, jb, ha, hb = population(rng, 3000, true_difference=1.5, bias_a=0.0, bias_b=2.0)
    labelled = np.zeros(3000, dtype=bool)
    labelled[rng.choice(3000, 150, replace=False)] = True
    rec = paired_difference(ja, jb, np.where(labelled, ha, np.nan), np.where(labelled, hb, np.nan))
    d, dhat, dhat_u = (hb - ha)[labelled], (jb - ja)[labelled], (jb - ja)[~labelled]
    lo, hi = ppi_py.ppi_mean_ci(d, dhat, dhat_u, alpha=0.05)
    assert rec.corrected.estimate == pytest.approx(float(ppi_py.ppi_mean_pointestimate(d, dhat, dhat_u)[0]), abs=1e-6)
    assert (rec.corrected.lo, rec.corrected.hi) == pytest.approx((float(lo[0]), float(hi[0])), abs=1e-6)
    assert rec.n_labelled == 150 and rec.n_unlabelled == 2850 and 0 <= rec.lam <= 1
    # the judge-only difference carries the bias difference (2 points) the labels remove
    assert rec.judge_only.estimate == pytest.approx(np.mean(jb - ja))
    assert not rec.judge_only.contains(1.5) and rec.corrected.contains(1.5)


def test_independent_corrected_difference_combines_two_ppi_py_estimates():
    rng = np.random.default_rng(1)
    ja, _, ha, _ = population(rng, 2000, true_difference=0, bias_a=1.0, bias_b=0)
    _, jb, _, hb = population(rng, 2500, true_difference=-2, bias_a=0, bias_b=-1.0)
    la, lb = rng.random(2000) < 0.08, rng.random(2500) < 0.08
    rec = independent_difference(ja, np.where(la, ha, np.nan), jb, np.where(lb, hb, np.nan))
    parts = []
    for j, h, lab in ((ja, ha, la), (jb, hb, lb)):
        est = float(ppi_py.ppi_mean_pointestimate(h[lab], j[lab], j[~lab])[0])
        lo, hi = ppi_py.ppi_mean_ci(h[lab], j[lab], j[~lab], alpha=0.05)
        parts.append((est, (float(hi[0]) - float(lo[0])) / 2))
    assert rec.corrected.estimate == pytest.approx(parts[1][0] - parts[0][0], abs=1e-6)
    half = math.hypot(parts[0][1], parts[1][1])  # se^2 = se_A^2 + se_B^2
    assert rec.corrected.hi - rec.corrected.estimate == pytest.approx(half, abs=1e-6)


@pytest.mark.parametrize("bias_gap", [0.0, 1.0, 3.0])
def test_simulated_corrected_interval_covers_the_true_difference(bias_gap):
    """SIMULATED: 1,000 seeded replications of a 1,000-pair population with 80 labelled pairs. The
    corrected interval covers the true difference in 93-97% of them at every bias gap; the judge-only
    interval's coverage falls as the judge's bias differs between the agents."""
    rng = np.random.default_rng(2026)
    reps, n, n_lab, truth = 1000, 1000, 80, 1.5
    covered = judge_covered = 0
    for _ in range(reps):
        ja, jb, ha, hb = population(rng, n, true_difference=truth, bias_a=0.5, bias_b=0.5 + bias_gap)
        labelled = np.zeros(n, dtype=bool)
        labelled[rng.choice(n, n_lab, replace=False)] = True
        rec = paired_difference(ja, jb, np.where(labelled, ha, np.nan), np.where(labelled, hb, np.nan))
        covered += rec.corrected.contains(truth)
        judge_covered += rec.judge_only.contains(truth)
    assert 0.93 <= covered / reps <= 0.97
    if bias_gap == 0:
        assert 0.93 <= judge_covered / reps <= 0.97
    elif bias_gap == 1.0:
        assert judge_covered / reps < 0.5
    else:
        assert judge_covered / reps < 0.01


def test_corrected_differences_pair_by_a_named_key_and_say_what_was_left_out():
    judge_a = pd.DataFrame({"segment_id": ["a1", "a2", "a3", "a4"], "question": ["q1", "q2", "q3", "q4"],
                            "score": [70.0, 80, 60, 90], "band": ["partial", "good", "partial", "good"]})
    judge_b = pd.DataFrame({"segment_id": ["b9", "b8", "b7"], "question": ["q2", "q1", "q3"],
                            "score": [85.0, 72, 40], "band": ["good", "partial", "poor"]})
    human_a = pd.DataFrame({"segment_id": ["a1", "a2", "a3"], "score": [68.0, 75, 61], "band": ["partial"] * 3})
    human_b = pd.DataFrame({"segment_id": ["b8", "b9", "b7"], "score": [71.0, 80, 45],
                            "band": ["partial", "good", "poor"]})
    table = corrected_differences(judge_a, judge_b, human_a, human_b, pair_by="question").set_index("figure")
    # q1: D = 71 - 68 = 3, q2: 80 - 75 = 5, q3: 45 - 61 = -16; all pairs labelled, so lam = 0: labels only
    assert table.loc["mean score", "estimate"] == pytest.approx((3 + 5 - 16) / 3)
    assert table.loc["mean score", "n_labelled"] == 3 and table.loc["mean score", "judge_estimate"] == pytest.approx(
        ((85 - 80) + (72 - 70) + (40 - 60)) / 3)
    assert table.attrs["notes"] == ["1 unit(s) only in A and 0 only in B are not paired and left out"]
    with pytest.raises(ValueError, match="design must be one of"):
        corrected_differences(judge_a, judge_b, human_a, human_b, design="pooled")


def test_a_small_labelled_sample_uses_the_small_sample_rule_of_ppi():
    """Below 50 labelled pairs the difference takes ppi.py's rule: plain PPI (lam = 1) with a Student-t
    interval; its point estimate is ppi_py's at lam = 1."""
    rng = np.random.default_rng(5)
    ja, jb, ha, hb = population(rng, 500, true_difference=1.0, bias_a=0.0, bias_b=1.0)
    labelled = np.zeros(500, dtype=bool)
    labelled[rng.choice(500, 20, replace=False)] = True
    rec = paired_difference(ja, jb, np.where(labelled, ha, np.nan), np.where(labelled, hb, np.nan))
    d, dhat, dhat_u = (hb - ha)[labelled], (jb - ja)[labelled], (jb - ja)[~labelled]
    assert rec.lam == 1.0 and "Student-t" in rec.corrected.method
    assert rec.corrected.estimate == pytest.approx(float(ppi_py.ppi_mean_pointestimate(d, dhat, dhat_u, lam=1)[0]),
                                                   abs=1e-9)
