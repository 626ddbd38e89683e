"""Weight sensitivity: equality with score_frame, designs, exact worst cases, the pair test, Sobol."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog
from scipy.stats import kendalltau, kstest

from axon_eval import DIMENSIONS, Rubric, score_frame
from axon_eval.rubric import CAP_FACTS
from axon_eval.stats import sensitivity as S

AXON = Rubric.default()
FAITHCAP = Rubric.packaged("axon-v1-faithcap")
NO_FACTS = (False, False, False)


def results_frame(n: int, seed: int, unjudged: int = 0) -> pd.DataFrame:
    """A results-like frame: integer subscores, ~15% null faithfulness, ~10% of each cap fact."""
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({d: rng.integers(0, 11, n).astype(float) for d in DIMENSIONS})
    df.loc[rng.random(n) < 0.15, "answer_faithfulness"] = np.nan
    for f in CAP_FACTS:
        df[f] = rng.random(n) < 0.10
    df.insert(0, "segment_id", [f"t-{i:04d}" for i in range(n)])
    df["status"] = "judged"
    if unjudged:
        df.loc[df.index[:unjudged], "status"] = "unjudged"
        df.loc[df.index[:unjudged], list(DIMENSIONS)] = np.nan
    return df


def segments_of(rows: list[tuple]) -> S.Segments:
    """Segments from (i, s, r, f, facts) tuples; f None = null faithfulness."""
    subs = np.array([[i, s, r, np.nan if f is None else f] for i, s, r, f, _ in rows], dtype=float)
    facts = np.array([fa for *_, fa in rows], dtype=bool)
    return S.Segments.from_arrays(subs, facts, [f"seg{k}" for k in range(len(rows))])


FRAME = results_frame(300, seed=7, unjudged=5)
SEGS = S.segments_from_results(FRAME)
JUDGED = FRAME[FRAME["status"] == "judged"].reset_index(drop=True)


def reference_scores(weights: np.ndarray, rubric: Rubric) -> np.ndarray:
    return np.array([score_frame(JUDGED, rubric.with_weights(dict(zip(DIMENSIONS, w))))["score"].to_numpy()
                     for w in weights])


def mixed_design(rubric: Rubric) -> np.ndarray:
    return np.concatenate([S.one_at_a_time(rubric, (0.01, 0.05)).weights,
                           S.box_simplex_sample(rubric, 0.05, 12, seed=1).weights,
                           S.dirichlet_sample(rubric, 30.0, 8, seed=2).weights,
                           [[0.25, 0.25, 0.25, 0.25], [0.7, 0.1, 0.1, 0.1]]])


# -- scores of K vectors equal score_frame ---------------------------------------------------------------
@pytest.mark.parametrize("rubric", [AXON, FAITHCAP], ids=["axon-v1", "faithcap"])
def test_score_matrix_equals_score_frame_for_every_vector(rubric):
    weights = mixed_design(rubric)
    np.testing.assert_array_equal(S.score_matrix(SEGS, weights, rubric), reference_scores(weights, rubric))


@pytest.mark.parametrize("rubric", [AXON, FAITHCAP], ids=["axon-v1", "faithcap"])
def test_sweep_reductions_equal_those_of_score_frame(rubric):
    weights = mixed_design(rubric)
    ref = reference_scores(weights, rubric)
    nominal = score_frame(JUDGED, rubric)
    score0, band0 = nominal["score"].to_numpy(), nominal["band"].to_numpy()
    bands = np.array([score_frame(JUDGED, rubric.with_weights(dict(zip(DIMENSIONS, w))))["band"].to_numpy()
                      for w in weights])
    sweep = S.sweep_weights(SEGS, weights, rubric, vectors_per_chunk=7, n_threads=2)
    pv, ps = sweep.per_vector, sweep.per_segment
    delta = ref - score0
    np.testing.assert_array_equal(pv["max_rise"], delta.max(axis=1))
    np.testing.assert_array_equal(pv["max_fall"], (-delta).max(axis=1))
    np.testing.assert_array_equal(pv["max_abs_delta"], np.abs(delta).max(axis=1))
    np.testing.assert_array_equal(pv["n_band_flips"], (bands != band0).sum(axis=1))
    np.testing.assert_allclose(pv["mean_score"], ref.mean(axis=1), rtol=1e-12)
    np.testing.assert_array_equal(pv["share_good"], (bands == "good").mean(axis=1))
    np.testing.assert_allclose(pv["kendall_tau"], [kendalltau(score0, r).statistic for r in ref], rtol=1e-12)
    np.testing.assert_array_equal(ps["n_flips"], (bands != band0).sum(axis=0))
    np.testing.assert_array_equal(ps["max_rise"], delta.max(axis=0))
    np.testing.assert_array_equal(ps["max_fall"], (-delta).max(axis=0))
    assert list(ps["segment_id"]) == list(JUDGED["segment_id"])
    np.testing.assert_array_equal(ps["nominal_score"], score0)
    assert sweep.band_flip_rate == pytest.approx((bands != band0).mean())


simplex_vector = st.lists(st.floats(min_value=0.0, max_value=1.0), min_size=4, max_size=4).filter(
    lambda v: sum(v[:3]) > 1e-3).map(lambda v: [x / sum(v) for x in v])


@settings(max_examples=25, deadline=None)
@given(st.lists(simplex_vector, min_size=1, max_size=4), st.sampled_from([AXON, FAITHCAP]))
def test_any_weight_vectors_score_as_score_frame(weights, rubric):
    weights = np.array(weights)
    ref = reference_scores(weights, rubric)
    np.testing.assert_array_equal(S.score_matrix(SEGS, weights, rubric), ref)
    sweep = S.sweep_weights(SEGS, weights, rubric, rank_correlation=False, n_threads=1)
    np.testing.assert_array_equal(sweep.per_vector["max_abs_delta"],
                                  np.abs(ref - score_frame(JUDGED, rubric)["score"].to_numpy()).max(axis=1))


def test_sweep_without_rank_correlation_and_flipping_segments():
    sweep = S.sweep_weights(SEGS, S.box_simplex_sample(AXON, 0.05, 50, seed=3), AXON, rank_correlation=False)
    assert sweep.per_vector["kendall_tau"].isna().all()
    flippers = sweep.flipping_segments()
    assert (flippers["n_flips"] > 0).all() and flippers["flip_share"].is_monotonic_decreasing
    # who flips sits near an edge: within the largest move any vector made
    assert (flippers["distance_to_band_edge"] <= sweep.max_abs_delta).all()


# -- inputs ------------------------------------------------------------------------------------------------
def test_unjudged_rows_are_excluded_and_reported():
    assert SEGS.n_segments == 295 and SEGS.n_excluded == 5 and SEGS.n_input_rows == 300
    assert list(SEGS.excluded["segment_id"]) == [f"t-{i:04d}" for i in range(5)]
    assert set(SEGS.excluded["status"]) == {"unjudged"}


def test_repeated_samples_are_refused_unless_aggregated():
    a = FRAME.iloc[10:14].copy()
    b = a.copy()
    b["intent_understood"] = (b["intent_understood"] + 2).clip(upper=10)
    b.loc[b.index[0], "answer_faithfulness"] = np.nan
    repeated = pd.concat([a, b], ignore_index=True)
    with pytest.raises(ValueError, match=r"4 segment id.*t-0010.*aggregate"):
        S.segments_from_results(repeated)
    mean = S.segments_from_results(repeated, aggregate="mean")
    assert mean.n_segments == 4 and mean.aggregate == "mean"
    np.testing.assert_allclose(mean.subscores[:, 0], ((a["intent_understood"].to_numpy() + b["intent_understood"].to_numpy()) / 2))
    # a null faithfulness in one sample: the mean is over the other sample
    assert mean.subscores[0, 3] == a["answer_faithfulness"].iloc[0] or np.isnan(a["answer_faithfulness"].iloc[0])
    first = S.segments_from_results(repeated, aggregate="first")
    np.testing.assert_array_equal(first.subscores, np.clip(a[list(DIMENSIONS)].to_numpy(float), 0, 10))
    b.loc[b.index[1], "no_tools"] = ~b.loc[b.index[1], "no_tools"]
    with pytest.raises(ValueError, match="facts differ"):
        S.segments_from_results(pd.concat([a, b], ignore_index=True), aggregate="mean")
    with pytest.raises(ValueError, match="aggregate must be"):
        S.segments_from_results(repeated, aggregate="mode")


def test_bad_inputs_are_clear_errors():
    with pytest.raises(ValueError, match="missing columns.*no_tools"):
        S.segments_from_results(FRAME.drop(columns=["no_tools"]))
    judged_null = FRAME.copy()
    judged_null.loc[7, "sql_quality"] = np.nan
    with pytest.raises(ValueError, match="t-0007"):
        S.segments_from_results(judged_null)
    with pytest.raises(ValueError, match="not on the simplex.*row 1"):
        S.sweep_weights(SEGS, [[0.3, 0.25, 0.25, 0.2], [0.5, 0.5, 0.5, 0.0]])
    with pytest.raises(ValueError, match="no weight on the three dimensions"):
        S.sweep_weights(SEGS, [[0.0, 0.0, 0.0, 1.0]])
    with pytest.raises(ValueError, match=r"d must be a number in \(0, 1\]"):
        S.worst_case(SEGS, AXON, d=0)
    with pytest.raises(ValueError, match="max_cells"):
        S.score_matrix(SEGS, np.tile([0.3, 0.25, 0.25, 0.2], (10, 1)), AXON, max_cells=100)


# -- designs ------------------------------------------------------------------------------------------------
def test_one_at_a_time_moves_one_weight_by_exactly_the_step():
    design = S.one_at_a_time(AXON, (0.01, 0.05))
    w0 = np.array([0.30, 0.25, 0.25, 0.20])
    assert len(design) == 4 * 4
    for row, w in zip(design.labels.itertuples(), design.weights):
        k = DIMENSIONS.index(row.perturbed)
        assert w[k] == pytest.approx(w0[k] + row.step, abs=1e-15)
        others = np.delete(np.arange(4), k)
        np.testing.assert_allclose(w[others] / w[others].sum(), w0[others] / w0[others].sum(), rtol=1e-12)
        assert w.sum() == pytest.approx(1.0, abs=1e-15)
        assert np.abs(w - w0).max() <= row.size + 1e-15  # inside the box of its size
    with pytest.raises(ValueError, match="outside"):
        S.one_at_a_time(AXON.with_weights({"intent_understood": 0.02, "sql_quality": 0.38, "result_relevance": 0.3,
                                           "answer_faithfulness": 0.3}), (0.05,))


def test_box_sample_is_on_the_polytope_seeded_and_recorded():
    a = S.box_simplex_sample(AXON, 0.03, 500, seed=11)
    b = S.box_simplex_sample(AXON, 0.03, 500, seed=11)
    np.testing.assert_array_equal(a.weights, b.weights)
    assert a.seed == 11 and a.params["d"] == 0.03
    lower, upper = S.box_on_simplex_bounds(AXON, 0.03)
    assert (a.weights >= lower - 1e-15).all() and (a.weights <= upper + 1e-15).all()
    np.testing.assert_allclose(a.weights.sum(axis=1), 1.0, atol=1e-15)
    assert not np.array_equal(a.weights, S.box_simplex_sample(AXON, 0.03, 500, seed=12).weights)
    assert S.box_simplex_sample(AXON, 0.03, 5, seed=[1, 2]).seed == [1, 2]


def test_box_sample_is_uniform_like_a_dirichlet_restricted_to_the_box():
    # Reference: Dirichlet(1, 1, 1, 1) is uniform on the simplex; keep the draws inside the box. Both
    # samplers target the uniform distribution on P_d, so every coordinate's law must agree.
    d = 0.2
    lower, upper = S.box_on_simplex_bounds(AXON, d)
    ref = np.random.default_rng(5).dirichlet(np.ones(4), 200_000)
    ref = ref[((ref >= lower) & (ref <= upper)).all(axis=1)][:3000]
    ours = S.box_simplex_sample(AXON, d, 3000, seed=6).weights
    assert len(ref) == 3000
    for k in range(4):
        assert kstest(ours[:, k], ref[:, k]).pvalue > 0.001, DIMENSIONS[k]


def test_box_sample_is_centred_when_the_box_is_not_clipped():
    # P_d is symmetric about w0 when no bound is clipped at 0, so the uniform mean is w0.
    sample = S.box_simplex_sample(AXON, 0.05, 20_000, seed=4).weights
    np.testing.assert_allclose(sample.mean(axis=0), [0.30, 0.25, 0.25, 0.20], atol=1e-3)


def test_dirichlet_sample_mean_and_spread():
    design = S.dirichlet_sample(AXON, concentration=100.0, n=20_000, seed=9)
    w0 = np.array([0.30, 0.25, 0.25, 0.20])
    np.testing.assert_allclose(design.weights.mean(axis=0), w0, atol=2e-3)
    np.testing.assert_allclose(design.weights.std(axis=0), np.sqrt(w0 * (1 - w0) / 101), rtol=0.05)
    assert design.seed == 9 and design.params["concentration"] == 100.0
    with pytest.raises(ValueError, match="every nominal weight > 0"):
        S.dirichlet_sample([0.5, 0.5, 0.0, 0.0], 10.0, 5, 0)


# -- exact worst case ------------------------------------------------------------------------------------------
def test_hand_computed_worst_case_for_two_segments():
    # (10, 0, 10, 0), all observed: raw = 100 (w1 + w3). Box bounds at d = 0.05: w1 in [.25, .35],
    # w2 in [.20, .30], w3 in [.20, .30], w4 in [.15, .25]. Max: w1 = .35, w3 = .30 (w2 = .20, w4 = .15)
    # -> 65; min: w1 = .25, w3 = .20 (w2 = .30, w4 = .25) -> 45; nominal 55.
    # (10, 0, 0, null): raw = 100 w1 / (w1 + w2 + w3). Max: w1 = .35, w2 = w3 = .20 (w4 = .25) -> 46.67;
    # min: w1 = .25, w2 = w3 = .30 (w4 = .15) -> 29.41; nominal 30 / .8 = 37.5.
    segs = segments_of([(10, 0, 10, 0, NO_FACTS), (10, 0, 0, None, NO_FACTS)])
    wc = S.worst_case(segs, AXON, 0.05).per_segment
    a, b = wc.iloc[0], wc.iloc[1]
    assert (a.nominal_score, a.raw_max, a.raw_min, a.score_max, a.score_min) == pytest.approx((55, 65, 45, 65, 45))
    assert a.worst_abs_delta == pytest.approx(10.0) and a.band_can_change  # partial 55 can fall to poor 45
    assert [a[f"w_max_{d}"] for d in DIMENSIONS] == pytest.approx([0.35, 0.20, 0.30, 0.15])
    assert (b.nominal_score, b.raw_max, b.raw_min) == pytest.approx((37.5, 100 * .35 / .75, 100 * .25 / .85))
    assert (b.score_max, b.score_min, b.worst_abs_delta) == pytest.approx((46.7, 29.4, 9.2))
    assert [b[f"w_max_{d}"] for d in DIMENSIONS] == pytest.approx([0.35, 0.20, 0.20, 0.25])
    assert [b[f"w_min_{d}"] for d in DIMENSIONS] == pytest.approx([0.25, 0.30, 0.30, 0.15])


def vertex_extremes(s: np.ndarray, observed: bool, lower: np.ndarray, upper: np.ndarray) -> tuple[float, float]:
    """Brute force: a linear or linear-fractional function's extremes over a polytope are at vertices;
    the vertices of P_d have three weights at a bound and the fourth taking the rest."""
    values = []
    for free in range(4):
        fixed = [k for k in range(4) if k != free]
        for bounds in itertools.product(*[(lower[k], upper[k]) for k in fixed]):
            w = np.empty(4)
            w[fixed] = bounds
            w[free] = 1 - sum(bounds)
            if lower[free] - 1e-12 <= w[free] <= upper[free] + 1e-12:
                m = np.array([1, 1, 1, 1.0 if observed else 0.0])
                values.append(10 * (m * s * w).sum() / (m * w).sum())
    return min(values), max(values)


@pytest.mark.parametrize("d", [0.01, 0.05, 0.2, 0.35])
def test_lp_extremes_equal_vertex_enumeration(d):
    rng = np.random.default_rng(int(d * 100))
    subs = rng.uniform(0, 10, (60, 4))
    observed = rng.random(60) < 0.6
    subs[~observed, 3] = np.nan
    segs = S.Segments.from_arrays(subs, np.zeros((60, 3), bool))
    wc = S.worst_case(segs, AXON, d).per_segment
    lower, upper = S.box_on_simplex_bounds(AXON, d)
    for k in range(60):
        lo, hi = vertex_extremes(np.nan_to_num(subs[k]), observed[k], lower, upper)
        assert wc["raw_min"].iloc[k] == pytest.approx(lo, abs=1e-9)
        assert wc["raw_max"].iloc[k] == pytest.approx(hi, abs=1e-9)


@pytest.mark.parametrize("rubric", [AXON, FAITHCAP], ids=["axon-v1", "faithcap"])
@pytest.mark.parametrize("d", [0.02, 0.05])
def test_worst_case_bounds_every_sampled_delta(rubric, d):
    wc = S.worst_case(SEGS, rubric, d).per_segment
    for design in (S.box_simplex_sample(rubric, d, 200, seed=1), S.one_at_a_time(rubric, (d / 2, d))):
        sweep = S.sweep_weights(SEGS, design, rubric, rank_correlation=False).per_segment
        assert (sweep["max_rise"].to_numpy() <= wc["max_rise"].to_numpy() + 1e-9).all()
        assert (sweep["max_fall"].to_numpy() <= wc["max_fall"].to_numpy() + 1e-9).all()
        assert (sweep["n_flips"].to_numpy()[~wc["band_can_change"].to_numpy()] == 0).all()


def test_caps_bound_the_worst_case():
    all_failed = (True, True, False)
    segs = segments_of([(10, 10, 10, 10, all_failed), (10, 10, 10, 0, NO_FACTS), (10, 10, 10, None, NO_FACTS)])
    wc = S.worst_case(segs, FAITHCAP, 0.05).per_segment
    assert (wc["score_max"].iloc[0], wc["score_min"].iloc[0], wc["worst_abs_delta"].iloc[0]) == (25.0, 25.0, 0.0)
    # faithfulness 0 triggers the 49 cap: raw moves (75..85) but the published score stays at 49
    assert (wc["raw_min"].iloc[1], wc["raw_max"].iloc[1]) == pytest.approx((75.0, 85.0))
    assert (wc["score_min"].iloc[1], wc["score_max"].iloc[1]) == (49.0, 49.0)
    assert wc["score_max"].iloc[2] == 100.0  # null faithfulness never triggers the cap


# -- the bound and the pair test -------------------------------------------------------------------------------
def test_bound_proves_no_good_below_poor_at_005():
    # Any segment's raw score moves at most 10 points each way within +-0.05 of axon-v1 (the extremes are
    # at 0/10 subscore vertices; (10, 10, 0, 0): 55 -> 65 at w = (.35, .30, .20, .15)). A good segment
    # is at >= 79.95 and a poor one below 49.95: closing a gap of more than 30 points would need a rise
    # plus a fall of more than 30, but at most 10 + 10 = 20 are possible, so no pair can reorder.
    bound = S.score_shift_bound(AXON, 0.05)
    assert bound.max_rise == pytest.approx(10.0) and bound.max_fall == pytest.approx(10.0)
    assert bound.band_gap == 30.0 and bound.reorder_impossible
    assert bound.rise_subscores == (10.0, 10.0, 0.0, 0.0)
    for d in (0.01, 0.03, 0.07):
        assert S.score_shift_bound(AXON, d).max_rise == pytest.approx(200 * d)
        assert S.score_shift_bound(AXON, d).reorder_impossible
    assert not S.score_shift_bound(AXON, 0.08).reorder_impossible
    # the bound holds for every segment and every sampled vector
    sweep = S.sweep_weights(SEGS, S.box_simplex_sample(AXON, 0.05, 300, seed=2), AXON, rank_correlation=False)
    assert sweep.per_vector["max_abs_delta"].max() <= 10.0 + 0.05
    result = S.good_below_poor(SEGS, AXON, 0.05)
    assert result.n_pairs == 0 and result.example is None and result.n_good > 0 and result.n_poor > 0


def test_hand_computed_good_below_poor_pair():
    # good (10, 10, 10, 0): 80.0; poor (0, 0, 10, 10): 45.0. score_poor - score_good = 100 (w4 - w1 - w2),
    # -35 at nominal. Largest at w4 = .20 + d, w1 = .30 - d, w2 = .25 - d: 100 (3d - .35) > 0 iff d > 0.1167.
    # d = 0.15: w = (.15, .10, .40, .35), margin 10: good 65.0, poor 75.0.
    segs = segments_of([(10, 10, 10, 0, NO_FACTS), (0, 0, 10, 10, NO_FACTS), (5, 5, 5, 5, NO_FACTS)])
    flip = S.good_below_poor(segs, AXON, 0.15)
    assert flip.n_pairs == 1 and flip.n_good == 1 and flip.n_poor == 1
    assert flip.max_margin == pytest.approx(10.0)
    ex = flip.example
    assert (ex.good_segment_id, ex.poor_segment_id) == ("seg0", "seg1")
    assert [ex.weights[d] for d in DIMENSIONS] == pytest.approx([0.15, 0.10, 0.40, 0.35])
    assert (ex.good_score, ex.poor_score, ex.good_score_nominal, ex.poor_score_nominal) == (65.0, 75.0, 80.0, 45.0)
    json.dumps(flip.to_json(), allow_nan=False)
    # d = 0.1: the largest margin is 100 (.30 - .20 - .15) = -5, so nothing reorders.
    assert S.good_below_poor(segs, AXON, 0.1).n_pairs == 0
    # the exact margin is the LP on the difference (linear case)
    lower, upper = S.box_on_simplex_bounds(AXON, 0.15)
    lp = linprog(-10 * (np.array([0, 0, 10, 10.]) - np.array([10, 10, 10, 0.])), A_eq=np.ones((1, 4)), b_eq=[1],
                 bounds=list(zip(lower, upper)), method="highs")
    assert -lp.fun == pytest.approx(flip.max_margin, abs=1e-9)


def test_a_capped_poor_segment_cannot_overtake_even_when_its_raw_score_would():
    # faithcap: (10, 10, 10, 2) has raw 84 but is capped at 49 (poor); (8, 8, 8, 8) is 80 at every weight.
    # Its raw score beats the good one everywhere; the published score never does.
    segs = segments_of([(8, 8, 8, 8, NO_FACTS), (10, 10, 10, 2, NO_FACTS)])
    result = S.good_below_poor(segs, FAITHCAP, 0.3)
    assert result.n_good == 1 and result.n_poor == 1 and result.n_pairs == 0


def polytope_points(lower, upper, rng, n=40_000):
    """Uniform points of P_d plus points along its edges (two weights at a bound, the other two
    sharing the rest), where maxima of these functions tend to sit."""
    z = lower[:3] + (upper[:3] - lower[:3]) * rng.random((n, 3))
    inner = np.column_stack([z, 1 - z.sum(1)])
    edges = []
    for a, b in itertools.combinations(range(4), 2):
        for fa, fb in itertools.product((lower[a], upper[a]), (lower[b], upper[b])):
            c, e = [k for k in range(4) if k not in (a, b)]
            wc = np.linspace(lower[c], upper[c], 400)
            w = np.zeros((400, 4))
            w[:, a], w[:, b], w[:, c], w[:, e] = fa, fb, wc, 1 - fa - fb - wc
            edges.append(w)
    w = np.concatenate([inner, *edges])
    return w[((w >= lower - 1e-12) & (w <= upper + 1e-12)).all(1)]


def sampled_max_margin(si, mi, ci, sj, mj, cj, w):
    def capped(s, m, c):
        return np.minimum(10 * (w * s * m).sum(1) / (w * m).sum(1), c)
    return (capped(sj, mj, cj) - capped(si, mi, ci)).max()


@pytest.mark.parametrize("d", [0.05, 0.15, 0.3])
def test_pair_margin_is_exact_against_dense_sampling(d):
    # Random pairs, with null faithfulness on either side and caps: the returned weight vector is in
    # the polytope, reaches the returned margin, and no sampled vector beats it; sampling gets close.
    rng = np.random.default_rng(int(d * 1000))
    lower, upper = S.box_on_simplex_bounds(AXON, d)
    n = 40
    si, sj = rng.uniform(0, 10, (n, 4)), rng.uniform(0, 10, (n, 4))
    mi = np.column_stack([np.ones((n, 3)), rng.random(n) < 0.5]).astype(float)
    mj = np.column_stack([np.ones((n, 3)), rng.random(n) < 0.5]).astype(float)
    si[:, 3] *= mi[:, 3]
    sj[:, 3] *= mj[:, 3]
    ci = np.where(rng.random(n) < 0.4, rng.uniform(30, 90, n), np.inf)
    cj = np.where(rng.random(n) < 0.4, rng.uniform(30, 90, n), np.inf)
    margin, w = S._pair_max_margin(si, mi, ci, sj, mj, cj, lower, upper)
    points = polytope_points(lower, upper, rng)
    assert (w >= lower - 1e-9).all() and (w <= upper + 1e-9).all()
    np.testing.assert_allclose(w.sum(1), 1.0, atol=1e-9)
    for k in range(n):
        at_w = (min(10 * (w[k] * sj[k] * mj[k]).sum() / (w[k] * mj[k]).sum(), cj[k])
                - min(10 * (w[k] * si[k] * mi[k]).sum() / (w[k] * mi[k]).sum(), ci[k]))
        assert at_w == pytest.approx(margin[k], abs=1e-9)
        sampled = sampled_max_margin(si[k], mi[k], ci[k], sj[k], mj[k], cj[k], points)
        assert sampled <= margin[k] + 1e-9
        assert margin[k] - sampled < max(0.02, 0.2 * d)  # sampling resolution, not the method


# -- Sobol -------------------------------------------------------------------------------------------------------
def test_sobol_indices_of_a_linear_model_match_the_analytic_values():
    # Y = sum a_k X_k, X_k ~ U[l_k, u_k] independent: V_k = a_k^2 (u_k - l_k)^2 / 12, S1_k = ST_k = V_k / sum V.
    a = np.array([3.0, 1.0, 0.0, 2.0])
    bounds = [(0.0, 1.0), (-1.0, 2.0), (0.0, 5.0), (0.5, 1.0)]
    widths = np.array([u - lo for lo, u in bounds])
    v = a ** 2 * widths ** 2 / 12
    table = S.sobol_indices(lambda x: x @ a, ["x1", "x2", "x3", "x4"], bounds, n_base=4096, seed=1)
    np.testing.assert_allclose(table["S1"], v / v.sum(), atol=0.03)
    np.testing.assert_allclose(table["ST"], v / v.sum(), atol=0.03)
    with pytest.raises(ValueError, match="power of two"):
        S.sobol_indices(lambda x: x @ a, ["x1", "x2", "x3", "x4"], bounds, n_base=1000, seed=1)


def test_weight_sobol_on_a_run():
    sobol = S.weight_sobol(SEGS, AXON, d=0.05, n_base=128, seed=3)
    assert sobol.n_evaluations == 128 * 6
    assert set(sobol.table["weight"]) == set(DIMENSIONS)
    assert set(sobol.table["output"]) == {"mean_score", "share_good"}
    mean = sobol.table[sobol.table["output"] == "mean_score"]
    assert (mean["ST"] >= -0.05).all() and mean["S1"].sum() <= 1.1
    out = sobol.to_json()
    assert set(out) == set(DIMENSIONS) and set(out["sql_quality"]) == {"mean_score", "share_good"}
    json.dumps(out, allow_nan=False)


# -- the study summary -------------------------------------------------------------------------------------------
def test_summary_has_exactly_the_study_keys_and_is_json_safe():
    summary = S.weight_sensitivity_summary(FRAME, AXON, deltas=(0.01, 0.05), n_samples=64, seed=5)
    out = summary.to_json()
    assert set(out) == {"worst_case_abs_delta", "oat_max_abs_delta", "band_flip_rate", "good_below_poor", "sobol"}
    for key in ("worst_case_abs_delta", "oat_max_abs_delta", "band_flip_rate", "good_below_poor"):
        assert set(out[key]) == {"0.01", "0.05"}
    assert json.loads(json.dumps(out, allow_nan=False)) == out
    assert summary.n_segments == 295 and summary.n_excluded == 5 and summary.rubric_id == AXON.id
    for d in (0.01, 0.05):  # exact worst case >= anything sampled at the same size
        assert out["worst_case_abs_delta"][str(d)] >= out["oat_max_abs_delta"][str(d)]
        assert out["worst_case_abs_delta"][str(d)] >= summary.box[d].max_abs_delta
        assert out["good_below_poor"][str(d)]["n_pairs"] == 0
        assert out["good_below_poor"][str(d)]["impossible_by_bound"] is True
    assert out["worst_case_abs_delta"]["0.05"] <= 10.0 + 0.05
    assert 0 <= out["band_flip_rate"]["0.01"] <= out["band_flip_rate"]["0.05"] < 1
    assert set(out["sobol"]) == set(DIMENSIONS)
    # reproducible from the seed
    again = S.weight_sensitivity_summary(FRAME, AXON, deltas=(0.01, 0.05), n_samples=64, seed=5).to_json()
    assert again == out


def test_summary_finds_the_fabricated_answer_gap_under_faithcap():
    frame = pd.DataFrame([{"segment_id": "fab", "intent_understood": 10, "sql_quality": 10, "result_relevance": 10,
                           "answer_faithfulness": 0, "all_sql_failed": False, "ended_on_failure": False,
                           "no_tools": False, "status": "judged"},
                          {"segment_id": "ok", "intent_understood": 9, "sql_quality": 9, "result_relevance": 8,
                           "answer_faithfulness": 9, "all_sql_failed": False, "ended_on_failure": False,
                           "no_tools": False, "status": "judged"}])
    nominal = S.worst_case(frame, AXON, 0.05).per_segment.set_index("segment_id")
    capped = S.worst_case(frame, FAITHCAP, 0.05).per_segment.set_index("segment_id")
    assert nominal.loc["fab", "nominal_score"] == 80.0 and nominal.loc["fab", "nominal_band"] == "good"
    assert nominal.loc["fab", "band_can_change"]  # on the edge: 75..85
    assert capped.loc["fab", "nominal_score"] == 49.0 and capped.loc["fab", "worst_abs_delta"] == 0.0


subscore = st.integers(min_value=0, max_value=10)
facts_st = st.tuples(st.booleans(), st.booleans(), st.booleans())


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(subscore, subscore, subscore, st.one_of(st.none(), subscore), facts_st), min_size=1,
                max_size=6),
       st.sampled_from([0.01, 0.05, 0.2]), st.lists(st.floats(0, 1), min_size=3, max_size=3),
       st.sampled_from([AXON, FAITHCAP]))
def test_no_weight_vector_in_the_box_beats_the_exact_worst_case(rows, d, position, rubric):
    # Any w in P_d (first three weights placed in their box intervals, the fourth taking the rest,
    # kept when it lands in its own interval) scores every segment within [score_min, score_max].
    lower, upper = S.box_on_simplex_bounds(rubric, d)
    z = lower[:3] + (upper[:3] - lower[:3]) * np.array(position)
    w = np.append(z, 1 - z.sum())
    if not lower[3] <= w[3] <= upper[3]:
        w = np.array([0.30, 0.25, 0.25, 0.20])  # the nominal vector is always in the box
    w = w / w.sum()
    segs = segments_of(rows)
    wc = S.worst_case(segs, rubric, d).per_segment
    score = S.score_matrix(segs, w[None, :], rubric)[0]
    assert (score >= wc["score_min"].to_numpy() - 1e-9).all() and (score <= wc["score_max"].to_numpy() + 1e-9).all()
    bound = S.score_shift_bound(rubric, d)
    # rounding both the nominal and the extreme score to 0.1 adds at most 0.1 to the raw bound
    assert (wc["max_rise"] <= bound.max_rise + 0.1).all() and (wc["max_fall"] <= bound.max_fall + 0.1).all()


# -- unscorable segments and the rounding rule ------------------------------------------------
def test_segments_the_nominal_rubric_cannot_score_are_refused_never_banded():
    # All the nominal weight on faithfulness: a segment whose faithfulness is null has no score. Before,
    # the sweep and the worst case banded it "poor" (NaN compares False against every band edge).
    faith_only = Rubric.default().with_weights({"intent_understood": 0, "sql_quality": 0, "result_relevance": 0,
                                                "answer_faithfulness": 1})
    segs = S.Segments.from_arrays(np.array([[5, 5, 5, np.nan], [5, 5, 5, 7]]), np.zeros((2, 3), bool),
                                  segment_ids=["null-faith", "scored"])
    w = np.array([[0.05, 0.0, 0.0, 0.95]])
    for call in (lambda: S.sweep_weights(segs, w, faith_only), lambda: S.score_matrix(segs, w, faith_only),
                 lambda: S.worst_case(segs, faith_only, 0.05)):
        with pytest.raises(ValueError, match=r"1 segment\(s\) are unscorable.*null-faith"):
            call()


def test_sweep_rounds_ties_half_away_from_zero_like_the_scorer():
    # (9, 0, 0, null) under the nominal weights is exactly 33.75: 33.8 on every path (was 33.7).
    segs = S.Segments.from_arrays(np.array([[9, 0, 0, np.nan], [8, 6, 4, np.nan]]), np.zeros((2, 3), bool))
    nominal = np.array([[0.30, 0.25, 0.25, 0.20]])
    assert S.score_matrix(segs, nominal).tolist() == [[33.8, 61.3]]
    sweep = S.sweep_weights(segs, nominal)
    assert sweep.per_segment["nominal_score"].tolist() == [33.8, 61.3]
    assert sweep.per_vector["max_abs_delta"].iloc[0] == 0.0
