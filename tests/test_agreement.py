"""Tests of the label loader and the agreement statistics."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from statsmodels.stats.inter_rater import cohens_kappa as sm_kappa

from axon_eval.labels import LABEL_COLUMNS, LABELS_NOTE, LabelError, load_labels
from axon_eval.stats import (
    band_agreement,
    claim_catch_rate,
    cohens_kappa,
    confusion_table,
    label_agreement,
    share_in_range,
)

BANDS = ("good", "partial", "poor")


# ---------------------------------------------------------------------------------------------
# kappa
# ---------------------------------------------------------------------------------------------
def test_kappa_published_worked_example():
    # Wikipedia "Cohen's kappa": yes/yes 20, yes/no 5, no/yes 10, no/no 15 -> 0.4
    a = ["yes"] * 25 + ["no"] * 25
    b = ["yes"] * 20 + ["no"] * 5 + ["yes"] * 10 + ["no"] * 15
    assert cohens_kappa(a, b, labels=("yes", "no")) == pytest.approx(0.4)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(BANDS), st.sampled_from(BANDS)), min_size=2, max_size=80))
def test_kappa_matches_statsmodels(pairs):
    a, b = [p[0] for p in pairs], [p[1] for p in pairs]
    table = confusion_table(a, b).to_numpy()
    ours = cohens_kappa(a, b)
    expected_disagreement = 1 - (table.sum(1) * table.sum(0)).sum() / table.sum() ** 2
    if expected_disagreement == 0:
        assert np.isnan(ours)
        return
    assert ours == pytest.approx(sm_kappa(table, return_results=False), abs=1e-12)
    for wt in ("linear", "quadratic"):
        assert cohens_kappa(a, b, weights=wt) == pytest.approx(sm_kappa(table, wt=wt, return_results=False), abs=1e-12)


def test_kappa_edges():
    assert cohens_kappa(["good", "poor"], ["good", "poor"]) == 1.0
    assert np.isnan(cohens_kappa(["good"] * 3, ["good"] * 3))
    with pytest.raises(ValueError, match="differ in length"):
        cohens_kappa(["good"], [])
    with pytest.raises(ValueError, match="'bad' is not one of"):
        cohens_kappa(["bad"], ["good"])


# ---------------------------------------------------------------------------------------------
# labels
# ---------------------------------------------------------------------------------------------
def label_row(sid, defect="clean", verdict="good", faith=(9, 10), claims=""):
    row = {"segment_id": sid, "turn_id": sid.split("#")[0], "scenario": defect, "defect": defect,
           "intent_understood_min": 8, "intent_understood_max": 10, "sql_quality_min": 8, "sql_quality_max": 10,
           "result_relevance_min": 8, "result_relevance_max": 10,
           "answer_faithfulness_min": "" if faith is None else faith[0],
           "answer_faithfulness_max": "" if faith is None else faith[1],
           "verdict": verdict, "unsupported_claims": claims, "note": ""}
    return row


def write_labels(tmp_path, rows):
    path = tmp_path / "labels.csv"
    pd.DataFrame(rows, columns=list(LABEL_COLUMNS)).to_csv(path, index=False)
    return path


def test_load_labels_valid(tmp_path):
    path = write_labels(tmp_path, [label_row("a"), label_row("b", "fabricated_figure", "partial", (0, 3), "420;Lowhaven"),
                                   label_row("c", faith=None)])
    df = load_labels(path)
    assert df.attrs["note"] == LABELS_NOTE and "CONSTRUCTED" in LABELS_NOTE
    assert df.loc[1, "claims"] == ["420", "Lowhaven"] and pd.isna(df.loc[2, "answer_faithfulness_min"])
    assert str(df["sql_quality_min"].dtype) == "Int64"


@pytest.mark.parametrize("change,message", [
    ({"verdict": "great"}, r"labels.csv:3: verdict: must be one of"),
    ({"sql_quality_min": 11}, r"labels.csv:3: sql_quality_min: must be an integer 0-10"),
    ({"intent_understood_min": 9, "intent_understood_max": 4}, r":3: intent_understood_min: min 9 > max 4"),
    ({"result_relevance_min": ""}, r":3: result_relevance_min: range is empty|give both"),
    ({"answer_faithfulness_max": ""}, r":3: answer_faithfulness_max: give both bounds"),
    ({"segment_id": "a"}, r":3: segment_id: duplicate segment id 'a'"),
    ({"sql_quality_max": "x"}, r":3: sql_quality_max: not a number: 'x'"),
])
def test_load_labels_errors_name_line_and_value(tmp_path, change, message):
    bad = label_row("b")
    bad.update(change)
    path = write_labels(tmp_path, [label_row("a"), bad])
    with pytest.raises(LabelError, match=message):
        load_labels(path)


def test_load_labels_missing_column(tmp_path):
    path = tmp_path / "labels.csv"
    path.write_text("segment_id,verdict\na,good\n")
    with pytest.raises(LabelError, match="missing column"):
        load_labels(path)


# ---------------------------------------------------------------------------------------------
# agreement
# ---------------------------------------------------------------------------------------------
@pytest.fixture
def labels(tmp_path):
    return load_labels(write_labels(tmp_path, [
        label_row("a"), label_row("b", "fabricated_figure", "partial", (0, 3), "420;Lowhaven"),
        label_row("c", faith=None), label_row("d", "intent_miss", "poor")]))


def results(**over):
    base = pd.DataFrame({
        "segment_id": ["a", "b", "c", "d"], "judge_id": ["h@1"] * 4,
        "intent_understood": [10, 9, 9, 3], "sql_quality": [10, 9, 9, 9], "result_relevance": [10, 9, 9, 9],
        "answer_faithfulness": [10, 2, np.nan, 9], "judge_verdict": ["good", "partial", "good", "partial"],
        "band": ["good", "good", "good", "partial"],
        "explanation": ["fine", 'unsupported figure "420" in "... 420 ..."', "no answer", "wrong year"]})
    for k, v in over.items():
        base[k] = v
    return base


def test_share_in_range_handles_null_faithfulness(labels):
    inr = share_in_range(results(), labels)
    assert inr.loc["c", "answer_faithfulness"]  # null label, null subscore
    assert not inr.loc["d", "intent_understood"]  # 3 outside 8-10
    r = results(answer_faithfulness=[10, 2, 5, 9])
    assert not share_in_range(r, labels).loc["c", "answer_faithfulness"]  # null label, a number


def test_claim_catch_rate_and_explanations_mapping(labels):
    rate, table = claim_catch_rate(results(), labels)
    assert rate == 0.5 and table.set_index("claim").loc["420", "caught"]
    rate2, _ = claim_catch_rate(results(), labels, explanations={"b": "420 and Lowhaven are unsupported"})
    assert rate2 == 1.0


def test_label_agreement_summary(labels):
    a = label_agreement(results(), labels)
    assert a.n == 4 and a.accuracy == 0.75 and a.judge_id == "h@1"
    assert a.confusion.loc["partial", "poor"] == 1 and a.confusion.to_numpy().sum() == 4
    assert a.kappa == pytest.approx(cohens_kappa(["good", "partial", "good", "partial"],
                                                 ["good", "partial", "good", "poor"]))
    assert a.in_range == pytest.approx(15 / 16) and a.in_range_by_dimension["intent_understood"] == 0.75
    assert a.per_defect.loc["fabricated_figure", "claims"] == 2
    assert list(a.disagreements["segment_id"]) == ["d"]
    assert "CONSTRUCTED" in a.note and a.band_agreement["n"] == 4
    assert band_agreement(results(), labels)["accuracy"] == 0.5  # bands good,good,good,partial


def test_mixed_judge_ids_are_refused(labels):
    mixed = results(judge_id=["h@1", "h@1", "llm", "h@1"])
    with pytest.raises(ValueError, match="mixes judge ids"):
        label_agreement(mixed, labels)
    assert label_agreement(mixed, labels, allow_mixed=True).n == 4


def test_missing_columns_are_named(labels):
    with pytest.raises(ValueError, match="judge_verdict"):
        label_agreement(results().drop(columns=["judge_verdict"]), labels)


# ---------------------------------------------------------------------------------------------
# judge-to-human calibration: known answers from scikit-learn, statsmodels, scipy and
# the krippendorff package's published examples
# ---------------------------------------------------------------------------------------------
from scipy.stats import spearmanr  # noqa: E402
from sklearn.metrics import cohen_kappa_score  # noqa: E402

from axon_eval.stats import (  # noqa: E402
    GATE_THRESHOLD,
    Estimate,
    calibration_agreement,
    calibration_gate,
    consensus,
    kappa_estimate,
    kappa_from_codes,
    kappa_half_width,
    kappa_sample_size,
    rater_alpha,
    rho_estimate,
    rho_half_width,
    rho_sample_size,
    sample_size_plan,
    stratum_agreement,
)
from axon_eval.stats.agreement import band_codes  # noqa: E402


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(BANDS), st.sampled_from(BANDS)), min_size=2, max_size=80))
def test_kappa_from_codes_matches_scikit_learn(pairs):
    a, b = [p[0] for p in pairs], [p[1] for p in pairs]
    ca, cb = band_codes(a), band_codes(b)
    if len(set(a) | set(b)) < 2:
        assert np.isnan(kappa_from_codes(ca, cb))
        return
    for weights in (None, "linear", "quadratic"):
        ours = kappa_from_codes(ca, cb, weights=weights)
        expected = cohen_kappa_score(ca, cb, labels=[0, 1, 2], weights=weights)
        if np.isnan(expected):
            assert np.isnan(ours)
        else:
            assert ours == pytest.approx(expected, abs=1e-12)
        assert ours == pytest.approx(cohens_kappa(a, b, weights=weights), abs=1e-12, nan_ok=True)


def test_design_weighted_kappa_equals_kappa_of_repeated_rows():
    a, b = band_codes(["good", "poor", "partial", "good"]), band_codes(["good", "partial", "partial", "poor"])
    w = np.array([1, 3, 2, 1])
    expanded = (np.repeat(a, w), np.repeat(b, w))
    assert kappa_from_codes(a, b, sample_weight=w) == pytest.approx(cohen_kappa_score(*expanded))


def test_kappa_estimate_asymptotic_se_is_statsmodels_and_bootstrap_is_seeded():
    a = ["good"] * 25 + ["poor"] * 25  # Wikipedia's worked example on two of the bands: kappa 0.4
    b = ["good"] * 20 + ["poor"] * 5 + ["good"] * 10 + ["poor"] * 15
    est = kappa_estimate(a, b, n_boot=400, seed=3)
    assert est.value == pytest.approx(0.4)
    table = np.array([[20, 0, 5], [0, 0, 0], [10, 0, 15]])
    assert est.asymptotic_se == pytest.approx(sm_kappa(table, return_results=True)["std_kappa"])
    assert est.asymptotic_ci == pytest.approx((0.4 - 1.959964 * est.asymptotic_se, 0.4 + 1.959964 * est.asymptotic_se),
                                              abs=1e-5)
    assert est.ci[0] < 0.4 < est.ci[1] and est.method in ("BCa", "percentile") and est.n == 50
    again = kappa_estimate(a, b, n_boot=400, seed=3)
    assert again.ci == est.ci
    assert kappa_estimate(a, b, weights="quadratic", n_boot=50, seed=0).name == "kappa_quadratic"


def test_rho_estimate_matches_scipy_and_the_ci_covers_it():
    rng = np.random.default_rng(1)
    x = rng.normal(size=60)
    y = x + rng.normal(scale=0.7, size=60)
    est = rho_estimate(x, y, n_boot=500, seed=0)
    assert est.value == pytest.approx(spearmanr(x, y).statistic)
    assert est.ci[0] < est.value < est.ci[1] and est.n == 60
    assert rho_estimate(x, y, n_boot=500, seed=0).ci == est.ci


def test_krippendorff_published_examples():
    # Krippendorff (2011) "Computing Krippendorff's alpha-reliability": 4 observers, 12 units
    n = None
    data = [[1, 2, 3, 3, 2, 1, 4, 1, 2, n, n, n], [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, n, 3],
            [n, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, n], [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, n]]
    tidy = pd.DataFrame([{"segment_id": f"u{j}", "rater": f"r{i}", "intent_understood": v}
                         for i, row in enumerate(data) for j, v in enumerate(row) if v is not None])
    assert rater_alpha(tidy, "intent_understood", "ordinal")["alpha"] == pytest.approx(0.8154, abs=1e-4)
    assert rater_alpha(tidy, "intent_understood", "nominal")["alpha"] == pytest.approx(0.7434, abs=1e-4)
    assert rater_alpha(tidy, "intent_understood", "interval")["alpha"] == pytest.approx(0.8491, abs=1e-4)
    # the package README's example (3 coders, 15 units): nominal 0.691, interval 0.811
    rows = ["*    *    *    *    *    3    4    1    2    1    1    3    3    *    3",
            "1    *    2    1    3    3    4    3    *    *    *    *    *    *    *",
            "*    *    2    1    3    4    4    *    2    1    1    3    3    *    4"]
    tidy = pd.DataFrame([{"segment_id": f"u{j}", "rater": f"c{i}", "sql_quality": int(v)}
                         for i, r in enumerate(rows) for j, v in enumerate(r.split()) if v != "*"])
    assert rater_alpha(tidy, "sql_quality", "nominal")["alpha"] == pytest.approx(0.691, abs=1e-3)
    assert rater_alpha(tidy, "sql_quality", "interval")["alpha"] == pytest.approx(0.811, abs=1e-3)
    single = tidy[tidy["rater"] == "c0"]
    assert rater_alpha(single, "sql_quality")["alpha"] is None


def test_gate_uses_the_lower_bound_and_says_n():
    def est(value, lo, hi, n=60):
        return Estimate("kappa", value, (lo, hi), n, "BCa", 0.95, 2000, 0)

    passed = calibration_gate(est(0.85, 0.72, 0.93))
    assert passed.passed and "n = 60" in passed.message and GATE_THRESHOLD == 0.7
    close = calibration_gate(est(0.78, 0.66, 0.88, n=25))
    assert not close.passed and "more labels needed" in close.message and "n = 25" in close.message
    assert calibration_gate(est(0.7, 0.7, 0.8)).passed  # "at or above"
    assert not calibration_gate(est(float("nan"), float("nan"), float("nan"))).passed


def test_sample_size_formulas():
    # kappa: p_o = 0.8 + 0.2 * 0.5 = 0.9; n = 1.96^2 * 0.09 / (0.1^2 * 0.25) = 138.3 -> 139
    assert kappa_sample_size(0.8, 0.1, p_e=0.5) == 139
    assert kappa_half_width(0.8, 139, 0.5) <= 0.1 < kappa_half_width(0.8, 138, 0.5)
    # rho = 0: SE = 1/sqrt(n-3), half-width tanh(1.96 SE) <= 0.1 <=> n - 3 >= (1.96 / atanh 0.1)^2 = 381.6
    assert rho_sample_size(0.0, 0.1) == 385
    for rho, h in ((0.8, 0.05), (0.7, 0.1), (0.9, 0.15)):
        n = rho_sample_size(rho, h)
        assert rho_half_width(rho, n) <= h < rho_half_width(rho, n - 1)
    plan = sample_size_plan(expected=(0.7, 0.8), half_widths=(0.1,), p_e=0.5)
    assert plan.loc[0.8, "kappa_n_hw0.1"] == 139 and plan.loc[0.8, "kappa_n_to_pass"] == 139
    assert plan.loc[0.7, "kappa_n_to_pass"] is None or pd.isna(plan.loc[0.7, "kappa_n_to_pass"])


def _calib_results(scores, bands, **cols):
    n = len(scores)
    base = {"segment_id": [f"s{i}" for i in range(n)], "score": scores, "band": bands,
            "judge_verdict": bands, "judge_id": ["j"] * n, "status": ["judged"] * n,
            "all_sql_failed": [False] * n, "ended_on_failure": [False] * n, "no_tools": [False] * n,
            "surface": ["web", "slack"] * (n // 2) + ["web"] * (n % 2), "client": ["c"] * n}
    return pd.DataFrame({**base, **cols})


def test_calibration_agreement_end_to_end_on_perfect_labels():
    subs = [(10, 10, 10, 10), (9, 9, 8, 8), (6, 6, 6, 6), (5, 6, 7, 5), (2, 2, 2, 2), (0, 1, 0, 3)] * 4
    scores = [10 * (0.3 * a + 0.25 * b + 0.25 * c + 0.2 * d) for a, b, c, d in subs]
    bands = ["good" if s >= 80 else "partial" if s >= 50 else "poor" for s in scores]
    results = _calib_results([round(s, 1) for s in scores], bands)
    human = pd.DataFrame([{"segment_id": f"s{i}", "rater": r, **dict(zip(DIMS, sub)), "verdict": bands[i],
                           "comment": ""} for i, sub in enumerate(subs) for r in ("ann", "bob")])
    cal = calibration_agreement(results, human, n_boot=200, seed=0)
    assert cal.n == 24 and cal.kappa.value == 1.0 and cal.rho.value == pytest.approx(1.0)
    assert cal.gate.passed and cal.gate.n == 24
    assert cal.alpha["verdict"]["alpha"] == 1.0 and cal.n_raters == 2
    out = cal.to_json()
    for key in ("judge_id", "n", "kappa", "kappa_ci", "rho", "rho_ci", "gate_passed"):
        assert key in out
    assert out["judge_id"] == "j" and out["gate_passed"] is True and out["labels_constructed"] is False
    assert int(cal.confusion.to_numpy().trace()) == 24


def test_consensus_breaks_ties_toward_the_worse_band():
    scored = pd.DataFrame({"segment_id": ["a", "a", "b", "b", "b"], "rater": ["x", "y", "x", "y", "z"],
                           "verdict": ["good", "partial", "good", "poor", "poor"],
                           "human_score": [80.0, 70.0, 85.0, 20.0, 30.0],
                           "human_score_band": ["good", "partial", "good", "poor", "poor"]})
    c = consensus(scored).set_index("segment_id")
    assert c.loc["a", "human_verdict"] == "partial" and c.loc["b", "human_verdict"] == "poor"
    assert c.loc["a", "human_score"] == 75.0 and c.loc["b", "n_raters"] == 3


def test_stratum_agreement_weights_by_design():
    pairs = pd.DataFrame({"stratum": ["A", "A", "B"], "weight": [1.0, 1.0, 6.0],
                          "judge_band": ["good", "poor", "good"], "human_verdict": ["good", "good", "good"],
                          "judge_score": [90.0, 30.0, 85.0], "human_score": [85.0, 80.0, 85.0]})
    pairs["agree"] = pairs["judge_band"] == pairs["human_verdict"]
    pairs["delta"] = pairs["judge_score"] - pairs["human_score"]
    table = stratum_agreement(pairs)
    assert table.loc["A", "agreement"] == 0.5 and table.loc["B", "agreement"] == 1.0
    assert table.loc["all", "agreement"] == pytest.approx((1 + 0 + 6) / 8)  # not the sample's 2/3
    assert table.loc["all", "population"] == 8.0
    assert table.loc["all", "mean_delta"] == pytest.approx((5 - 50 + 0) / 8)


DIMS = ("intent_understood", "sql_quality", "result_relevance", "answer_faithfulness")
