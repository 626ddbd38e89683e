"""A segment a rubric cannot score is reported unscorable with the scorer's reason, never banded poor,
on the heuristic judge, human-label scoring and band kappa paths (the ensemble's are in
test_wrappers.py). The rubric puts all its weight on faithfulness, so a null faithfulness is unscorable
and an answered, uncapped segment scores exactly 10 * faithfulness."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from axon_eval.evidence import load_turns
from axon_eval.judges.heuristic import HeuristicJudge
from axon_eval.rubric import CAP_FACTS, Rubric
from axon_eval.scoring import UNSCORABLE_PREFIX, UnscorableError, score_turn
from axon_eval.view import build_views

FAITH_ONLY = Rubric.default().with_weights(
    {"intent_understood": 0, "sql_quality": 0, "result_relevance": 0, "answer_faithfulness": 1})


@pytest.fixture(scope="module")
def sample_views():
    turns, _invalid = load_turns("data/turns/sample_turns.jsonl")
    return build_views(turns, Rubric.default())


def _uncapped(view) -> bool:
    return not any(getattr(view.facts, f) for f in CAP_FACTS)


def test_heuristic_judge_reports_a_null_faithfulness_unscorable_under_a_faithfulness_only_rubric(sample_views):
    nominal = {v.segment_id: HeuristicJudge().judge(v) for v in sample_views}
    faith_only = HeuristicJudge(FAITH_ONLY)
    null = [v for v in sample_views if nominal[v.segment_id].verdict.answer_faithfulness is None]
    assert null
    for view in null:
        rec = faith_only.judge(view)  # an IndexError (BANDS[3]) turned into an error record before
        assert rec.judged and rec.error is None
        details = rec.extra["heuristic"]
        with pytest.raises(UnscorableError) as expected:
            score_turn(rec.verdict.subscores(), view.facts, FAITH_ONLY)
        assert details["band"] is None and details["score"] is None
        assert details["unscorable_reason"] == expected.value.reason
        assert details["unscorable_reason"].startswith(UNSCORABLE_PREFIX)
        assert "nan" not in rec.verdict.explanation and "(poor)" not in rec.verdict.explanation
        assert "Not scored" in rec.verdict.explanation
        # the judgement itself is the nominal one: the rubric only changes the stated score
        assert rec.verdict.subscores() == nominal[view.segment_id].verdict.subscores()
    answered = [v for v in sample_views if v not in null and _uncapped(v)]
    for view in answered[:10]:
        details = faith_only.judge(view).extra["heuristic"]
        faith = nominal[view.segment_id].verdict.answer_faithfulness
        assert details["unscorable_reason"] is None
        assert details["score"] == pytest.approx(10.0 * faith)
        assert details["band"] == ("good" if 10 * faith >= 80 else "partial" if 10 * faith >= 50 else "poor")


def _results_and_labels():
    """Three judged, uncapped segments; labels: ``a`` both raters null faithfulness, ``b`` one rater null
    and one 6, ``c`` both 9."""
    results = pd.DataFrame({"segment_id": ["a", "b", "c"], "score": [70.0, 60.0, 90.0],
                            "band": ["partial", "partial", "good"], "judge_verdict": ["partial", "partial", "good"],
                            "judge_id": "j", "status": "judged", "surface": "web", "client": "x",
                            **{f: False for f in CAP_FACTS}})
    rows = []
    for sid, faiths in (("a", (None, None)), ("b", (None, 6)), ("c", (9, 9))):
        for rater, faith in zip(("r1", "r2"), faiths, strict=True):
            rows.append({"segment_id": sid, "rater": rater, "intent_understood": 8, "sql_quality": 8,
                         "result_relevance": 8, "answer_faithfulness": faith,
                         "verdict": "good" if faith is not None and faith >= 8 else "partial", "comment": ""})
    return results, pd.DataFrame(rows)


def test_human_labels_the_rubric_cannot_score_have_no_band_and_the_reason():
    from axon_eval.stats.agreement import consensus, score_human_labels

    results, labels = _results_and_labels()
    scored = score_human_labels(labels, results, FAITH_ONLY)
    null = scored["answer_faithfulness"].isna()
    assert scored.loc[null, "human_score"].isna().all()
    assert scored.loc[null, "human_score_band"].isna().all()  # None, not the string "nan", never poor
    assert scored.loc[null, "human_unscorable_reason"].str.startswith(UNSCORABLE_PREFIX).all()
    assert scored.loc[~null, "human_score"].tolist() == [60.0, 90.0, 90.0]  # 10 * faithfulness
    assert scored.loc[~null, "human_unscorable_reason"].isna().all()
    cons = consensus(scored).set_index("segment_id")  # ValueError "band 'nan'" before
    assert np.isnan(cons.loc["a", "human_score"]) and pd.isna(cons.loc["a", "human_score_band"])
    assert cons.loc["b", "human_score"] == 60.0 and cons.loc["b", "human_score_band"] == "partial"
    assert cons.loc["c", "human_score"] == 90.0 and cons.loc["c", "human_score_band"] == "good"


def test_calibration_pairs_list_unscorable_labels_instead_of_pairing_them():
    from axon_eval.stats.agreement import calibration_agreement, calibration_pairs

    results, labels = _results_and_labels()
    pairs = calibration_pairs(results, labels, rubric=FAITH_ONLY)
    assert sorted(pairs["segment_id"]) == ["b", "c"]
    assert list(pairs.attrs["unscorable_labels"]) == ["a"]
    assert pairs.attrs["unscorable_labels"]["a"].startswith(UNSCORABLE_PREFIX)
    assert pairs.set_index("segment_id").loc["b", "delta"] == pytest.approx(60.0 - 60.0)
    cal = calibration_agreement(results, labels, rubric=FAITH_ONLY, n_boot=50)
    assert cal.n == 2 and cal.unmatched == ["a"]
    # under the nominal rubric every label is scored and paired
    assert len(calibration_pairs(results, labels)) == 3


def test_band_kappa_refuses_a_rubric_that_leaves_a_segment_unscorable():
    from axon_eval.stats.recalibration import LabelledSegments, band_kappa

    data = LabelledSegments.from_arrays([[8, 8, 8, np.nan], [8, 8, 8, 9], [3, 3, 3, 2]],
                                        ["partial", "good", "poor"], segment_ids=["a", "b", "c"])
    with pytest.raises(ValueError, match=r"1 segment\(s\) unscorable.*'a'.*unscorable: rubric"):
        band_kappa(data, FAITH_ONLY)  # IndexError (BANDS[3]) before
    # nominal weights (0.3, 0.25, 0.25, 0.2) by hand: 10 * 6.4 / 0.8 = 80 good, 10 * 8.2 = 82 good, 10 * 2.8 = 28 poor
    from sklearn.metrics import cohen_kappa_score
    expected = cohen_kappa_score(["good", "good", "poor"], ["partial", "good", "poor"])
    assert band_kappa(data, Rubric.default()) == pytest.approx(expected)
