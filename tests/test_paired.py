"""Paired comparison of two runs (issue 21, section 4, the pure part).

Oracles written out here: the Stuart-Maxwell statistic ``d' S^-1 d`` and Bowker's sum, McNemar's exact
p-value as a binomial test (scipy), the Wilcoxon signed-rank p-value by enumerating every sign pattern,
Holm's step-down adjustment, and band shares recomputed with ``summaries.band_table``.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from scipy.stats import binomtest, chi2

from axon_eval import summaries
from axon_eval.rubric import BANDS, CAP_FACTS, DIMENSIONS, Rubric
from axon_eval.scoring import score_frame
from axon_eval.stats.paired import band_test, compare_runs, dimension_tests, transition_table


def results(n_turns: int = 150, *, shift: dict[str, int] | None = None, seed: int = 0,
            bundled_every: int = 5) -> pd.DataFrame:
    """A results frame over fixed turns (``seed`` fixes the turns); ``shift`` adds points to dimensions,
    as a second judge or rubric that grades them differently would."""
    rubric = Rubric.default()
    rng = np.random.default_rng(seed)
    rows = []
    for t in range(n_turns):
        turn = f"eu-{t:04d}"
        n_seg = 2 if t % bundled_every == 0 else 1
        for s in range(n_seg):
            values = rng.integers(2, 11, size=len(DIMENSIONS)).astype(float)
            row = {"segment_id": f"{turn}#{s + 1}" if n_seg > 1 else turn, "turn_id": turn, "sample_index": 0}
            row.update(dict(zip(DIMENSIONS, values, strict=True)))
            row.update({f: False for f in CAP_FACTS})
            rows.append(row)
    frame = pd.DataFrame(rows)
    for d, points in (shift or {}).items():
        frame[d] = (frame[d] + points).clip(0, 10)
    frame = score_frame(frame, rubric)
    frame["band"] = frame["band"].astype(object)
    frame["caps_applied"] = ""
    frame["status"] = "judged"
    frame["judge_id"] = "heuristic"
    frame["rubric_id"] = rubric.id
    return frame


def stuart_maxwell_by_hand(table: np.ndarray) -> tuple[float, float]:
    rows, cols = table.sum(axis=1), table.sum(axis=0)
    d = (rows - cols)[:-1]
    k = len(table) - 1
    s = np.empty((k, k))
    for i in range(k):
        for j in range(k):
            s[i, j] = rows[i] + cols[i] - 2 * table[i, i] if i == j else -(table[i, j] + table[j, i])
    stat = float(d @ np.linalg.solve(s, d))
    return stat, float(chi2.sf(stat, k))


def test_transition_table_counts_pairs():
    a = pd.Series(["good", "good", "poor", "partial", "poor"])
    b = pd.Series(["good", "poor", "poor", "good", "partial"])
    table = transition_table(a, b)
    expected = pd.crosstab(a, b).reindex(index=list(BANDS), columns=list(BANDS), fill_value=0)
    np.testing.assert_array_equal(table.to_numpy(), expected.to_numpy())
    with pytest.raises(ValueError, match="'fine', not one of"):
        transition_table(pd.Series(["fine"]), pd.Series(["good"]))


def test_three_bands_use_stuart_maxwell_and_bowker():
    counts = np.array([[20, 5, 1], [2, 30, 4], [3, 1, 10]])
    table = pd.DataFrame(counts, index=BANDS, columns=BANDS)
    test, bowker = band_test(table)
    stat, p = stuart_maxwell_by_hand(counts.astype(float))
    assert test.name == "Stuart-Maxwell" and test.df == 2
    assert test.statistic == pytest.approx(stat) and test.pvalue == pytest.approx(p)
    pairs = [(0, 1), (0, 2), (1, 2)]
    b_stat = sum((counts[i, j] - counts[j, i]) ** 2 / (counts[i, j] + counts[j, i]) for i, j in pairs)
    assert bowker.statistic == pytest.approx(b_stat) and bowker.pvalue == pytest.approx(chi2.sf(b_stat, 3))


def test_two_bands_use_mcnemar():
    small = pd.DataFrame([[10, 3, 0], [9, 20, 0], [0, 0, 0]], index=BANDS, columns=BANDS)
    test, bowker = band_test(small)
    assert test.name == "McNemar exact" and bowker is None and test.categories == ("good", "partial")
    assert test.pvalue == pytest.approx(binomtest(3, 12, 0.5).pvalue)
    large = pd.DataFrame([[0, 0, 0], [0, 50, 30], [0, 12, 40]], index=BANDS, columns=BANDS)
    test, _ = band_test(large)
    assert test.name.startswith("McNemar chi-square")
    assert test.statistic == pytest.approx((abs(30 - 12) - 1) ** 2 / 42)
    assert test.pvalue == pytest.approx(chi2.sf((abs(30 - 12) - 1) ** 2 / 42, 1))


def test_no_change_and_one_band_mean_nothing_differs():
    same = pd.DataFrame(np.diag([5, 6, 7]), index=BANDS, columns=BANDS)
    test, _ = band_test(same)
    assert test.pvalue == 1.0 and test.note == "no segment changed band"
    one = pd.DataFrame([[0, 0, 0], [0, 9, 0], [0, 0, 0]], index=BANDS, columns=BANDS)
    assert band_test(one)[0].pvalue == 1.0


def exact_signed_rank_p(diff: np.ndarray) -> float:
    """Two-sided exact p-value of the signed-rank statistic min(W+, W-) by enumerating all 2^n signs
    (distinct non-zero |differences|, so ranks are 1..n)."""
    ranks = np.argsort(np.argsort(np.abs(diff))) + 1
    observed = min(ranks[diff > 0].sum(), ranks[diff < 0].sum())
    total = ranks.sum()
    hits = 0
    for signs in itertools.product((0, 1), repeat=len(diff)):
        w_plus = int(np.dot(signs, ranks))
        hits += min(w_plus, total - w_plus) <= observed
    return hits / 2 ** len(diff)


def holm_by_hand(p: list[float]) -> list[float]:
    order = np.argsort(p)
    m = len(p)
    adjusted = np.empty(m)
    running = 0.0
    for i, idx in enumerate(order):
        running = max(running, (m - i) * p[idx])
        adjusted[idx] = min(1.0, running)
    return adjusted.tolist()


def test_dimension_tests_are_wilcoxon_with_holm():
    rng = np.random.default_rng(3)
    n = 12
    a = pd.DataFrame({d: rng.normal(5, 1, n) for d in DIMENSIONS})
    b = a.copy()
    b["intent_understood"] += np.linspace(0.05, 1.2, n) * np.where(np.arange(n) > 0, 1, -1)
    b["sql_quality"] += np.linspace(-0.6, 0.65, n)
    b["result_relevance"] += rng.normal(0, 0.5, n)
    out = dimension_tests(a, b).set_index("dimension")
    raw = []
    for d in DIMENSIONS:
        diff = (b[d] - a[d]).to_numpy()
        diff = diff[diff != 0]
        p = exact_signed_rank_p(diff) if len(diff) else 1.0
        raw.append(p)
        assert out.loc[d, "pvalue"] == pytest.approx(p, rel=1e-9)
    assert out["p_holm"].tolist() == pytest.approx(holm_by_hand(raw))
    assert out.loc["answer_faithfulness", "pvalue"] == 1.0 and out.loc["answer_faithfulness", "note"] == "no pair differs"
    assert bool(out.loc["intent_understood", "reject"]) and not out.loc["answer_faithfulness", "reject"]


def test_identical_runs_show_no_difference():
    run = results()
    comparison = compare_runs(run, run.copy(), label_a="heuristic", label_b="heuristic again", n_boot=300)
    assert comparison.verdict == "no difference detected at alpha=0.05" and not comparison.detected
    assert comparison.reasons == () and (comparison.shares["estimate"] == 0).all()
    assert (comparison.shares[["lo", "hi"]] == 0).all().all()
    assert not any("nan" in line.lower() for line in comparison.lines())


def test_a_harsher_judge_is_detected_with_adjusted_p_values_and_share_differences():
    a = results(seed=1)
    b = results(seed=1, shift={"answer_faithfulness": -2})
    comparison = compare_runs(a, b, n_boot=500, seed=3)
    assert comparison.verdict == "difference detected at alpha=0.05" and comparison.detected
    dims = comparison.dimensions.set_index("dimension")
    assert dims.loc["answer_faithfulness", "reject"] and dims.loc["answer_faithfulness", "p_holm"] < 0.05
    assert dims.loc["intent_understood", "pvalue"] == 1.0
    assert any("answer_faithfulness differs" in r for r in comparison.reasons)
    # share differences: B minus A of the band tables (an independent recomputation)
    share_a, share_b = summaries.band_table(a)["share"], summaries.band_table(b)["share"]
    shares = comparison.shares.set_index("figure")
    for band in BANDS:
        assert shares.loc[f"share {band}", "estimate"] == pytest.approx(share_b[band] - share_a[band])
        assert shares.loc[f"share {band}", "lo"] <= shares.loc[f"share {band}", "estimate"] <= shares.loc[f"share {band}", "hi"]
    assert shares.loc["share poor", "lo"] > 0  # a harsher judge moves segments into poor
    assert shares.loc["mean score", "hi"] < 0
    assert (shares["n_clusters"] == 150).all() and (shares["n"] == 180).all()  # turns, not segments
    assert (shares["seed"] == 3).all()
    assert "Holm-adjusted" in "\n".join(comparison.lines())


def test_unpaired_segments_are_counted_not_dropped_silently():
    a = results(seed=2)
    b = results(seed=2).iloc[10:]
    comparison = compare_runs(a, b, n_boot=200)
    assert comparison.n_only_a == 10 and comparison.n_only_b == 0 and comparison.n_pairs == len(a) - 10
    assert any("10 segment(s) judged only in A" in n for n in comparison.notes)
    with pytest.raises(ValueError, match="share 0 judged segment"):
        compare_runs(a.iloc[:5], results(seed=2, n_turns=3).assign(segment_id=lambda f: "x" + f["segment_id"]))
    assert math.isclose(comparison.alpha, 0.05)
