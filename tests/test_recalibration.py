"""axon_eval.stats.recalibration: known answers.

* least squares recovers the weights that generated the data through the scorer itself (``score_arrays``:
  renormalised null faithfulness, caps, rounding), inside the simplex and on its edge;
* least squares against an oracle written out here (the score formula on a stars-and-bars simplex grid, and
  feasible random perturbations for local optimality): never worse than the best 0.02 grid point (hypothesis,
  seeded 20-row sets), not worse than a 0.01 grid, out of the face where SLSQP alone stopped ("Inequality
  constraints incompatible"), the 0.01 floor on the observed dimensions when faithfulness is null (every
  labelled row scored, the (0, 0, 0, 1) proposal refused), ``converged`` true of the point returned;
* ``predicted_scores``: NaN with a reason, never 0, for a zero denominator;
* the ordinal model recovers a known ordering of coefficients from synthetic proportional-odds data, turns
  a negative coefficient into weight 0, drops a constant subscore and flags separation;
* cross-validation uses the same seeded, stratified folds for every method (checked against fits redone by
  hand on each fold's complement);
* the (10, 10, 10, 0) case: 80 good under axon-v1, 49 poor under axon-v1-faithcap, 100 * (1 - w_f) otherwise;
* proposals: YAML that ``extends: axon-v1``, loads as a Rubric with the proposal's id, never written into
  the package or over a file.
"""

from __future__ import annotations

import itertools
import json
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from axon_eval.labels import load_labels
from axon_eval.rubric import BANDS, CAP_FACTS, DIMENSIONS, Rubric
from axon_eval.scoring import score_arrays
from axon_eval.stats import cohens_kappa
from axon_eval.stats import recalibration as rc
from axon_eval.stats.sensitivity import Segments

AXON = Rubric.default()
FAITHCAP = Rubric.packaged("axon-v1-faithcap")


def synthetic_scorer_data(weights: dict[str, float], n: int = 400, seed: int = 1, *, with_caps: bool = True
                          ) -> rc.LabelledSegments:
    """Random integer subscores (a fifth of faithfulness null), some capped trajectories; y = the scorer's
    score under ``weights`` (rounded to 0.1, capped), verdict = its band."""
    rng = np.random.default_rng(seed)
    subs = rng.integers(0, 11, size=(n, 4)).astype(float)
    subs[rng.random(n) < 0.2, 3] = np.nan
    facts = np.zeros((n, 3), dtype=bool)
    if with_caps:
        facts[rng.random(n) < 0.05, 0] = True
        facts[rng.random(n) < 0.10, 1] = True
    _raw, score, code = score_arrays(subs, facts, AXON.with_weights(weights))
    return rc.LabelledSegments.from_arrays(subs, [BANDS[c] for c in code], facts=facts, y=score)


# -- data -----------------------------------------------------------------------------------------------
def test_band_targets_are_band_midpoints():
    assert rc.band_targets() == {"good": 90.0, "partial": 65.0, "poor": 25.0}
    other = AXON.replace(bands={"good": 70, "partial": 40})
    assert rc.band_targets(other) == {"good": 85.0, "partial": 55.0, "poor": 20.0}


def test_predicted_scores_match_the_scorer_with_null_faithfulness():
    data = synthetic_scorer_data({"intent_understood": 0.4, "sql_quality": 0.1, "result_relevance": 0.3,
                                  "answer_faithfulness": 0.2})
    w = {"intent_understood": 0.1, "sql_quality": 0.2, "result_relevance": 0.3, "answer_faithfulness": 0.4}
    raw, _score, _code = score_arrays(data.subscores, data.facts, AXON.with_weights(w))
    assert rc.predicted_scores(data, w, AXON, apply_caps=False) == pytest.approx(raw, abs=1e-9)
    capped = rc.predicted_scores(data, w, AXON)
    assert capped[data.facts[:, 0]].max() <= 25 and capped[data.facts[:, 1]].max() <= 70
    # one null-faithfulness row by hand: (6, 8, 4, null) -> 10 * (.1*6 + .2*8 + .3*4) / .6
    one = rc.LabelledSegments.from_arrays([[6, 8, 4, np.nan]], ["partial"])
    assert rc.predicted_scores(one, w)[0] == pytest.approx(10 * (0.6 + 1.6 + 1.2) / 0.6)


def test_labelled_segments_join_on_segment_id():
    subs = np.array([[10, 10, 10, 10], [5, 5, 5, np.nan], [0, 0, 0, 0]], dtype=float)
    seg = Segments.from_arrays(subs, np.zeros((3, 3), dtype=bool), segment_ids=["a", "b", "z"])
    labels = pd.DataFrame({"segment_id": ["a", "b", "c"], "verdict": ["good", "partial", "poor"]})
    data = rc.labelled_segments(seg, labels)
    assert list(data.segment_ids) == ["a", "b"] and list(data.y) == [90.0, 65.0]
    assert data.n_unlabelled == 1 and data.n_labels_unmatched == 1
    with pytest.raises(ValueError, match="no judged segment has a label"):
        rc.labelled_segments(seg, labels.assign(segment_id=["x", "y", "w"]))


# -- (a) least squares -------------------------------------------------------------------------------------
@pytest.mark.parametrize("true", [
    {"intent_understood": 0.4, "sql_quality": 0.1, "result_relevance": 0.3, "answer_faithfulness": 0.2},
    {"intent_understood": 0.5, "sql_quality": 0.0, "result_relevance": 0.15, "answer_faithfulness": 0.35},
])
def test_least_squares_recovers_the_weights_that_generated_the_scores(true):
    data = synthetic_scorer_data(true)
    fit = rc.fit_least_squares(data, AXON)
    assert fit.converged
    assert [fit.weights[d] for d in DIMENSIONS] == pytest.approx([true[d] for d in DIMENSIONS], abs=2e-3)
    assert sum(fit.weights.values()) == pytest.approx(1.0) and min(fit.weights.values()) >= 0
    assert fit.rmse < 0.05  # only the scorer's rounding to 0.1 is left
    assert fit.n_capped > 0  # capped rows were present, and the weights could not move them


def test_least_squares_exact_without_rounding():
    true = {"intent_understood": 0.25, "sql_quality": 0.35, "result_relevance": 0.1, "answer_faithfulness": 0.3}
    base = synthetic_scorer_data(true, with_caps=False)
    exact = rc.predicted_scores(base, true, AXON)
    data = rc.LabelledSegments.from_arrays(base.subscores, base.verdict, y=exact)
    fit = rc.fit_least_squares(data, AXON)
    assert [fit.weights[d] for d in DIMENSIONS] == pytest.approx([true[d] for d in DIMENSIONS], abs=1e-5)
    assert fit.rmse == pytest.approx(0.0, abs=1e-3)


# -- (a) least squares: global optimum, floor, convergence ---------------------------------------------------
# The oracle below is written out here, independent of the module: the scorer's formula on a simplex grid
# enumerated by stars and bars (itertools), and a local-optimality check by feasible random perturbations.
def oracle_scores(subs: np.ndarray, facts: np.ndarray, w: np.ndarray) -> np.ndarray:
    """(K, n) scores of K weight vectors: 10 * sum over observed d of w_d s_d / sum over observed d of w_d
    (NaN where that sum is 0), then min with the lowest axon-v1 cap that triggers (25 / 70 / 40)."""
    w = np.atleast_2d(w)
    obs = ~np.isnan(subs)
    num = w @ np.where(obs, subs, 0.0).T
    den = w @ obs.T.astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        raw = np.where(den > 0, 10.0 * num / np.where(den > 0, den, 1.0), np.nan)
    cap = np.full(len(subs), np.inf)
    for j, value in enumerate((25.0, 70.0, 40.0)):  # all_sql_failed, ended_on_failure, no_tools
        cap = np.where(facts[:, j], np.minimum(cap, value), cap)
    return np.minimum(raw, cap)


def oracle_rmse(data: rc.LabelledSegments, w: np.ndarray) -> np.ndarray:
    return np.sqrt(np.mean((oracle_scores(data.subscores, data.facts, w) - data.y) ** 2, axis=1))


def stars_and_bars(k: int) -> np.ndarray:
    """Every (a, b, c, d) / k with non-negative integers summing to k: 3 bars among k + 3 slots."""
    rows = [np.diff([-1, *bars, k + 3]) - 1 for bars in itertools.combinations(range(k + 3), 3)]
    return np.array(rows, dtype=float) / k


GRID_50 = stars_and_bars(50)  # step 0.02, the fit's own grid
GRID_100 = stars_and_bars(100)  # step 0.01, finer than the fit's


def oracle_grid_best(data: rc.LabelledSegments, grid: np.ndarray, floor: float) -> float:
    """Smallest RMSE over the grid points with w_0 + w_1 + w_2 >= floor (unscorable points excluded)."""
    g = grid[grid[:, :3].sum(axis=1) >= floor - 1e-12]
    best = np.inf
    for lo in range(0, len(g), 20000):
        r = oracle_rmse(data, g[lo:lo + 20000])
        best = min(best, float(np.nanmin(r)))
    return best


def no_feasible_descent(data: rc.LabelledSegments, w: np.ndarray, floor: float, seed: int = 0) -> float:
    """Largest relative decrease of the oracle RMSE found over 400 random feasible moves of size 1e-6..1e-3."""
    rng = np.random.default_rng(seed)
    f0 = float(oracle_rmse(data, w)[0])
    moves = []
    for _ in range(400):
        d = rng.normal(size=4)
        d[w <= 1e-9] = np.abs(d[w <= 1e-9])  # a weight at 0 can only grow
        d -= d.mean() if (w > 1e-9).all() else 0.0
        d[w > 1e-9] -= d.sum() / max(1, int((w > 1e-9).sum()))  # the sum stays 1
        for eps in (1e-6, 1e-5, 1e-4, 1e-3):
            v = w + eps * d / np.abs(d).max()
            if v.min() >= 0 and v[:3].sum() >= floor and abs(v.sum() - 1) < 1e-12:
                moves.append(v)
    f = oracle_rmse(data, np.array(moves)) if moves else np.array([f0])
    return max(0.0, float((f0 - np.nanmin(f)) / f0))


def random_set(seed: int, n: int = 20, null_share: float = 0.3, cap_share: float = 0.1) -> rc.LabelledSegments:
    """Seeded random labelled set: integer subscores, a share of null faithfulness, random caps and bands."""
    rng = np.random.default_rng(seed)
    subs = rng.integers(0, 11, size=(n, 4)).astype(float)
    subs[rng.random(n) < null_share, 3] = np.nan
    facts = rng.random((n, 3)) < cap_share
    return rc.LabelledSegments.from_arrays(subs, rng.choice(list(BANDS), size=n), facts=facts)


def floor_of(data: rc.LabelledSegments) -> float:
    return rc.MIN_OBSERVED_WEIGHT if np.isnan(data.subscores[:, 3]).any() else 0.0


def assert_feasible(fit: rc.LeastSquaresFit, data: rc.LabelledSegments) -> np.ndarray:
    w = np.array([fit.weights[d] for d in DIMENSIONS])
    assert w.min() >= 0 and w.sum() == pytest.approx(1.0, abs=1e-12)
    assert w[:3].sum() >= floor_of(data) - 1e-12 and fit.min_observed_weight == floor_of(data)
    assert np.isfinite(oracle_scores(data.subscores, data.facts, w)).all()  # every labelled segment scored
    assert fit.rmse == pytest.approx(float(oracle_rmse(data, w)[0]), rel=1e-12)
    return w


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2 ** 32 - 1), null_share=st.sampled_from([0.0, 0.3, 0.6]),
       cap_share=st.sampled_from([0.0, 0.1]))
def test_least_squares_is_never_worse_than_the_best_grid_point(seed, null_share, cap_share):
    data = random_set(seed, null_share=null_share, cap_share=cap_share)
    fit = rc.fit_least_squares(data, AXON)
    best_grid = oracle_grid_best(data, GRID_50, floor_of(data))
    assert fit.rmse <= best_grid + 1e-6
    assert fit.rmse_grid == pytest.approx(best_grid, rel=1e-9) and fit.grid_step == rc.LSQ_GRID_STEP
    w = assert_feasible(fit, data)
    if fit.converged:  # a converged fit is a local optimum: no feasible move lowers the RMSE
        assert no_feasible_descent(data, w, floor_of(data), seed=seed % 1000) < 1e-7


@pytest.mark.parametrize("seed", range(8))
def test_least_squares_matches_a_finer_grid(seed):
    data = random_set(seed + 100, null_share=0.3)
    fit = rc.fit_least_squares(data, AXON)
    assert fit.rmse <= oracle_grid_best(data, GRID_100, floor_of(data)) + 1e-6
    assert fit.converged, fit.message


# A 20-row set (faithfulness null on 11) on which SLSQP alone, from the base and equal weights, stopped with
# "Inequality constraints incompatible" at (1e-9, 5e-7, 1e-9, 0.9999995), RMSE 24.93: the null rows then
# scored on a vanishing weight; grid points do better.
INCOMPATIBLE = (
    [[10, 10, 9, 9], [2, 7, 9, None], [3, 8, 9, None], [0, 9, 3, 3], [2, 3, 1, None], [6, 10, 5, None],
     [3, 10, 9, 10], [7, 9, 4, None], [3, 4, 10, None], [3, 7, 1, None], [3, 8, 5, None], [10, 8, 1, 8],
     [7, 10, 10, 6], [0, 4, 5, None], [1, 2, 9, 5], [4, 5, 2, 4], [2, 8, 10, None], [5, 7, 9, 7], [3, 5, 6, None],
     [8, 6, 2, 2]],
    ["partial", "good", "poor", "poor", "good", "good", "good", "partial", "partial", "partial", "partial", "good",
     "partial", "poor", "good", "partial", "partial", "partial", "partial", "poor"],
)


def test_least_squares_escapes_the_face_where_slsqp_stalled():
    subs = np.array([[np.nan if x is None else x for x in row] for row in INCOMPATIBLE[0]], dtype=float)
    data = rc.LabelledSegments.from_arrays(subs, INCOMPATIBLE[1])
    fit = rc.fit_least_squares(data, AXON)
    best_grid = oracle_grid_best(data, GRID_50, rc.MIN_OBSERVED_WEIGHT)
    assert best_grid < 24.9  # the grid beats where SLSQP alone stopped ...
    assert fit.rmse <= best_grid + 1e-6  # ... and so does the fit, also against a finer grid
    assert fit.rmse <= oracle_grid_best(data, GRID_100, rc.MIN_OBSERVED_WEIGHT) + 1e-6
    assert fit.converged, fit.message
    w = assert_feasible(fit, data)  # w_0 + w_1 + w_2 >= 0.01: the null rows are scored on real weight
    assert no_feasible_descent(data, w, 0.01) < 1e-7


# Six segments whose observed faithfulness predicts the target exactly: unconstrained, the fit runs to
# (0, 0, 0, 1), where the two null-faithfulness rows cannot be scored (the old fit returned exactly that,
# scoring them 0). The floor keeps w_0 + w_1 + w_2 >= 0.01 and the proposal scores every row.
ONLY_FAITHFULNESS = ([[0, 0, 0, 9], [10, 10, 10, 2.5], [0, 0, 0, 6.5], [10, 10, 10, 9], [10, 0, 5, np.nan],
                      [0, 10, 5, np.nan]], ["good", "poor", "partial", "good", "partial", "good"])


def test_null_faithfulness_keeps_weight_on_the_observed_dimensions_and_the_proposal_scores_every_row():
    data = rc.LabelledSegments.from_arrays(*ONLY_FAITHFULNESS, segment_ids=list("abcdef"))
    fit = rc.fit_least_squares(data, AXON)
    w = assert_feasible(fit, data)
    assert w[:3].sum() == pytest.approx(rc.MIN_OBSERVED_WEIGHT, abs=1e-9)  # the floor binds here
    assert fit.converged, fit.message
    assert fit.rmse <= oracle_grid_best(data, GRID_100, rc.MIN_OBSERVED_WEIGHT) + 1e-6
    assert no_feasible_descent(data, w, rc.MIN_OBSERVED_WEIGHT) < 1e-7
    proposal = rc.propose_rubric(fit.weights, AXON, name="floor-test", data=data)
    assert sum(proposal.weights[d] for d in DIMENSIONS[:3]) >= rc.MIN_OBSERVED_WEIGHT - 2e-4  # 4-decimal rounding
    raw, _score, _code = score_arrays(data.subscores, data.facts, proposal.rubric)
    assert np.isfinite(raw).all()
    assert rc.unscorable_segments(data, proposal.weights) == {}
    # the limit the unconstrained fit ran to is refused, naming the rows
    with pytest.raises(ValueError, match=r"leave 2 of 6 labelled segment\(s\) unscorable.*\['e', 'f'\]"):
        rc.propose_rubric({"intent_understood": 0, "sql_quality": 0, "result_relevance": 0,
                           "answer_faithfulness": 1}, AXON, name="face-test", data=data)


def test_least_squares_reports_convergence_of_the_point_it_returns():
    # sets on which SLSQP stopped with "Positive directional derivative for linesearch" at an optimum, or
    # the converged start was dropped for a 3e-12 better one, and the fit said converged=False
    for seed in (22, 29, 41, 51):
        rng = np.random.default_rng(seed)
        subs = rng.integers(0, 11, size=(20, 4)).astype(float)
        subs[rng.random(20) < 0.3, 3] = np.nan
        data = rc.LabelledSegments.from_arrays(subs, rng.choice(list(BANDS), size=20))
        fit = rc.fit_least_squares(data, AXON)
        assert fit.converged and "KKT check passed" in fit.message, (seed, fit.message)
        assert fit.kkt_residual <= rc.LSQ_KKT_TOL
        assert fit.method.startswith(("SLSQP from", "grid point")) and fit.n_starts == rc.LSQ_POLISH_POINTS + 2
        w = assert_feasible(fit, data)
        assert no_feasible_descent(data, w, floor_of(data)) < 1e-7
        assert fit.rmse <= oracle_grid_best(data, GRID_50, floor_of(data)) + 1e-6


def test_least_squares_without_null_faithfulness_has_no_floor():
    # every faithfulness observed and equal to the target / 10: (0, 0, 0, 1) is exact and allowed
    rng = np.random.default_rng(8)
    subs = rng.integers(0, 11, size=(30, 4)).astype(float)
    data = rc.LabelledSegments.from_arrays(subs, ["poor"] * 30, y=10 * subs[:, 3])
    fit = rc.fit_least_squares(data, AXON)
    assert fit.min_observed_weight == 0.0 and fit.rmse == pytest.approx(0.0, abs=1e-6)
    assert fit.weights["answer_faithfulness"] == pytest.approx(1.0, abs=1e-6) and fit.converged
    with pytest.raises(ValueError, match="only answer_faithfulness may be null"):
        rc.fit_least_squares(rc.LabelledSegments.from_arrays([[np.nan, 1, 1, 1]], ["poor"]), AXON)
    with pytest.raises(ValueError, match="min_observed_weight"):
        rc.fit_least_squares(data, AXON, min_observed_weight=1.0)


def test_predicted_scores_give_nan_with_a_reason_for_a_zero_denominator():
    data = rc.LabelledSegments.from_arrays([[6, 8, 4, np.nan], [6, 8, 4, 7]], ["partial", "good"],
                                           segment_ids=["null-f", "full"])
    only_f = {"intent_understood": 0.0, "sql_quality": 0.0, "result_relevance": 0.0, "answer_faithfulness": 1.0}
    scores, reasons = rc.predicted_scores(data, only_f, AXON, return_reasons=True)
    assert np.isnan(scores[0]) and scores[1] == pytest.approx(70.0)  # 10 * 7 / 1, by hand
    assert reasons[1] == "" and "sum to 0" in reasons[0] and "answer_faithfulness null" in reasons[0]
    with pytest.warns(RuntimeWarning, match=r"1 segment\(s\) cannot be scored.*null-f"):
        plain = rc.predicted_scores(data, only_f, AXON)
    assert np.isnan(plain[0]) and plain[1] == pytest.approx(70.0)
    assert rc.unscorable_segments(data, only_f) == {"null-f": reasons[0]}


def test_study_refuses_a_proposal_that_leaves_segments_unscorable():
    # faithfulness sets the band and the other three run against it: the ordinal weights are (0, 0, 0, 1),
    # which cannot score the null-faithfulness segments; least squares keeps the floor and is proposed
    rng = np.random.default_rng(4)
    n = 120
    f = rng.integers(0, 11, size=n).astype(float)
    x = np.column_stack([np.clip(10 - f[:, None] + rng.integers(-2, 3, size=(n, 3)), 0, 10), f])
    eta = f + 1.5 * rng.logistic(size=n)
    verdict = np.where(eta >= 7, "good", np.where(eta >= 4, "partial", "poor"))
    x[rng.random(n) < 0.15, 3] = np.nan
    data = rc.LabelledSegments.from_arrays(x, verdict)
    study = rc.recalibration_study(data, AXON, n_folds=3, seed=0)
    assert study.ordinal.weights["answer_faithfulness"] == 1.0
    assert set(study.proposals) == {"least_squares"} and set(study.proposals_rejected) == {"ordinal"}
    assert "unscorable" in study.proposals_rejected["ordinal"]
    out = study.to_json()
    assert out["ordinal"]["proposal_rejected"] == study.proposals_rejected["ordinal"]
    assert out["least_squares"]["proposal_rejected"] is None and out["in_sample_kappa"]["ordinal"] is None
    assert out["least_squares"]["method"] == study.least_squares.method
    for p in study.proposals.values():
        raw, _s, _c = score_arrays(data.subscores, data.facts, p.rubric)
        assert np.isfinite(raw).all()
    # a fold whose ordinal weights cannot score its held-out segments predicts nothing there
    notes = study.cv.per_fold.query("method == 'ordinal'")["note"]
    assert notes.str.contains("unscorable").any()
    assert study.cv.per_fold.query("method == 'least_squares'")["note"].eq("").all()
    assert study.cv.summary.loc["least_squares", "n_predicted"] == n


# -- (b) ordinal -------------------------------------------------------------------------------------------
def ordinal_data(beta: list[float], n: int = 3000, seed: int = 2, constant: int | None = None) -> rc.LabelledSegments:
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 11, size=(n, 4)).astype(float)
    if constant is not None:
        x[:, constant] = 10.0
    eta = x @ np.array(beta) + rng.logistic(size=n)
    codes = np.digitize(eta, np.quantile(eta, [0.3, 0.7]))  # 0 poor, 1 partial, 2 good
    return rc.LabelledSegments.from_arrays(x, [rc.ORDINAL_ORDER[c] for c in codes])


def test_ordinal_recovers_a_known_ordering():
    beta = [0.9, 0.3, 0.6, 0.05]
    fit = rc.fit_ordinal(ordinal_data(beta), AXON)
    b = fit.coefficients
    assert fit.converged and not fit.separation_suspected and fit.n == 3000
    assert b["intent_understood"] > b["result_relevance"] > b["sql_quality"] > b["answer_faithfulness"] > -0.1
    for d, true in zip(DIMENSIONS, beta, strict=True):
        assert abs(b[d] - true) < 4 * fit.std_errors[d] + 0.02, d
    expected = np.array(beta) / sum(beta)
    assert [fit.weights[d] for d in DIMENSIONS] == pytest.approx(expected, abs=0.03)
    assert list(fit.thresholds) == ["poor/partial", "partial/good"]
    assert fit.thresholds["poor/partial"] < fit.thresholds["partial/good"]


def test_ordinal_negative_coefficient_and_constant_subscore_get_weight_zero():
    fit = rc.fit_ordinal(ordinal_data([1.0, -0.5, 0.5, 0.5]), AXON)
    assert fit.negative == ["sql_quality"] and fit.weights["sql_quality"] == 0.0
    assert fit.coefficients["sql_quality"] < 0
    assert sum(fit.weights.values()) == pytest.approx(1.0)
    dropped = rc.fit_ordinal(ordinal_data([1.0, 0.4, 0.5, 0.5], constant=1), AXON)
    assert dropped.dropped == ["sql_quality"] and dropped.coefficients["sql_quality"] is None
    assert dropped.weights["sql_quality"] == 0.0


def test_ordinal_flags_separation_and_imputes_null_faithfulness():
    rng = np.random.default_rng(3)
    x = rng.integers(0, 11, size=(200, 4)).astype(float)
    verdict = np.where(x[:, 0] >= 8, "good", np.where(x[:, 0] >= 4, "partial", "poor"))  # intent sorts perfectly
    fit = rc.fit_ordinal(rc.LabelledSegments.from_arrays(x, verdict), AXON)
    assert fit.separation_suspected
    x[:10, 3] = np.nan
    data = rc.LabelledSegments.from_arrays(x, verdict)
    exog, endog, n_capped, n_imputed = rc.ordinal_design(data, AXON)
    assert n_imputed == 10 and n_capped == 0 and list(endog.cat.categories) == ["poor", "partial", "good"]
    # the imputed value is axon-v1's renormalised mean of the other three: the score is unchanged
    row = x[0]
    assert exog.iloc[0, 3] == pytest.approx((0.30 * row[0] + 0.25 * row[1] + 0.25 * row[2]) / 0.80)


def test_ordinal_leaves_capped_segments_out():
    data = ordinal_data([0.9, 0.3, 0.6, 0.05], n=300)
    facts = np.zeros((300, 3), dtype=bool)
    facts[:30, 2] = True
    capped = rc.LabelledSegments(data.segment_ids, data.subscores, facts, data.verdict, data.y, data.targets)
    fit = rc.fit_ordinal(capped, AXON)
    assert fit.n == 270 and fit.n_excluded_capped == 30
    assert rc.fit_ordinal(capped, AXON, exclude_capped=False).n == 300


# -- (c) cross-validation ------------------------------------------------------------------------------------
def test_cv_folds_are_seeded_stratified_and_balanced():
    verdict = ["good"] * 38 + ["partial"] * 39 + ["poor"] * 20
    folds = rc.cv_folds(verdict, 5, seed=0)
    assert np.array_equal(folds, rc.cv_folds(verdict, 5, seed=0))
    assert not np.array_equal(folds, rc.cv_folds(verdict, 5, seed=1))
    sizes = np.bincount(folds)
    assert sizes.max() - sizes.min() <= 1 and sizes.sum() == 97
    for band, count in (("good", 38), ("partial", 39), ("poor", 20)):
        per = np.bincount(folds[np.array(verdict) == band], minlength=5)
        assert per.max() - per.min() <= 1 and per.sum() == count
    with pytest.raises(ValueError):
        rc.cv_folds(verdict, 1)


def test_cross_validation_uses_the_same_folds_for_every_method():
    true = {"intent_understood": 0.2, "sql_quality": 0.2, "result_relevance": 0.2, "answer_faithfulness": 0.4}
    data = synthetic_scorer_data(true, n=150, seed=5)
    data = rc.LabelledSegments.from_arrays(data.subscores, data.verdict, facts=data.facts)  # y = band midpoints
    cv = rc.cross_validate(data, AXON, n_folds=4, seed=7, references={"axon-v1-faithcap": FAITHCAP})
    folds = rc.cv_folds(data.verdict, 4, seed=7)
    assert np.array_equal(cv.folds, folds) and np.array_equal(cv.predictions["fold"], folds)
    methods = ["nominal", "least_squares", "ordinal", "axon-v1-faithcap"]
    assert list(cv.summary.index) == methods
    n_test = cv.per_fold.pivot(index="fold", columns="method", values="n_test")
    assert (n_test.nunique(axis=1) == 1).all() and list(n_test["nominal"]) == list(np.bincount(folds))
    for k in range(4):
        train = data.subset(np.flatnonzero(folds != k))
        held = data.subset(np.flatnonzero(folds == k))
        row = cv.per_fold.set_index(["method", "fold"])
        lsq = rc.fit_least_squares(train, AXON)
        assert [row.loc[("least_squares", k), f"w_{d}"] for d in DIMENSIONS] == pytest.approx(
            [lsq.weights[d] for d in DIMENSIONS])
        ordf = rc.fit_ordinal(train, AXON)
        assert [row.loc[("ordinal", k), f"w_{d}"] for d in DIMENSIONS] == pytest.approx(
            [ordf.weights[d] for d in DIMENSIONS])
        for method, rubric in (("nominal", AXON), ("axon-v1-faithcap", FAITHCAP),
                               ("least_squares", AXON.with_weights(lsq.weights, normalise=True))):
            _r, _s, code = score_arrays(held.subscores, held.facts, rubric)
            assert row.loc[(method, k), "kappa"] == pytest.approx(cohens_kappa([BANDS[c] for c in code],
                                                                               list(held.verdict)))
    summary = cv.summary.loc["nominal"]
    assert summary["kappa_mean"] == pytest.approx(cv.per_fold.query("method == 'nominal'")["kappa"].mean())
    assert summary["n_predicted"] == 150


# -- (d) proposals -------------------------------------------------------------------------------------------
def test_round_weights_sum_to_exactly_one():
    w = rc.round_weights({"intent_understood": 1 / 3, "sql_quality": 1 / 3, "result_relevance": 1 / 3,
                          "answer_faithfulness": 0.0})
    assert sum(w.values()) == pytest.approx(1.0, abs=1e-12) and w["answer_faithfulness"] == 0.0
    assert sorted(w.values()) == [0.0, 0.3333, 0.3333, 0.3334]


def test_proposal_extends_axon_v1_and_loads_with_its_id(tmp_path):
    w = {"intent_understood": 0.26874, "sql_quality": 0.0, "result_relevance": 0.34091, "answer_faithfulness": 0.39035}
    p = rc.propose_rubric(w, AXON, name="axon-v1-lsq-test", comment="fitted to constructed labels; do not adopt")
    assert "extends: axon-v1\n" in p.yaml_text and "do not adopt" in p.yaml_text
    assert p.id != AXON.id and p.rubric.name == "axon-v1-lsq-test"
    assert p.rubric.caps == AXON.caps and p.rubric.bands == AXON.bands and p.rubric.subscore_caps == ()
    path = rc.write_proposal(p, tmp_path)
    assert path == tmp_path / "axon-v1-lsq-test.yaml"
    loaded = Rubric.from_yaml(path)
    assert loaded.id == p.id and loaded.weights.as_dict() == p.weights
    with pytest.raises(FileExistsError):
        rc.write_proposal(p, tmp_path)
    package = Path(str(resources.files("axon_eval")))
    with pytest.raises(ValueError, match="inside the package"):
        rc.write_proposal(p, package / "rubrics")
    assert not (package / "rubrics" / "axon-v1-lsq-test.yaml").exists()
    with pytest.raises(ValueError, match="name of its own"):
        rc.propose_rubric(w, AXON, name="axon-v1")
    # a faithcap base keeps its subscore cap through extends
    fc = rc.propose_rubric(w, FAITHCAP, name="faithcap-refit")
    assert "extends: axon-v1-faithcap" in fc.yaml_text and fc.rubric.subscore_caps == FAITHCAP.subscore_caps


# -- (e) perfect retrieval, fabricated answer ------------------------------------------------------------------
def test_fabricated_answer_is_good_under_axon_v1_and_poor_under_the_faithfulness_cap():
    w = {"intent_understood": 0.3, "sql_quality": 0.2, "result_relevance": 0.2, "answer_faithfulness": 0.3}
    table = rc.fabricated_answer_table({"axon-v1": AXON, "faithcap": FAITHCAP, "refit": AXON.with_weights(w)})
    rows = table.set_index("rubric")
    assert (rows.loc["axon-v1", "score"], rows.loc["axon-v1", "band"]) == (80.0, "good")
    assert (rows.loc["faithcap", "score"], rows.loc["faithcap", "band"]) == (49.0, "poor")
    assert rows.loc["faithcap", "caps_applied"] == "answer_faithfulness_at_or_below_3"
    assert (rows.loc["refit", "score"], rows.loc["refit", "band"]) == (70.0, "partial")  # 100 * (1 - 0.3)


# -- the study record -------------------------------------------------------------------------------------------
def test_study_record_to_json_on_the_constructed_labels():
    labels = load_labels(Path(__file__).resolve().parents[1] / "data" / "turns" / "labels.csv")
    # subscores at the middle of each labelled range (null faithfulness stays null): a stand-in judge
    subs = np.column_stack([((labels[f"{d}_min"].astype(float) + labels[f"{d}_max"].astype(float)) / 2).to_numpy()
                            for d in DIMENSIONS])
    seg = Segments.from_arrays(subs, np.zeros((len(labels), len(CAP_FACTS)), dtype=bool),
                               segment_ids=labels["segment_id"].tolist())
    study = rc.recalibration_study(rc.labelled_segments(seg, labels), AXON, n_folds=3, seed=0)
    out = study.to_json()
    json.dumps(out)
    assert {"n", "n_folds", "seed", "fitted_weights", "cv_kappa", "nominal_weights", "fabricated_10_10_10_0",
            "labels_note", "do_not_adopt", "in_sample_kappa", "least_squares", "ordinal"} <= set(out)
    assert out["n"] == len(labels) and out["n_folds"] == 3
    assert set(out["fitted_weights"]) == {"least_squares", "ordinal"}
    assert set(out["cv_kappa"]) == {"nominal", "least_squares", "ordinal", "axon-v1-faithcap", "axon-v1-faithpartial"}
    assert all(len(v["per_fold"]) == 3 for v in out["cv_kappa"].values())
    fab = {r["rubric"]: (r["score"], r["band"]) for r in out["fabricated_10_10_10_0"]}
    assert fab["nominal"] == (80.0, "good") and fab["axon-v1-faithcap"] == (49.0, "poor")
    assert study.weights_table().shape == (4, 3) and "kappa_in_sample" in study.cv_table()
    # the fitted rubrics of the table are the proposals (rounded weights): the ids shown are the files' ids
    ids = {r["rubric"]: r["rubric_id"] for r in out["fabricated_10_10_10_0"]}
    assert set(out["proposals"]) == {m for m, w in out["fitted_weights"].items() if w is not None}
    for method, prop in out["proposals"].items():
        assert ids[method] == prop["rubric_id"] == study.proposals[method].id and prop["extends"] == "axon-v1"
        assert rc.DO_NOT_ADOPT in study.proposals[method].yaml_text
