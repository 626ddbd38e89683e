"""ROC AUC of a score for correct vs incorrect segments (stats/separation.py) against sklearn and
hand-derived values; the interval against Hanley & McNeil's formula written out here."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import roc_auc_score

from axon_eval.stats.separation import separation_auc


def test_hand_counted_pairs_with_a_tie():
    # correct: 8, 6; incorrect: 6, 2 -> pairs (8>6), (8>2), (6=6: half), (6>2) -> 3.5 / 4
    r = separation_auc([8, 6, 6, 2], [True, True, False, False])
    assert r.auc == pytest.approx(0.875)
    assert (r.n_correct, r.n_incorrect, r.n_missing) == (2, 2, 0)


def test_hanley_mcneil_interval_written_out():
    a, n1, n0 = 0.875, 2, 2
    q1, q2 = a / (2 - a), 2 * a * a / (1 + a)
    se = math.sqrt((a * (1 - a) + (n1 - 1) * (q1 - a * a) + (n0 - 1) * (q2 - a * a)) / (n1 * n0))
    r = separation_auc([8, 6, 6, 2], [True, True, False, False])
    assert r.low == pytest.approx(max(0.0, a - 1.959963984540054 * se))
    assert r.high == pytest.approx(min(1.0, a + 1.959963984540054 * se))


def test_missing_values_take_no_part_and_are_counted():
    r = separation_auc([8, None, float("nan"), 2], [True, True, False, False])
    assert r.auc == 1.0 and r.n_missing == 2 and (r.n_correct, r.n_incorrect) == (1, 1)


def test_one_group_only_or_unequal_lengths_is_an_error_not_a_number():
    with pytest.raises(ValueError, match="0 incorrect"):
        separation_auc([1, 2, 3], [True, True, True])
    with pytest.raises(ValueError, match="one per segment"):
        separation_auc([1, 2], [True])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 10), st.booleans()), min_size=2, max_size=60))
def test_equals_sklearn_roc_auc(pairs):
    values = [v for v, _ in pairs]
    labels = [c for _, c in pairs]
    if len(set(labels)) < 2:
        return
    r = separation_auc(values, labels)
    assert r.auc == pytest.approx(roc_auc_score(np.array(labels, dtype=int), np.array(values, dtype=float)))
    assert 0.0 <= r.low <= r.auc <= r.high <= 1.0


def test_separation_figures_of_the_heuristic_on_a_bundled_set_are_plain_numbers():
    # production path: the judge on the library set, each dimension's AUC against sklearn on the same values
    import csv

    from axon_eval.bench.heuristic import SEPARATED, separation_figures
    from axon_eval.evidence import load_turns
    from axon_eval.judges.heuristic import HeuristicJudge
    from axon_eval.rubric import Rubric
    from axon_eval.view import build_views

    figs = separation_figures("data/turns/library_turns.jsonl", "data/turns/library_labels.csv")
    assert set(figs) == set(SEPARATED)
    turns, _ = load_turns("data/turns/library_turns.jsonl")
    recs = {r.segment_id: r for r in (HeuristicJudge().judge(v) for v in build_views(turns, Rubric.default()))}
    with open("data/turns/library_labels.csv", encoding="utf-8") as fh:
        labels = list(csv.DictReader(fh))
    y = np.array([r["verdict"] == "good" for r in labels], dtype=int)
    sql = np.array([recs[r["segment_id"]].verdict.sql_quality for r in labels], dtype=float)
    assert figs["sql_quality"]["auc"] == pytest.approx(round(roc_auc_score(y, sql), 3))
    assert figs["score"]["n_correct"] + figs["score"]["n_incorrect"] == len(labels) == 45
    assert all(type(v) in (int, float) for f in figs.values() for v in f.values())
