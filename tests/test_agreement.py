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
