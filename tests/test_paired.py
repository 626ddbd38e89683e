"""Paired comparison of two runs (the pure part).

Oracles written out here: the Stuart-Maxwell statistic ``d' S^-1 d`` and Bowker's sum, McNemar's exact
p-value as a binomial test (scipy), the Wilcoxon signed-rank p-value by enumerating every sign pattern,
Holm's step-down adjustment, and band shares recomputed with ``summaries.band_table``.
"""

from __future__ import annotations

import itertools
import warnings
from pathlib import Path
import math

import numpy as np
import pandas as pd
import pytest
from scipy.stats import binomtest, bootstrap, chi2

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


# -- the edges: bands in play, signed ranks with zeros and ties, turns resampled --------------------------
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from scipy.stats import PermutationMethod, wilcoxon  # noqa: E402
from statsmodels.stats.contingency_tables import SquareTable, mcnemar  # noqa: E402

from axon_eval.stats.paired import bowker_test, signed_rank_test  # noqa: E402


@pytest.mark.parametrize("diagonal", [0, 1, 3, 7, 7.0, 50, 1e6])
def test_a_table_with_moves_between_one_pair_of_bands_is_mcnemar_on_those_bands_whatever_the_diagonal(diagonal):
    # [[d, 2, 0], [11, 25, 0], [0, 0, 20]]: every move is between good and partial. The marginal
    # homogeneity chi-square is (11 - 2)^2 / 13 = 6.23 on 1 df (p = 0.0126); with 13 discordant pairs the
    # exact binomial applies: 2 * P(Bin(13, 1/2) <= 2) = 2 * 92 / 8192 = 0.02246.
    table = pd.DataFrame([[diagonal, 2, 0], [11, 25, 0], [0, 0, 20]], index=BANDS, columns=BANDS)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no SingularMatrixWarning (or any other) reaches the user
        test, bowker = band_test(table)
    assert test.name == "McNemar exact" and test.categories == ("good", "partial") and bowker is None
    assert test.df == 1 and test.pvalue == pytest.approx(2 * 92 / 8192, abs=1e-12)
    assert test.pvalue == pytest.approx(binomtest(2, 13, 0.5).pvalue, abs=1e-12)
    assert "poor" in test.note


def test_the_chi_square_form_of_a_single_pair_table_is_statsmodels_mcnemar():
    table = pd.DataFrame([[4, 20, 0], [40, 25, 0], [0, 0, 20]], index=BANDS, columns=BANDS)
    test, _ = band_test(table)
    oracle = mcnemar(np.array([[4, 20], [40, 25]]), exact=False, correction=True)
    assert test.name.startswith("McNemar chi-square") and test.df == 1
    assert test.statistic == pytest.approx((abs(40 - 20) - 1) ** 2 / 60) == pytest.approx(oracle.statistic)
    assert test.pvalue == pytest.approx(oracle.pvalue)


@settings(max_examples=300, deadline=None)
@given(pair=st.sampled_from([(0, 1), (0, 2), (1, 2)]), up=st.integers(0, 60), down=st.integers(0, 60),
       diagonal=st.lists(st.integers(0, 80), min_size=3, max_size=3))
def test_any_single_pair_table_gets_mcnemar_with_one_df(pair, up, down, diagonal):
    i, j = pair
    counts = np.diag(diagonal).astype(float)
    counts[i, j], counts[j, i] = up, down
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        test, bowker = band_test(pd.DataFrame(counts, index=BANDS, columns=BANDS))
    if up + down == 0:
        assert test.pvalue == 1.0
        return
    two = np.array([[counts[i, i], up], [down, counts[j, j]]])
    exact = up + down < 25
    oracle = mcnemar(two, exact=exact, correction=True)
    assert test.df == 1 and bowker is None and test.categories == (BANDS[i], BANDS[j])
    assert test.pvalue == pytest.approx(oracle.pvalue, rel=1e-9, abs=1e-12)


@settings(max_examples=200, deadline=None)
@given(cells=st.lists(st.integers(0, 40), min_size=9, max_size=9))
def test_stuart_maxwell_with_three_bands_in_play_is_statsmodels_and_never_warns(cells):
    counts = np.array(cells, dtype=float).reshape(3, 3)
    off = counts - np.diag(np.diag(counts))
    in_play = (off.sum(axis=0) + off.sum(axis=1)) > 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        test, bowker = band_test(pd.DataFrame(counts, index=BANDS, columns=BANDS))
    if in_play.sum() == 3:
        oracle = SquareTable(counts, shift_zeros=False).homogeneity()
        assert test.name == "Stuart-Maxwell" and test.df == 2
        assert test.statistic == pytest.approx(oracle.statistic, rel=1e-9)
        assert bowker is not None and bowker.df == sum(off[a, b] + off[b, a] > 0 for a, b in [(0, 1), (0, 2), (1, 2)])
    else:
        assert test.df <= 1


def test_bowker_counts_only_pairs_with_a_move():
    counts = np.array([[10, 4, 0], [1, 20, 6], [0, 2, 5]], dtype=float)  # good<->poor never moves
    by = bowker_test(counts, BANDS)
    stat = (4 - 1) ** 2 / 5 + (6 - 2) ** 2 / 8
    assert by.df == 2 and by.statistic == pytest.approx(stat) and by.pvalue == pytest.approx(chi2.sf(stat, 2))
    full = np.array([[10, 4, 1], [1, 20, 6], [3, 2, 5]], dtype=float)
    oracle = SquareTable(full, shift_zeros=False).symmetry()
    assert bowker_test(full, BANDS).statistic == pytest.approx(oracle.statistic)
    assert bowker_test(full, BANDS).df == oracle.df == 3


def test_five_moved_pairs_among_twenty_have_the_exact_p_value():
    # all five moves up: the two-sided exact p is 2 / 2^5 = 0.0625, the smallest five pairs can give
    diff = np.array([0.0] * 15 + [1.0] * 5)
    test = signed_rank_test(diff)
    assert test.n == 20 and test.n_nonzero == 5 and test.method == "exact"
    assert test.pvalue == pytest.approx(0.0625, abs=1e-15)
    a = pd.DataFrame({d: np.full(20, 5.0) for d in DIMENSIONS})
    b = a.copy()
    b.loc[:4, "sql_quality"] += 1
    dims = dimension_tests(a, b).set_index("dimension")
    assert dims.loc["sql_quality", "pvalue"] == pytest.approx(0.0625, abs=1e-15)


@settings(max_examples=60, deadline=None)
@given(values=st.lists(st.integers(-3, 3), min_size=1, max_size=11))
def test_signed_rank_with_ties_and_zeros_is_scipys_exhaustive_permutation_test(values):
    diff = np.array(values, dtype=float)
    nonzero = diff[diff != 0]
    test = signed_rank_test(diff)
    if len(nonzero) <= 1:  # one sign of two equally likely ones: p = 2 * 1/2
        assert test.pvalue == 1.0
        return
    oracle = wilcoxon(nonzero, method=PermutationMethod(n_resamples=np.inf))
    assert test.pvalue == pytest.approx(min(1.0, oracle.pvalue), rel=1e-9, abs=1e-12)


def test_signed_rank_without_ties_is_scipys_exact_test():
    rng = np.random.default_rng(7)
    for n in (3, 9, 20, 45):
        diff = rng.normal(0.3, 1, n)
        assert signed_rank_test(diff).pvalue == pytest.approx(wilcoxon(diff, method="exact").pvalue, rel=1e-9)


def test_the_mean_difference_interval_resamples_turns():
    # 40 turns of 3 segments whose differences are equal within a turn: the segments are not independent
    rng = np.random.default_rng(11)
    turn_effect = rng.normal(0, 6, 40)
    a = results(n_turns=40, bundled_every=10**6, seed=5)
    rows = []
    for t in range(40):
        for s in range(3):
            rows.append({"segment_id": f"t{t:03d}#{s + 1}", "turn_id": f"t{t:03d}", "delta": turn_effect[t]})
    seg = pd.DataFrame(rows)
    base = pd.concat([a.iloc[:1]] * len(seg), ignore_index=True)
    base["segment_id"], base["turn_id"] = seg["segment_id"], seg["turn_id"]
    base["score"], base["band"] = 60.0, "partial"
    other = base.copy()
    other["score"] = 60.0 + seg["delta"].to_numpy()
    other["band"] = np.where(other["score"] >= 80, "good", np.where(other["score"] >= 50, "partial", "poor"))
    comparison = compare_runs(base, other, n_boot=4000, seed=1)
    md = comparison.mean_difference
    assert md.n == 120 and md.n_clusters == 40
    # the oracle: with equal cluster sizes the cluster bootstrap is the bootstrap of the 40 turn means
    oracle = bootstrap((turn_effect,), np.mean, n_resamples=4000, method="percentile",
                       random_state=np.random.default_rng(1)).confidence_interval
    assert md.lo == pytest.approx(oracle.low, abs=0.35) and md.hi == pytest.approx(oracle.high, abs=0.35)
    segment_level = bootstrap((seg["delta"].to_numpy(),), np.mean, n_resamples=4000, method="percentile",
                              random_state=np.random.default_rng(1)).confidence_interval
    assert md.hi - md.lo > 1.4 * (segment_level.high - segment_level.low)  # ~sqrt(3) wider


def test_compare_the_verb_and_the_api_share_one_implementation(tmp_path):
    from axon_eval import runs as run_api
    from axon_eval.runs.compare import compare_runs as compare_folders

    root = Path(__file__).resolve().parents[1]
    a = run_api.evaluate(root / "data/turns/sample_turns.jsonl", "heuristic", "axon-v1", out_dir=tmp_path,
                         name="a", progress=False, seed=0)
    b = run_api.rescore(a.run_dir, "axon-v1-faithcap", out_dir=tmp_path, name="b")
    folder = compare_folders(a.run_dir, b.run_dir, n_boot=300, seed=4)
    direct = compare_runs(run_api.load_run(a.run_dir).results, run_api.load_run(b.run_dir).results,
                          Rubric.default(), n_boot=300, seed=4,
                          rubric_b=Rubric.model_validate(run_api.load_run(b.run_dir).manifest.rubric))
    assert folder.paired is not None
    assert (folder.mean_delta, *folder.mean_delta_ci) == (direct.mean_difference.estimate, direct.mean_difference.lo,
                                                         direct.mean_difference.hi)
    assert folder.wilcoxon_p == direct.score_test.pvalue and folder.paired.band_test == direct.band_test
    np.testing.assert_array_equal(folder.transitions.to_numpy(), direct.transition.to_numpy())
