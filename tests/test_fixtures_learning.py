"""The fourth held-out failure-class set, on the online-learning platform's warehouse: frozen,
deterministic, labels consistent.

The oracles here are independent of the set file: figures recomputed in Python over raw rows fetched from a
fresh warehouse (``statistics``, ``calendar``, ``collections.Counter``, ``datetime``). The checks every
failure-class set shares (rebuild byte-identical, one label per segment, the DESIGN §4 midpoint band, claims,
open periods, row counts, the README section) are in ``test_fixtures_class_sets``; this file keeps the set's
own.
"""

from __future__ import annotations

import calendar
import csv
import statistics
from collections import Counter
from datetime import date
from pathlib import Path

import pytest

from axon_eval.evidence import load_turns
from axon_eval.warehouses.learning import LABELS_FILE, TURNS_FILE, build_learning_warehouse

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "data" / "turns"


@pytest.fixture(scope="module")
def labels() -> list[dict[str, str]]:
    with (DATA / LABELS_FILE).open(encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


@pytest.fixture(scope="module")
def turns():
    loaded, invalid = load_turns(DATA / TURNS_FILE)
    assert not invalid
    return loaded


@pytest.fixture(scope="module")
def answers(turns) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for t in turns:
        out.setdefault(t.question, []).append(t.answer)
    return out


@pytest.fixture(scope="module")
def conn():
    c = build_learning_warehouse()
    yield c
    c.close()


def _one(conn, sql):
    return conn.execute(sql).fetchone()[0]


def _col(conn, sql) -> list:
    return [r[0] for r in conn.execute(sql)]


def _only(answers, question) -> str:
    (a,) = answers[question]
    return a


def _in(d: str, first: str, last: str) -> bool:
    return first <= d <= last


def test_the_warehouse_keeps_its_own_invariants(conn):
    """Completion follows enrolment and never a refund; a pass is a score of 70 or more; two titles are shared;
    the billing category is stored in three spellings; every date lies in the covered span."""
    for enrolled, completed, refunded in conn.execute("SELECT enrolled_date, completed_date, refunded FROM enrolments"):
        assert "2023-01-01" <= enrolled <= "2025-06-30"
        if completed is not None:
            assert date.fromisoformat(completed) >= date.fromisoformat(enrolled) and not refunded
    assert all((s >= 70) == bool(p) for s, p in conn.execute("SELECT score, passed FROM quiz_attempts"))
    titles = Counter(_col(conn, "SELECT title FROM courses"))
    assert {t for t, n in titles.items() if n > 1} == {"Intro to SQL", "Python Foundations"}
    spellings = {c for c in _col(conn, "SELECT DISTINCT category FROM support_tickets") if c.strip().lower() == "billing"}
    assert spellings == {"Billing", "billing", "Billing "}
    assert max(_col(conn, "SELECT MAX(viewed_date) FROM lesson_views") + _col(conn, "SELECT MAX(paid_date) FROM payments")) <= "2025-06-30"


def test_derived_totals_are_the_sums_of_the_shown_rows(turns, labels):
    by_id = {t.turn_id: t for t in turns}
    found = 0
    for r in labels:
        if not (r["note"].startswith("derived_total:") or "the total is the" in r["note"]):
            continue
        (step,) = by_id[r["turn_id"]].sql_steps
        assert step.row_count == len(step.rows)  # every term is in the rows
        total = round(sum(row[-1] for row in step.rows), 2)
        assert f"{total:,}" in by_id[r["turn_id"]].answer, (r["segment_id"], total)
        found += 1
    assert found == 5


def test_seeded_fan_outs_really_inflate_the_figure(answers, conn):
    """Oracle: the parent's figure computed in Python over the parent rows only is not the stated one."""
    with_views = set(_col(conn, "SELECT DISTINCT enrolment_id FROM lesson_views"))
    prices = [(eid, p) for eid, p in conn.execute(
        "SELECT e.enrolment_id, c.price_cents FROM enrolments e JOIN courses c USING (course_id) "
        "WHERE c.course_code = 'DS-210' AND e.enrolled_date LIKE '2024-%'")]
    value = sum(p for eid, p in prices if eid in with_views) / 100
    a = _only(answers, "What is the list-price value of the 2024 enrolments in Machine Learning in Practice whose "
                       "learners watched at least one lesson?")
    assert f"${value:,.2f}" not in a
    # the safe twin (IN subquery) states the plain figure
    prices = [(eid, p) for eid, p in conn.execute(
        "SELECT e.enrolment_id, c.price_cents FROM enrolments e JOIN courses c USING (course_id) "
        "WHERE c.course_code = 'DS-330' AND e.enrolled_date LIKE '2024-%'")]
    value = sum(p for eid, p in prices if eid in with_views) / 100
    assert f"${value:,.2f}" in _only(answers, "What is the list-price value of the 2024 enrolments in Deep Learning "
                                              "Projects whose learners watched at least one lesson?")
    with_quiz = set(_col(conn, "SELECT enrolment_id FROM quiz_attempts"))
    bus = _col(conn, "SELECT e.enrolment_id FROM enrolments e JOIN courses c USING (course_id) "
                     "WHERE c.course_code = 'BUS-210' AND e.enrolled_date LIKE '2024-%'")
    n = sum(eid in with_quiz for eid in bus)
    assert not _only(answers, "How many of the 2024 enrolments in Financial Modelling in Excel got as far as the quiz?").startswith(f"{n:,} ")
    seconds = _col(conn, "SELECT v.watch_seconds FROM lesson_views v JOIN enrolments e USING (enrolment_id) "
                         "JOIN courses c USING (course_id) WHERE c.course_code = 'DS-210' AND v.viewed_date LIKE '2025-04-%'")
    a = _only(answers, "How many hours of Machine Learning in Practice lessons did learners watch in April 2025, and how "
                       "many quiz attempts do those learners' enrolments hold?")
    assert f"watched {round(sum(seconds) / 3600, 1):,} hours" not in a
    seconds = _col(conn, "SELECT v.watch_seconds FROM lesson_views v JOIN enrolments e USING (enrolment_id) "
                         "JOIN courses c USING (course_id) WHERE c.course_code = 'DS-210' AND v.viewed_date LIKE '2025-05-%'")
    a = _only(answers, "How many hours of Machine Learning in Practice lessons did learners watch in May 2025, and how "
                       "many quiz attempts do those learners' enrolments hold?")
    assert f"watched {round(sum(seconds) / 3600, 1):,} hours" in a


def test_unit_claims_are_the_unconverted_cell(answers, conn):
    cents = _one(conn, "SELECT SUM(amount_cents) FROM payments WHERE kind = 'course' AND currency = 'USD' "
                       "AND paid_date BETWEEN '2025-01-01' AND '2025-03-31'")
    assert f"${cents:,} " in _only(answers, "What did course purchases paid in US dollars bring in during Q1 2025?")
    seconds = sum(_col(conn, "SELECT v.watch_seconds FROM lesson_views v JOIN enrolments e USING (enrolment_id) "
                             "JOIN courses c USING (course_id) WHERE c.course_code = 'LNG-101' AND v.viewed_date LIKE '2024-%'"))
    assert f"{seconds:,} minutes" in _only(answers, "How many minutes of Spanish for Travellers lessons did learners watch in 2024?")
    passed = _col(conn, "SELECT q.passed FROM quiz_attempts q JOIN enrolments e USING (enrolment_id) JOIN courses c USING (course_id) "
                        "WHERE c.course_code = 'UX-101' AND q.attempted_date LIKE '2024-%'")
    assert _only(answers, "What fraction of UX Design Basics quiz attempts passed in 2024?").startswith(f"{sum(passed) / len(passed):.3f}%")
    # the converted twins: seconds / 3,600 stated as hours, a fraction times 100 as a percentage
    seconds = sum(_col(conn, "SELECT v.watch_seconds FROM lesson_views v JOIN enrolments e USING (enrolment_id) "
                             "JOIN courses c USING (course_id) WHERE c.course_code = 'CLD-310' "
                             "AND v.viewed_date BETWEEN '2025-04-01' AND '2025-06-30'"))
    assert f"{seconds / 3600:,.1f} hours" in _only(
        answers, "How much Kubernetes for Developers content, in hours, did learners get through in Q2 2025?")
    passed = _col(conn, "SELECT q.passed FROM quiz_attempts q JOIN enrolments e USING (enrolment_id) JOIN courses c USING (course_id) "
                        "WHERE c.course_code = 'UX-101' AND q.attempted_date LIKE '2023-%'")
    assert _only(answers, "What fraction of UX Design Basics quiz attempts passed in 2023?").startswith(f"{100 * sum(passed) / len(passed):.1f}%")


def test_open_periods_really_pick_up_other_periods_and_their_twins_do_not(answers, conn):
    dates = _col(conn, "SELECT e.enrolled_date FROM enrolments e JOIN courses c USING (course_id) WHERE c.course_code = 'LNG-120'")
    year, opened = sum(d.startswith("2024-") for d in dates), sum(d >= "2024-01-01" for d in dates)
    assert opened > year
    twins = answers["How many enrolments did Business English get in 2024?"]
    assert len(twins) == 2 and {f"got {year:,} " in a for a in twins} == {True, False}
    opened_dates = _col(conn, "SELECT opened_date FROM support_tickets")
    q1 = sum(_in(d, "2025-01-01", "2025-03-31") for d in opened_dates)
    twins = answers["How many support tickets were opened in Q1 2025, and how many of them are still open?"]
    assert len(twins) == 2 and sum(a.startswith(f"{q1:,} ") for a in twins) == 1
    june = sum(_col(conn, "SELECT amount_cents FROM payments WHERE kind = 'subscription' AND currency = 'GBP' "
                          "AND paid_date LIKE '2024-06-%'")) / 100
    twins = answers["What did we take in sterling subscriptions in June 2024?"]
    assert len(twins) == 2 and sum(f"£{june:,.2f}" in a for a in twins) == 1


def test_wrong_rows_are_not_at_the_asked_end(answers, conn):
    scores: dict[str, list[int]] = {}
    for title, code, s in conn.execute("SELECT c.title, c.course_code, q.score FROM quiz_attempts q JOIN enrolments e "
                                       "USING (enrolment_id) JOIN courses c USING (course_id) WHERE q.attempted_date LIKE '2024-%'"):
        scores.setdefault(f"{title}|{code}", []).append(s)
    lowest = min(scores, key=lambda k: statistics.fmean(scores[k])).split("|")[0]
    assert not _only(answers, "Which course had the lowest average quiz score in 2024?").startswith(lowest)
    per: dict[str, list[int]] = {}
    hours: Counter = Counter()
    for country, lid, sec in conn.execute("SELECT l.country, l.learner_id, v.watch_seconds FROM lesson_views v JOIN enrolments e "
                                          "USING (enrolment_id) JOIN learners l ON l.learner_id = e.learner_id "
                                          "WHERE v.viewed_date LIKE '2024-%'"):
        per.setdefault(country, set()).add(lid)
        hours[country] += sec
    best = max(hours, key=lambda c: hours[c] / len(per[c]))
    assert best not in _only(answers, "Learners from which country watched the most per head in 2024?")
    minutes: dict[str, list[int]] = {}
    for subject, sec in conn.execute("SELECT c.subject, v.watch_seconds FROM lesson_views v JOIN enrolments e USING (enrolment_id) "
                                     "JOIN courses c USING (course_id) WHERE v.viewed_date BETWEEN '2024-07-01' AND '2024-12-31'"):
        minutes.setdefault(subject, []).append(sec)
    longest = max(minutes, key=lambda k: statistics.fmean(minutes[k]))
    a = _only(answers, "In which subject did a lesson view last longest on average in the second half of 2024?")
    assert not a.startswith(longest) and a.startswith(min(minutes))


def test_the_own_classes_really_change_the_figure(answers, conn):
    # a completion rate over every 2024 enrolment, not only the quiz takers or the finished ones
    done = [c is not None for c in _col(conn, "SELECT e.completed_date FROM enrolments e JOIN courses c USING (course_id) "
                                              "WHERE c.course_code = 'WEB-120' AND e.enrolled_date LIKE '2024-%'")]
    assert not _only(answers, "What share of 2024 enrolments in Modern JavaScript were completed?").startswith(
        f"{100 * sum(done) / len(done):.1f}%")
    done = [c is not None for c in _col(conn, "SELECT e.completed_date FROM enrolments e JOIN courses c USING (course_id) "
                                              "WHERE c.course_code = 'BUS-101' AND e.enrolled_date LIKE '2024-%'")]
    a = _only(answers, "What was the completion rate of Project Management Fundamentals among learners who enrolled in 2024?")
    assert "100.0%" in a and f"{len(done):,} enrolments" not in a and sum(done) < len(done)
    # a whole month by the calendar
    days = calendar.monthrange(2024, 2)[1]
    feb = sum(_in(d, "2024-02-01", f"2024-02-{days}") for d in _col(conn, "SELECT signup_date FROM learners"))
    assert not _only(answers, "How many learners signed up in February 2024?").startswith(f"{feb} ")
    days = calendar.monthrange(2025, 3)[1]
    march = sum(_in(d, "2025-03-01", f"2025-03-{days}") for d in _col(conn, "SELECT viewed_date FROM lesson_views"))
    assert f"{march:,} lesson views" not in _only(
        answers, "How many lesson views did we log in March 2025, and how many hours of watching were they?")
    # each course's own count, by id
    own = Counter(_col(conn, "SELECT c.course_code FROM enrolments e JOIN courses c USING (course_id) "
                             "WHERE e.enrolled_date BETWEEN '2025-01-01' AND '2025-06-30'"))
    a = _only(answers, "How many enrolments did each Programming course get in the first half of 2025, by course code?")
    assert f"SQL-101R {own['SQL-101R']:,}," not in a and f"WEB-120 {own['WEB-120']:,}." in a
    ratings = [r for r in _col(conn, "SELECT e.rating FROM enrolments e JOIN courses c USING (course_id) "
                                     "WHERE c.course_code = 'PY-100B'") if r is not None]
    a = _only(answers, "What star rating do learners give Camila Souza's Python Foundations course (PY-100B)?")
    assert f"{len(ratings):,} ratings" not in a
    # one category after case and spacing are folded
    folded = Counter(c.strip().lower() for c in _col(conn, "SELECT category FROM support_tickets WHERE opened_date LIKE '2024-%'"))
    top = folded.most_common(1)[0][0]
    assert top == "billing"
    assert _only(answers, "What was the most common reason for a support ticket in 2024?").startswith("Technical")
    q1 = sum(c.strip().lower() == "billing" for c in _col(
        conn, "SELECT category FROM support_tickets WHERE opened_date BETWEEN '2025-01-01' AND '2025-03-31'"))
    assert f"raised {q1} billing" not in _only(
        answers, "How many billing tickets did learners raise in Q1 2025, and how long did they take to close?")
    # a change over the earlier year
    years = Counter(d[:4] for d in _col(conn, "SELECT enrolled_date FROM enrolments"))
    growth = 100 * (years["2024"] - years["2023"]) / years["2023"]
    assert f"{growth:.1f}%" not in _only(answers, "By how much did enrolments grow from 2023 to 2024, in percent?")
    signups = Counter(d[:4] for d in _col(conn, "SELECT signup_date FROM learners"))
    growth = 100 * (signups["2024"] - signups["2023"]) / signups["2023"]
    assert f"grew {growth:.1f}%" in _only(answers, "By how much did learner signups grow from 2023 to 2024, in percent?")


def test_even_medians_and_the_median_twin(turns, labels, answers, conn):
    by_id = {t.turn_id: t for t in turns}
    medians = [r for r in labels if r["note"].startswith("even_median:")]
    assert len(medians) == 2
    for r in medians:
        t = by_id[r["turn_id"]]
        code = t.question.split("(")[1].split(")")[0]
        (step,) = t.sql_steps
        first, last = [part.split("'")[1] for part in step.sql.split("BETWEEN ")[1].split(" AND ")[:2]]
        if "quiz" in t.question:
            vals = _col(conn, f"SELECT q.score FROM quiz_attempts q JOIN enrolments e USING (enrolment_id) JOIN courses c "
                              f"USING (course_id) WHERE c.course_code = '{code}' AND q.attempted_date BETWEEN '{first}' AND '{last}'")
        else:
            vals = _col(conn, f"SELECT v.watch_seconds FROM lesson_views v JOIN enrolments e USING (enrolment_id) JOIN courses c "
                              f"USING (course_id) WHERE c.course_code = '{code}' AND v.viewed_date BETWEEN '{first}' AND '{last}'")
        assert len(vals) % 2 == 0
        median = statistics.median(vals)
        assert step.rows[0][0] != median and f" {median:g} " not in t.answer
    vals = _col(conn, "SELECT q.score FROM quiz_attempts q JOIN enrolments e USING (enrolment_id) JOIN courses c USING (course_id) "
                      "WHERE c.course_code = 'DS-101' AND q.attempted_date BETWEEN '2024-07-01' AND '2024-12-31'")
    assert f"was {statistics.median(vals):g} out of 100" in _only(
        answers, "What was the median quiz score in Data Science 101 (DS-101) in the second half of 2024?")


def test_the_statistic_twins_compute_what_is_asked(answers, conn):
    scores = _col(conn, "SELECT q.score FROM quiz_attempts q JOIN enrolments e USING (enrolment_id) JOIN courses c USING (course_id) "
                        "WHERE c.course_code = 'DS-210'")
    assert f"is {statistics.pvariance(scores):.1f} " in _only(answers, "What is the variance of quiz scores in Machine Learning in Practice?")
    scores = _col(conn, "SELECT q.score FROM quiz_attempts q JOIN enrolments e USING (enrolment_id) JOIN courses c USING (course_id) "
                        "WHERE c.course_code = 'DS-101'")
    assert f"is {statistics.pvariance(scores):.1f}" not in _only(answers, "What is the variance of quiz scores in Data Science 101?")
    prices = _col(conn, "SELECT price_cents FROM courses WHERE subject = 'Business'")
    assert f"${(max(prices) - min(prices)) / 100:,.2f}" not in _only(
        answers, "What is the price range across our Business courses, from cheapest to dearest?")
    rates: dict[str, list[bool]] = {}
    for code, title, done in conn.execute("SELECT c.course_code, c.title, e.completed_date IS NOT NULL FROM enrolments e "
                                          "JOIN courses c USING (course_id) WHERE e.enrolled_date BETWEEN '2023-07-01' AND '2023-12-31'"):
        rates.setdefault(f"{title}|{code}", []).append(bool(done))
    second = sorted(rates, key=lambda k: sum(rates[k]) / len(rates[k]))[1].split("|")[0]
    assert _only(answers, "Which course had the second-lowest completion rate among enrolments made in the second half "
                          "of 2023?").startswith(second)
