"""Issue 22: failure classes the offline judge had not met, each in three domains (rugby, shop,
freight/clinic/energy), hand-built turns through the production path (``HeuristicJudge.judge``).

Each defect test pairs the defect with its correct twin, so the check must tell them apart; the
expected outcomes are written from the turn's construction (the oracle), not read from the judge."""

from __future__ import annotations

import pytest

from axon_eval.evidence import Turn, split_segments
from axon_eval.judges.heuristic import HeuristicJudge, analyse_sql
from axon_eval.judges.heuristic import failure_classes
from axon_eval.judges.heuristic.failure_classes import UNITS, asked_end, statistic_gaps
from axon_eval.view import render_view


def make_view(question, steps, answer="", horizon=20):
    turn = Turn.model_validate({
        "schema_version": 1, "turn_id": "k-1", "captured_at": "2026-07-01T00:00:00Z", "region": "eu",
        "surface": "web", "client": "c", "question": question,
        "answer": answer if answer != "" else None, "steps": steps})
    return render_view(split_segments(turn)[0], horizon)


def sql_step(sql, columns, rows, row_count=None):
    return {"kind": "sql", "sql": sql, "status": "ok", "columns": columns, "rows": rows,
            "row_count": len(rows) if row_count is None else row_count}


def judge(question, sql, columns, rows, answer, row_count=None):
    rec = HeuristicJudge().judge(make_view(question, [sql_step(sql, columns, rows, row_count)], answer))
    assert rec.error is None, rec.error
    return rec.verdict, rec.extra["heuristic"]


# ---------------------------------------------------------------------------------------------
# fan-out joins
# ---------------------------------------------------------------------------------------------
FAN_OUT = [
    # (question, inflated SQL, safe SQL, column, answer template)
    ("What is the total capacity of our venues in Cardiff?",
     "SELECT v.city, SUM(v.capacity) AS capacity FROM venues v JOIN matches m ON m.venue_id = v.venue_id "
     "WHERE v.city = 'Cardiff' GROUP BY v.city",
     "SELECT v.city, SUM(v.capacity) AS capacity FROM venues v WHERE v.city = 'Cardiff' GROUP BY v.city",
     "capacity", "Our Cardiff venues hold {} in total."),
    ("How many customers in Texas do we have?",
     "SELECT c.state, COUNT(c.customer_id) AS customers FROM customers c JOIN orders o ON o.customer_id = c.customer_id "
     "WHERE c.state = 'TX' GROUP BY c.state",
     "SELECT c.state, COUNT(DISTINCT c.customer_id) AS customers FROM customers c JOIN orders o "
     "ON o.customer_id = c.customer_id WHERE c.state = 'TX' GROUP BY c.state",
     "customers", "Texas has {} customers."),
    ("What is the combined payload of the trucks at the Leeds depot?",
     "SELECT d.name, SUM(t.payload) AS payload FROM trucks t JOIN depots d ON d.depot_id = t.depot_id "
     "JOIN trips tr ON tr.truck_id = t.truck_id WHERE d.name = 'Leeds' GROUP BY d.name",
     "SELECT d.name, SUM(t.payload) AS payload FROM trucks t JOIN depots d ON d.depot_id = t.depot_id "
     "JOIN (SELECT truck_id, COUNT(*) AS trips FROM trips GROUP BY truck_id) tr ON tr.truck_id = t.truck_id "
     "WHERE d.name = 'Leeds' GROUP BY d.name",
     "payload", "The Leeds trucks carry {} in total."),
]


@pytest.mark.parametrize("question,bad,good,column,answer", FAN_OUT)
def test_fan_out_join_is_partial_and_its_safe_twin_is_not_flagged(question, bad, good, column, answer):
    name = {"capacity": "Cardiff", "customers": "TX", "payload": "Leeds"}[column]
    v_bad, d_bad = judge(question, bad, ["k", column], [[name, 51200]], answer.format("51,200"))
    assert analyse_sql(bad).fan_out and not analyse_sql(good).fan_out
    assert v_bad.verdict == "partial"
    assert d_bad["verdict_rule"] == "an aggregate is inflated by a one-to-many join"
    assert v_bad.sql_quality <= 6 and v_bad.result_relevance <= 5
    v_ok, d_ok = judge(question, good, ["k", column], [[name, 51200]], answer.format("51,200"))
    assert "one-to-many" not in d_ok["verdict_rule"] and v_ok.sql_quality > v_bad.sql_quality


def test_child_column_summed_over_its_parent_join_is_not_fan_out():
    # orders are the child of customers: SUM(o.order_total) counts each order once
    sql = ("SELECT c.state, SUM(o.order_total) AS revenue FROM orders o JOIN customers c ON c.customer_id = o.customer_id "
           "GROUP BY c.state")
    assert analyse_sql(sql).fan_out == ()
    # a CASE condition on a parent column does not make the summed child value a parent's
    case = ("SELECT SUM(CASE WHEN c.state = 'CA' THEN o.order_total ELSE 0 END) AS ca FROM orders o "
            "JOIN customers c ON c.customer_id = o.customer_id")
    assert analyse_sql(case).fan_out == ()


# ---------------------------------------------------------------------------------------------
# open-ended periods
# ---------------------------------------------------------------------------------------------
OPEN = [
    ("How many tries did Harlow score in 2024?",
     "SELECT COUNT(*) AS tries FROM match_events e WHERE e.team = 'Harlow' AND e.kind = 'try' AND e.event_date >= '2024-01-01'",
     "SELECT COUNT(*) AS tries FROM match_events e WHERE e.team = 'Harlow' AND e.kind = 'try' AND e.event_date >= '2024-01-01' "
     "AND e.event_date < '2025-01-01'", "tries", "Harlow scored 41 tries in 2024."),
    ("What was our revenue in March 2024?",
     "SELECT SUM(order_total) AS revenue FROM orders WHERE order_date >= '2024-03-01'",
     "SELECT SUM(order_total) AS revenue FROM orders WHERE order_date >= '2024-03-01' AND order_date < '2024-04-01'",
     "revenue", "Revenue in March 2024 was $41."),
    ("How many kWh did meter M-7 record in 2023?",
     "SELECT SUM(reading_kwh) AS kwh FROM readings WHERE meter = 'M-7' AND read_date < '2024-01-01'",
     "SELECT SUM(reading_kwh) AS kwh FROM readings WHERE meter = 'M-7' AND read_date >= '2023-01-01' "
     "AND read_date < '2024-01-01'", "kwh", "Meter M-7 recorded 41 kWh in 2023."),
]


@pytest.mark.parametrize("question,open_sql,bounded_sql,column,answer", OPEN)
def test_open_ended_filter_for_a_bounded_period_is_penalised(question, open_sql, bounded_sql, column, answer,
                                                             monkeypatch):
    monkeypatch.setattr(failure_classes, "OPEN_ENDED_PERIOD_IS_DEFECT", True)
    v_open, d_open = judge(question, open_sql, [column], [[41]], answer)
    v_ok, d_ok = judge(question, bounded_sql, [column], [[41]], answer)
    assert v_open.verdict == "partial" and d_open["band"] != "good"
    assert v_open.intent_understood <= 7 and v_open.result_relevance <= 6
    assert v_ok.intent_understood == 10 and v_ok.result_relevance == 10


def test_open_ended_switch_off_keeps_the_old_unverifiable_reading(monkeypatch):
    monkeypatch.setattr(failure_classes, "OPEN_ENDED_PERIOD_IS_DEFECT", False)
    question, open_sql, _, column, answer = OPEN[1]
    v, d = judge(question, open_sql, [column], [[41]], answer)
    assert v.intent_understood == 10 and any("open-ended" in u for u in d["unverifiable_filters"])


# ---------------------------------------------------------------------------------------------
# units
# ---------------------------------------------------------------------------------------------
UNIT_CASES = [
    # (question, sql, column, cell, wrong answer, converted answer)
    ("How much did we refund in 2024?",
     "SELECT SUM(refund_cents) AS refunds FROM refunds WHERE refund_date >= '2024-01-01' AND refund_date < '2025-01-01'",
     "refunds", 120575, "We refunded $120,575 in 2024.", "We refunded $1,205.75 in 2024."),
    ("How heavy was the Leeds freight in 2024?",
     "SELECT SUM(weight_kg) AS weight_kg FROM consignments WHERE depot = 'Leeds' AND shipped >= '2024-01-01' "
     "AND shipped < '2025-01-01'",
     "weight_kg", 48210, "Leeds shipped 48,210 tonnes in 2024.", "Leeds shipped 48.2 tonnes in 2024."),
    ("How long did clinic appointments at Elm Street take in 2024?",
     "SELECT SUM(duration_minutes) AS total_minutes FROM appointments WHERE clinic = 'Elm Street' "
     "AND appt_date >= '2024-01-01' AND appt_date < '2025-01-01'",
     "total_minutes", 5400, "Elm Street appointments took 5,400 hours in 2024.",
     "Elm Street appointments took 90 hours in 2024."),
]


@pytest.mark.parametrize("question,sql,column,cell,wrong,converted", UNIT_CASES)
def test_figure_stated_in_another_unit_is_unsupported_and_a_conversion_is_supported(
        question, sql, column, cell, wrong, converted):
    v_bad, d_bad = judge(question, sql, [column], [[cell]], wrong)
    assert v_bad.verdict == "partial" and v_bad.answer_faithfulness <= 3
    assert any(c["reason"].startswith("unit:") for c in d_bad["claims"])
    v_ok, d_ok = judge(question, sql, [column], [[cell]], converted)
    assert v_ok.answer_faithfulness == 10 and not d_ok["unsupported_claims"]


def test_unit_table_factors_agree_with_written_out_conversions():
    # oracle: 1 kg = 1,000 g, 1 tonne = 1,000 kg, 1 hour = 60 minutes, 1 dollar = 100 cents
    assert UNITS["kg"][1] / UNITS["g"][1] == 1000
    assert UNITS["tonnes"][1] / UNITS["kg"][1] == 1000
    assert UNITS["hours"][1] / UNITS["minutes"][1] == 60
    assert UNITS["dollars"][1] / UNITS["cents"][1] == 100


# ---------------------------------------------------------------------------------------------
# which row the answer names
# ---------------------------------------------------------------------------------------------
ROWS = [
    ("Which team scored the most points in 2024?",
     "SELECT team, SUM(points) AS points FROM results WHERE season = 2024 GROUP BY team ORDER BY points DESC",
     ["team", "points"], [["Harlow", 612], ["Kestrel", 590], ["Brackley", 455]], "points"),
    ("Which state had the fewest orders in 2024?",
     "SELECT state, COUNT(*) AS orders FROM orders WHERE order_date >= '2024-01-01' AND order_date < '2025-01-01' "
     "GROUP BY state ORDER BY orders ASC",
     ["state", "orders"], [["Vermont", 12], ["Wyoming", 19], ["Alaska", 25]], "orders"),
    ("Which depot dispatched the most trucks in 2024?",
     "SELECT depot, COUNT(*) AS trucks FROM dispatches WHERE dispatch_date >= '2024-01-01' "
     "AND dispatch_date < '2025-01-01' GROUP BY depot ORDER BY trucks DESC",
     ["depot", "trucks"], [["Leeds", 880], ["Bristol", 610], ["Dover", 300]], "trucks"),
]


@pytest.mark.parametrize("question,sql,columns,rows,unit", ROWS)
def test_superlative_answered_with_a_row_not_at_the_asked_end(question, sql, columns, rows, unit):
    (first, n1), (second, n2) = rows[0], rows[1]
    v_bad, d_bad = judge(question, sql, columns, rows, f"In 2024 {second} had {n2} {unit}.")
    assert v_bad.verdict == "partial"
    assert second in d_bad["unsupported_claims"]
    v_ok, d_ok = judge(question, sql, columns, rows, f"In 2024 {first} had {n1} {unit}.")
    assert v_ok.verdict == "good" and not d_ok["unsupported_claims"]


def test_asked_end_reads_superlatives_and_leaves_positions_alone():
    assert asked_end("Which branch was busiest?") == "max"
    assert asked_end("Which route is shortest?") == "min"
    assert asked_end("Which branch is the second-busiest?") is None


# ---------------------------------------------------------------------------------------------
# statistics and positions the SQL never computes
# ---------------------------------------------------------------------------------------------
STATS = [
    ("What was the median attendance at Harlow home games in 2024?",
     "SELECT AVG(attendance) AS attendance FROM matches WHERE home = 'Harlow' AND season = 2024",
     "SELECT attendance FROM (SELECT attendance, ROW_NUMBER() OVER (ORDER BY attendance) AS rn, COUNT(*) OVER () AS n "
     "FROM matches WHERE home = 'Harlow' AND season = 2024) WHERE rn = (n + 1) / 2", "attendance"),
    ("How many different customers ordered in 2024?",
     "SELECT COUNT(*) AS customers FROM orders WHERE order_date >= '2024-01-01' AND order_date < '2025-01-01'",
     "SELECT COUNT(DISTINCT customer_id) AS customers FROM orders WHERE order_date >= '2024-01-01' "
     "AND order_date < '2025-01-01'", "customers"),
    ("Which clinic had the second-highest number of appointments in 2024?",
     "SELECT clinic, COUNT(*) AS appointments FROM appointments WHERE appt_date >= '2024-01-01' "
     "AND appt_date < '2025-01-01' GROUP BY clinic ORDER BY appointments DESC LIMIT 1",
     "SELECT clinic, COUNT(*) AS appointments FROM appointments WHERE appt_date >= '2024-01-01' "
     "AND appt_date < '2025-01-01' GROUP BY clinic ORDER BY appointments DESC LIMIT 1 OFFSET 1", "appointments"),
]


@pytest.mark.parametrize("question,neighbour,right,column", STATS)
def test_statistic_or_position_not_computed(question, neighbour, right, column):
    cols = ["clinic", column] if "clinic" in neighbour else [column]
    row = ["Elm Street", 412] if "clinic" in neighbour else [412]
    v_bad, d_bad = judge(question, neighbour, cols, [row], "The answer is 412.")
    assert v_bad.verdict == "partial"
    assert d_bad["verdict_rule"] == "the SQL computes a neighbour of the statistic or position asked for"
    assert v_bad.intent_understood <= 6
    assert statistic_gaps(question, right, analyse_sql(right), 1) == []


def test_minimum_answered_by_max_in_three_domains():
    for q, sql in (("What was the lowest attendance in 2024?", "SELECT MAX(attendance) FROM matches WHERE season = 2024"),
                   ("What is the cheapest variant price?", "SELECT MAX(list_price) FROM product_variants"),
                   ("What is the smallest payload of a truck?", "SELECT MAX(payload) FROM trucks")):
        assert statistic_gaps(q, sql, analyse_sql(sql), 1) == ["the question asks for the minimum but the SQL computes MAX"]
        fixed = sql.replace("MAX", "MIN")
        assert statistic_gaps(q, fixed, analyse_sql(fixed), 1) == []
