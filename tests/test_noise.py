"""axon_eval.stats.noise: ICC against published and pingouin answers, known components, D-study, bootstrap."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from axon_eval.rubric import BANDS, CAP_FACTS, DIMENSIONS, Rubric
from axon_eval.scoring import score_arrays
from axon_eval.stats.noise import (
    STUDY_KEYS,
    band_instability,
    decision_study,
    ensemble_curve,
    flip_curve,
    icc_oneway,
    icc_table,
    judge_noise_summary,
    recommend_k,
    samples_for_reliability,
    segment_noise,
    spearman_brown,
    variance_components,
    within_segment_sd,
)

# Pingouin's published example (``pingouin.read_dataset("icc")``, after Shrout & Fleiss 1979 style
# data): 8 wines rated by 4 judges; rows are wines, columns judges A-D.
WINE = np.array([[1, 2, 0, 1], [1, 3, 3, 2], [3, 8, 1, 4], [6, 4, 3, 3],
                 [6, 5, 5, 6], [7, 5, 6, 2], [8, 7, 7, 9], [9, 9, 9, 8]], dtype=float)


def long_table(matrix: np.ndarray, column: str = "score") -> pd.DataFrame:
    n, k = matrix.shape
    return pd.DataFrame({"segment_id": np.repeat([f"s{i:04d}" for i in range(n)], k),
                         "sample_index": np.tile(np.arange(k), n), column: matrix.ravel()})


def samples_table(n_segments: int, n_samples: int, *, noise_sd: float = 1.0, seed: int = 0,
                  costs: bool = True) -> pd.DataFrame:
    """A scored samples table: true integer subscores per segment, integer noisy samples, cap facts."""
    rng = np.random.default_rng(seed)
    true = rng.integers(2, 11, (n_segments, len(DIMENSIONS))).astype(float)
    subs = np.clip(np.rint(true[:, None, :] + rng.normal(0, noise_sd, (n_segments, n_samples, len(DIMENSIONS)))),
                   0, 10)
    subs[rng.random(n_segments) < 0.2, :, 3] = np.nan  # no answer captured: faithfulness null on every sample
    facts = rng.random((n_segments, len(CAP_FACTS))) < 0.05
    flat, fact_rows = subs.reshape(-1, len(DIMENSIONS)), np.repeat(facts, n_samples, axis=0)
    _raw, score, code = score_arrays(flat, fact_rows)
    df = pd.DataFrame(flat, columns=list(DIMENSIONS))
    df.insert(0, "segment_id", np.repeat([f"seg-{i:05d}" for i in range(n_segments)], n_samples))
    df.insert(1, "sample_index", np.tile(np.arange(n_samples), n_segments))
    df["score"] = score
    df["band"] = np.asarray(BANDS, dtype=object)[code]
    for j, fact in enumerate(CAP_FACTS):
        df[fact] = fact_rows[:, j]
    df["judge_id"] = "simulated(sd=1,difficulty=0.5,edge=0.3,corr=0.5,seed=0)[heuristic]"
    df["rubric_id"] = Rubric.default().id
    if costs:
        df["cost_usd"] = 0.0025
        df["input_tokens"] = 1800.0
        df["output_tokens"] = 150.0
        df["cache_read_tokens"] = 1200.0
    return df


# -- ICC ------------------------------------------------------------------------------------------------------
def test_icc_reproduces_pingouins_published_wine_example():
    r = icc_oneway(WINE)
    # pingouin documentation, intraclass_corr(data, 'Wine', 'Judge', 'Scores'): ICC1 and ICC1k rows
    assert r.icc1 == pytest.approx(0.727521, abs=1e-6) and r.icc1k == pytest.approx(0.914384, abs=1e-6)
    assert r.f_stat == pytest.approx(11.680026, abs=1e-6) and (r.df_between, r.df_within) == (7, 24)
    assert r.p_value == pytest.approx(0.000002, abs=1e-6)
    assert (round(r.icc1_ci_low, 2), round(r.icc1_ci_high, 2)) == (0.43, 0.93)
    assert (round(r.icc1k_ci_low, 2), round(r.icc1k_ci_high, 2)) == (0.75, 0.98)


def _pingouin_rows(matrix: np.ndarray) -> dict[str, pd.Series]:
    pg = pytest.importorskip("pingouin")
    n, k = matrix.shape
    data = pd.DataFrame({"target": np.repeat(np.arange(n), k), "rater": np.tile(np.arange(k), n),
                         "rating": matrix.ravel()})
    table = pg.intraclass_corr(data, targets="target", raters="rater", ratings="rating")
    table = table.assign(Type=table["Type"].replace({"ICC(1,1)": "ICC1", "ICC(1,k)": "ICC1k"})).set_index("Type")
    table = table.rename(columns={"CI95%": "CI95"})  # the column's name differs between pingouin versions
    return {"icc1": table.loc["ICC1"], "icc1k": table.loc["ICC1k"]}


def test_typed_wine_data_is_pingouins_dataset():
    pg = pytest.importorskip("pingouin")
    data = pg.read_dataset("icc")  # bundled with pingouin, no network
    assert np.array_equal(data.pivot(index="Wine", columns="Judge", values="Scores").to_numpy(dtype=float), WINE)


@pytest.mark.filterwarnings("ignore:The inplace keyword")  # pingouin's own use of a deprecated pandas keyword
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_icc_matches_pingouin_on_wine_and_random_data(seed):
    rng = np.random.default_rng(seed)
    n, k = int(rng.integers(5, 60)), int(rng.integers(2, 8))
    random_data = rng.normal(0, 1, (n, 1)) * rng.uniform(0, 2) + rng.normal(0, 1, (n, k))
    for matrix in (WINE, random_data):
        ours = icc_oneway(matrix)
        theirs = _pingouin_rows(matrix)
        assert ours.icc1 == pytest.approx(theirs["icc1"]["ICC"], abs=1e-10)
        assert ours.icc1k == pytest.approx(theirs["icc1k"]["ICC"], abs=1e-10)
        assert ours.f_stat == pytest.approx(theirs["icc1"]["F"], rel=1e-10)
        # pingouin rounds its CI95% to 2 decimals
        for kind in ("icc1", "icc1k"):
            low, high = theirs[kind]["CI95"]
            assert abs(getattr(ours, f"{kind}_ci_low") - low) <= 0.005 + 1e-9
            assert abs(getattr(ours, f"{kind}_ci_high") - high) <= 0.005 + 1e-9


def test_icc_recovers_constructed_components():
    rng = np.random.default_rng(42)
    n, k, sd_segment, sd_noise = 3000, 4, 2.0, 1.0
    x = rng.normal(0, sd_segment, (n, 1)) + rng.normal(0, sd_noise, (n, k))
    r = icc_oneway(x)
    true_icc1 = sd_segment ** 2 / (sd_segment ** 2 + sd_noise ** 2)  # 0.8
    assert r.icc1 == pytest.approx(true_icc1, abs=0.015)
    assert r.icc1_ci_low < true_icc1 < r.icc1_ci_high
    assert r.icc1k == pytest.approx(spearman_brown(true_icc1, k), abs=0.01)
    # through the tidy-table path: same numbers
    table = icc_table(long_table(x), columns=("score",))
    assert table.loc[0, "icc1"] == pytest.approx(r.icc1, abs=1e-12) and table.loc[0, "n_segments"] == n


def test_icc_edge_cases_and_errors():
    perfect = icc_oneway(np.array([[1.0, 1.0], [5.0, 5.0], [9.0, 9.0]]))
    assert perfect.icc1 == 1.0 and perfect.icc1_ci_low == 1.0 and "agree exactly" in perfect.note
    flat = icc_oneway(np.full((3, 2), 4.0))
    assert math.isnan(flat.icc1) and "undefined" in flat.note
    with pytest.raises(ValueError, match=r"shape \(1, 3\)"):
        icc_oneway(np.ones((1, 3)))
    with pytest.raises(ValueError, match="1 NaN"):
        icc_oneway(np.array([[1.0, np.nan], [2.0, 3.0]]))
    # a dimension that is null everywhere is reported as not estimable, not dropped
    df = samples_table(20, 3)
    df["answer_faithfulness"] = np.nan
    table = icc_table(df)
    row = table.set_index("column").loc["answer_faithfulness"]
    assert row["n_segments"] == 0 and "not estimable" in row["note"] and math.isnan(row["icc1"])


@settings(max_examples=60, deadline=None)
@given(arrays(np.float64, st.tuples(st.integers(2, 12), st.integers(2, 6)),
              elements=st.integers(0, 10).map(float)),
       st.floats(0.1, 10), st.floats(-50, 50))
def test_icc_laws(matrix, scale, shift):
    r = icc_oneway(matrix)
    if math.isnan(r.icc1):
        return
    assert r.icc1 <= 1 + 1e-12
    assert math.isnan(r.icc1k) == (r.ms_between == 0)  # ICC(1,k) is undefined only when segment means tie
    if r.icc1 > 0:
        assert r.icc1k >= r.icc1 - 1e-12  # averaging k > 1 judgements never lowers a positive reliability
    if r.note == "":
        assert r.icc1_ci_low <= r.icc1 + 1e-9 <= r.icc1_ci_high + 2e-9
        assert r.icc1k_ci_low <= r.icc1k + 1e-9 <= r.icc1k_ci_high + 2e-9
    moved = icc_oneway(matrix * scale + shift)  # ICC is unit- and origin-free
    assert moved.icc1 == pytest.approx(r.icc1, abs=1e-7)


# -- within-segment SD -------------------------------------------------------------------------------------------
def test_within_segment_sd_known_answer_and_unbalanced_pooling():
    df = pd.DataFrame({"segment_id": ["a", "a", "a", "b", "b", "c"], "sample_index": [0, 1, 2, 0, 1, 0],
                       "score": [70.0, 80.0, 90.0, 50.0, 52.0, 10.0]})
    row = within_segment_sd(df, columns=("score",)).iloc[0]
    # a: ss = 200 on 2 df; b: ss = 2 on 1 df; c has one value -> left out. sqrt(202 / 3)
    assert row["sd_pooled"] == pytest.approx(math.sqrt(202 / 3)) and row["n_segments"] == 2
    assert row["mean_samples"] == 2.5


@settings(max_examples=40, deadline=None)
@given(arrays(np.float64, st.tuples(st.integers(2, 10), st.integers(2, 5)), elements=st.integers(0, 10).map(float)),
       st.lists(st.floats(-20, 20), min_size=10, max_size=10))
def test_within_sd_ignores_segment_offsets_and_equals_sqrt_msw(matrix, offsets):
    shifted = matrix + np.asarray(offsets[: len(matrix)])[:, None]
    a = within_segment_sd(long_table(matrix), columns=("score",)).loc[0, "sd_pooled"]
    b = within_segment_sd(long_table(shifted), columns=("score",)).loc[0, "sd_pooled"]
    assert a == pytest.approx(b, abs=1e-9)
    assert a == pytest.approx(math.sqrt(icc_oneway(matrix).ms_within), abs=1e-9)


# -- variance components and the decision study --------------------------------------------------------------------
def test_variance_components_nested_and_crossed_designs():
    rng = np.random.default_rng(7)
    n, k = 4000, 4
    x = rng.normal(0, 2.0, (n, 1)) + rng.normal(0, 1.0, (n, k))
    nested = variance_components(long_table(x))
    assert nested.facet == "sample" and "nested" in nested.design and "confounded" in nested.design
    assert nested.segment_var == pytest.approx(4.0, rel=0.06) and nested.residual_var == pytest.approx(1.0, rel=0.05)
    assert nested.facet_var < 0.01
    assert sum(nested.shares().values()) == pytest.approx(1.0)
    # members crossed with segments: fixed offsets per member are the member component
    offsets = np.array([-1.0, 0.0, 1.0, 2.0])
    members = long_table(x + offsets).rename(columns={"sample_index": "member"})
    crossed = variance_components(members)
    assert crossed.facet == "member" and "crossed" in crossed.design
    assert crossed.facet_var == pytest.approx(np.var(offsets, ddof=1), abs=0.1)
    assert crossed.segment_var == pytest.approx(nested.segment_var, abs=1e-9)
    table = crossed.table()
    assert list(table["component"]) == ["segment", "member", "residual"]
    with pytest.raises(ValueError, match="2 complete segments"):
        variance_components(long_table(np.ones((1, 3))))


def test_decision_study_and_spearman_brown_known_answers():
    assert spearman_brown(0.5, 3) == pytest.approx(0.75)
    assert samples_for_reliability(0.5, 0.9) == 9  # 0.9 * 0.5 / (0.5 * 0.1) = 9 exactly
    assert samples_for_reliability(0.8, 0.9) == 3  # 2.25 -> 3
    assert samples_for_reliability(0.95, 0.9) == 1 and samples_for_reliability(0.0, 0.9) is None
    assert samples_for_reliability(float("nan"), 0.9) is None
    with pytest.raises(ValueError, match="got 1.5"):
        samples_for_reliability(0.5, 1.5)
    rng = np.random.default_rng(3)
    components = variance_components(long_table(rng.normal(0, 1.5, (500, 1)) + rng.normal(0, 1, (500, 3))))
    study = decision_study(components, [1, 2, 5])
    g1 = study.loc[0, "phi_absolute"]
    # nested design: the D-study is Spearman-Brown of the one-judgement reliability
    assert study["phi_absolute"].tolist() == pytest.approx([spearman_brown(g1, k) for k in (1, 2, 5)])
    assert (study["g_relative"] == study["phi_absolute"]).all()


@settings(max_examples=80, deadline=None)
@given(st.floats(0.01, 0.99), st.floats(0.05, 0.99))
def test_samples_for_reliability_is_the_smallest_sufficient_k(rho, target):
    k = samples_for_reliability(rho, target)
    assert spearman_brown(rho, k) >= target - 1e-9
    if k > 1:
        assert spearman_brown(rho, k - 1) < target


# -- bands -------------------------------------------------------------------------------------------------------
def test_band_instability_counts_segments_not_samples():
    df = pd.DataFrame({"segment_id": ["a", "a", "b", "b", "c", "c", "c", "d"],
                       "sample_index": [0, 1, 0, 1, 0, 1, 2, 0],
                       "score": [85.0, 90.0, 81.0, 79.9, 20.0, 30.0, np.nan, 55.0],
                       "band": ["good", "good", "good", "partial", "poor", "poor", None, "partial"]})
    result = band_instability(df)
    # d has one sample (left out); c's unjudged sample is ignored; only b flips
    assert (result.n_segments, result.n_flipped, result.flip_rate) == (3, 1, pytest.approx(1 / 3))
    assert result.pairwise_flip_rate == pytest.approx((0 + 1 + 0) / 3)
    per_segment = segment_noise(df).set_index("segment_id")
    assert per_segment.loc["b", "bands"] == "good/partial" and bool(per_segment.loc["b", "flipped"])
    assert per_segment.loc["b", "nearest_edge"] == 80 and per_segment.loc["b", "distance_to_edge"] == pytest.approx(0.45)
    assert per_segment.loc["c", "n_judged"] == 2 and per_segment.loc["c", "sd_score"] == pytest.approx(math.sqrt(50))
    bad = df.assign(band=["good"] * 8)
    with pytest.raises(ValueError, match=r"segment 'b' score 79.9 band 'good'"):
        band_instability(bad)


def test_flip_curve_falls_with_distance_to_an_edge():
    df = samples_table(1500, 4, noise_sd=1.2, seed=5)
    curve = flip_curve(df)
    assert curve.note == "" and curve.slope < 0 and curve.slope_ci_high < 0
    grid = curve.grid
    assert grid["flip_probability"].is_monotonic_decreasing
    assert ((grid["ci_low"] <= grid["flip_probability"]) & (grid["flip_probability"] <= grid["ci_high"])).all()
    assert grid["flip_probability"].iloc[0] > 0.5 > grid["flip_probability"].iloc[-1]
    assert curve.n_segments == 1500 and len(curve.points) == 1500
    steady = df.assign(score=df.groupby("segment_id")["score"].transform("first"))
    steady = steady.drop(columns=[*DIMENSIONS, "band"])
    assert "no segment flipped" in flip_curve(steady).note


# -- ensembles ---------------------------------------------------------------------------------------------------
def test_ensemble_bootstrap_is_seeded_and_reproducible():
    df = samples_table(120, 5, seed=1)
    a = ensemble_curve(df, seed=11)
    b = ensemble_curve(df, seed=11)
    c = ensemble_curve(df, seed=12)
    pd.testing.assert_frame_equal(a.table, b.table)
    assert not a.table["flip_rate"].equals(c.table["flip_rate"])
    assert (a.seed, a.draw, a.basis, a.n_boot) == (11, "with_replacement", "subscores", 200)
    assert list(a.table.columns) == ["reducer", "k", "flip_rate", "sd", "calls", "cost_usd", "input_tokens",
                                     "output_tokens", "cache_read_tokens", "cost_usd_per_1000_segments"]
    assert a.table["reducer"].tolist() == ["mean"] * 5 + ["median"] * 5


def test_ensemble_sd_follows_the_bootstrap_law_and_flips_fall_with_k():
    rng = np.random.default_rng(2)
    n, k = 400, 6
    x = rng.uniform(30, 95, (n, 1)) + rng.normal(0, 6, (n, k))
    df = long_table(np.round(x, 1))  # score only: the ensemble reduces scores
    curve = ensemble_curve(df, seed=3, reducers=("mean",), n_boot=400)
    assert curve.basis == "score"
    within_pop = ((x - x.mean(axis=1, keepdims=True)) ** 2).mean()  # resampling variance of one draw
    for row in curve.table.itertuples():
        assert row.sd == pytest.approx(math.sqrt(within_pop / row.k), rel=0.05)
    flips = curve.table["flip_rate"].to_numpy()
    assert flips[0] > flips[-1] and flips[0] > 0.05


def test_ensemble_cost_is_k_times_the_mean_and_unknown_is_never_zero():
    df = samples_table(30, 3, seed=4)
    table = ensemble_curve(df, seed=0).table.set_index(["reducer", "k"])
    assert table.loc[("mean", 2), "cost_usd"] == pytest.approx(0.005)
    assert table.loc[("mean", 3), "input_tokens"] == pytest.approx(5400)
    assert table.loc[("mean", 3), "cost_usd_per_1000_segments"] == pytest.approx(7.5)
    assert table.loc[("median", 1), "calls"] == 1
    partly = df.copy()
    partly.loc[4, "cost_usd"] = np.nan
    unknown = ensemble_curve(partly, seed=0)
    assert unknown.table["cost_usd"].isna().all() and "cost_usd: unknown for 1 judgement(s)" in unknown.cost_note
    assert unknown.table["input_tokens"].notna().all()
    absent = ensemble_curve(samples_table(30, 3, seed=4, costs=False), seed=0)
    assert absent.table["cost_usd"].isna().all() and "not in the table" in absent.cost_note


def test_cross_judge_members_table_uses_the_same_code():
    df = samples_table(200, 3, seed=8).rename(columns={"sample_index": "member"})
    df["judge_id"] = df["member"].map({0: "anthropic:claude", 1: "openai:qwen@local", 2: "heuristic"})
    summary = judge_noise_summary(df, flip_target=0.02, seed=1)
    assert summary.rater == "member" and summary.ensemble.draw == "without_replacement"
    assert summary.variance.facet == "member"
    assert summary.judge_id == "members[anthropic:claude, heuristic, openai:qwen@local]"
    full = summary.ensemble.table.set_index(["reducer", "k"])
    # all 3 distinct members every time: no resampling variation is left
    assert full.loc[("mean", 3), "flip_rate"] == 0 and full.loc[("mean", 3), "sd"] == pytest.approx(0, abs=1e-9)
    with pytest.raises(ValueError, match="max_k must be"):
        ensemble_curve(df, seed=0, max_k=4)


def test_recommend_k_picks_the_smallest_k_under_target():
    table = pd.DataFrame({"reducer": ["mean", "mean", "mean", "median", "median", "median"],
                          "k": [1, 2, 3, 1, 2, 3], "flip_rate": [0.2, 0.09, 0.04, 0.2, 0.05, 0.03],
                          "sd": [3, 2, 1.5, 3, 2.2, 1.6], "cost_usd_per_1000_segments": [2, 4, 6, 2, 4, 6]})
    pick = recommend_k(table, 0.05)
    assert (pick.k, pick.reducer, pick.met, pick.cost_usd_per_1000_segments) == (2, "median", True, 4)
    none = recommend_k(table, 0.01)
    assert none.k is None and not none.met and "lowest flip rate is 3.0% at k=3 (median)" in none.note


# -- the study summary -------------------------------------------------------------------------------------------
def test_judge_noise_summary_json_has_exactly_the_study_keys():
    df = samples_table(150, 5, seed=9)
    df = df[~((df["segment_id"] == "seg-00003") & (df["sample_index"] == 4))]  # one unjudged sample
    summary = judge_noise_summary(df, Rubric.default(), 0.05, 17)
    payload = summary.to_json()
    assert tuple(payload) == STUDY_KEYS
    text = json.dumps(payload, allow_nan=False)  # NaN never reaches study.json
    back = json.loads(text)
    assert back["study"] == "03_judge_noise" and back["simulated"] is True
    assert back["n_segments"] == 150 and back["n_samples"] == 5  # segments, not 749 samples
    assert set(back["sd"]) == {*DIMENSIONS, "score"}
    assert set(back["icc1"]["sql_quality"]) == {"value", "ci_low", "ci_high"}
    assert back["band_flip_rate"] == pytest.approx(summary.band.flip_rate)
    assert {"k", "flip_rate", "sd", "cost_usd"} <= set(back["ensemble"][0])
    assert back["recommended_k"]["flip_target"] == 0.05
    assert summary.seed == 17 and summary.ensemble.n_segments == 149 and any("1 segment(s)" in n for n in summary.notes)
    assert summary.icc.set_index("column").loc["answer_faithfulness", "n_segments"] < 150
    real = judge_noise_summary(df.assign(judge_id="anthropic:claude-haiku-4-5"), seed=1)
    assert real.simulated is False and real.to_json()["judge_id"] == "anthropic:claude-haiku-4-5"


def test_summary_refuses_another_rubric_and_duplicate_samples():
    df = samples_table(20, 3)
    other = Rubric.default().with_weights({"intent_understood": 0.4, "sql_quality": 0.2, "result_relevance": 0.2,
                                           "answer_faithfulness": 0.2})
    with pytest.raises(ValueError, match="scored with rubric id"):
        judge_noise_summary(df, other, 0.05, 0)
    with pytest.raises(ValueError, match=r"\('seg-00000', sample_index=0\) more than once"):
        judge_noise_summary(pd.concat([df, df.head(1)]), seed=0)
    with pytest.raises(ValueError, match="does not reproduce the table's score"):
        ensemble_curve(df.drop(columns="rubric_id").assign(band=None).drop(columns="band"), other, seed=0)


def test_a_deterministic_judge_has_exactly_zero_noise():
    # 61.3 and 72.9 are not exact in binary: the statistics must still see exactly no within-segment spread
    df = long_table(np.array([[61.3, 61.3, 61.3], [72.9, 72.9, 72.9], [33.3, 33.3, 33.3]]))
    assert within_segment_sd(df, columns=("score",)).loc[0, "sd_pooled"] == 0.0
    icc = icc_table(df, columns=("score",)).iloc[0]
    assert icc["icc1"] == 1.0 and "agree exactly" in icc["note"]
    components = variance_components(df)
    assert components.facet_var == 0.0 and components.residual_var == 0.0


@settings(max_examples=40, deadline=None)
@given(arrays(np.float64, st.tuples(st.integers(1, 4), st.integers(1, 3), st.integers(1, 9)),
              elements=st.integers(0, 10).map(float)))
def test_ensemble_reducers_are_numpys_mean_and_median(drawn):
    from axon_eval.stats.noise import _reduce_draws

    reduced = _reduce_draws(drawn, ("mean", "median"), nan_aware=False)
    np.testing.assert_allclose(reduced["mean"], drawn.mean(axis=-1))
    np.testing.assert_array_equal(reduced["median"], np.median(drawn, axis=-1))
