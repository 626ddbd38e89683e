"""Every bundled label set grades a bounded asked period answered by a one-sided date filter by one rule.

The oracle here is independent of the heuristic judge: a plain sqlglot walk over every statement that
ran, collecting the date literals each column is compared with, and a question regex for a bounded
period (a year, a month and year, a quarter or half of a year, with no "since"/"onwards"). A segment
whose statement bounds such a column on one side only must carry the open-period ranges
(``fixtures.common.OPEN_PERIOD_RANGES``) and a verdict other than good: its figure may hold other
periods' rows and no evidence of the turn can show that it does not (DESIGN §1). This is the check that
found the four shop segments of the 2026-12-01 label correction (data/README.md, "Label changes").
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest
import sqlglot
from sqlglot import exp

from axon_eval.evidence import load_turns, split_segments
from axon_eval.fixtures.common import OPEN_PERIOD_RANGES

TURNS = Path(__file__).resolve().parents[1] / "data" / "turns"
SETS = [("sample_turns.jsonl", "labels.csv"), ("ood_turns.jsonl", "ood_labels.csv"),
        ("horizon_turns.jsonl", "horizon_labels.csv"), ("library_turns.jsonl", "library_labels.csv"),
        ("transit_turns.jsonl", "transit_labels.csv"), ("water_turns.jsonl", "water_labels.csv"),
        ("hotel_turns.jsonl", "hotel_labels.csv"), ("learning_turns.jsonl", "learning_labels.csv")]
_DATE = re.compile(r"^\d{4}-\d{2}(-\d{2})?$")
_MONTHS = "january|february|march|april|may|june|july|august|september|october|november|december"
_BOUNDED = re.compile(rf"\b(?:in|for|during|of)\s+(?:(?:{_MONTHS})\s+|q[1-4]\s+|h[12]\s+|the first half of\s+)?(?:19|20)\d\d\b"
                      rf"|\b(?:19|20)\d\d\s+(?:revenue|spend|loans|sales|refunds?|on-time|marketing|paid)", re.I)
_OPEN_BY_QUESTION = re.compile(r"\bsince\b|\bonwards\b|\bso far\b|\bto date\b", re.I)


def one_sided_date_columns(sql: str) -> set[str]:
    """Columns compared with a date literal on one side only (``>=``/``>`` or ``<``/``<=``, never both,
    never ``BETWEEN``, ``=`` or ``LIKE``)."""
    try:
        tree = sqlglot.parse_one(sql, read="sqlite")
    except sqlglot.errors.ParseError:
        return set()
    flip = {exp.GT: exp.LT, exp.GTE: exp.LTE, exp.LT: exp.GT, exp.LTE: exp.GTE}
    sides: dict[str, set[str]] = {}
    for node in tree.find_all(exp.GT, exp.GTE, exp.LT, exp.LTE, exp.EQ, exp.Like, exp.Between):
        if isinstance(node, exp.Between):
            if isinstance(node.this, exp.Column):
                sides.setdefault(node.this.name, set()).update({"low", "high"})
            continue
        left, right, op = node.left, node.right, type(node)
        if isinstance(right, exp.Column) and isinstance(left, exp.Literal):
            left, right, op = right, left, flip.get(op, op)
        if not (isinstance(left, exp.Column) and isinstance(right, exp.Literal) and right.is_string
                and _DATE.match(right.this)):
            continue
        side = sides.setdefault(left.name, set())
        side.update({"low"} if op in (exp.GT, exp.GTE) else {"high"} if op in (exp.LT, exp.LTE) else {"low", "high"})
    return {col for col, s in sides.items() if len(s) == 1}


def _segments_with_open_periods():
    for turns_name, labels_name in SETS:
        turns, _ = load_turns(TURNS / turns_name)
        with open(TURNS / labels_name, encoding="utf-8") as fh:
            labels = {r["segment_id"]: r for r in csv.DictReader(fh)}
        for turn in turns:
            for seg in split_segments(turn):
                question = seg.question or ""
                if not _BOUNDED.search(question) or _OPEN_BY_QUESTION.search(question):
                    continue
                ok_sql = [s.sql for s in turn.steps if s.kind == "sql" and s.status == "ok" and s.sql]
                if seg.n_segments > 1 and len(ok_sql) == seg.n_segments:
                    ok_sql = [ok_sql[seg.index - 1]]  # (index from 1) a relay answered one statement per question, in order
                if any(one_sided_date_columns(sql) for sql in ok_sql):
                    yield labels_name, seg.segment_id, labels[seg.segment_id]


FOUND = list(_segments_with_open_periods())


def test_the_scan_reads_one_sided_filters_and_leaves_bounded_ones_alone():
    assert one_sided_date_columns("SELECT 1 FROM t WHERE d >= '2024-01-01'") == {"d"}
    assert one_sided_date_columns("SELECT 1 FROM t WHERE '2024-12-31' >= d") == {"d"}
    assert one_sided_date_columns("SELECT 1 FROM t WHERE d >= '2024-01-01' AND d < '2025-01-01'") == set()
    assert one_sided_date_columns("SELECT 1 FROM t WHERE d BETWEEN '2024-01-01' AND '2024-12-31'") == set()
    assert one_sided_date_columns("SELECT 1 FROM t WHERE d LIKE '2024-%'") == set()
    assert _BOUNDED.search("How many loans did we make in 2024?")
    assert _BOUNDED.search("What did late fines on 2024 loans add up to?")
    assert _OPEN_BY_QUESTION.search("In the match sheets since 2023-04-15, how many points")


def test_the_scan_finds_the_seeded_and_the_corrected_segments():
    found = {seg for _, seg, _ in FOUND}
    # the library set's four seeded open periods and the shop set's four corrected segments
    assert {"lib-0005", "lib-0019", "lib-0022", "lib-0040"} <= found
    assert {"shop-0004", "shop-0038", "shop-0066#2", "shop-0082"} <= found


@pytest.mark.parametrize("labels_name, segment_id, label", FOUND, ids=[s for _, s, _ in FOUND])
def test_a_bounded_period_under_a_one_sided_filter_carries_the_open_period_rule(labels_name, segment_id, label):
    assert label["verdict"] != "good", (labels_name, segment_id, label["note"])
    assert int(label["sql_quality_max"]) <= OPEN_PERIOD_RANGES["sql"][1], (labels_name, segment_id)
    assert int(label["result_relevance_max"]) <= OPEN_PERIOD_RANGES["relevance"][1], (labels_name, segment_id)
