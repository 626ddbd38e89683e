"""Failure classes the offline judge had not met, each in three domains (rugby, shop,
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


#: every statistic the check knows by name, in three domains: (question, the neighbour the SQL computes
#: instead, SQL that computes what was asked); the gap is written from the construction
NAMED_STATISTICS = {
    "median": [
        ("What was the median attendance at Harlow home games?", "SELECT AVG(attendance) FROM matches",
         "SELECT MEDIAN(attendance) FROM matches"),
        ("What is the median order value in Texas?", "SELECT AVG(order_total) FROM orders",
         "SELECT order_total FROM (SELECT order_total, ROW_NUMBER() OVER (ORDER BY order_total) AS rn FROM orders)"),
        ("What was the median loan length?", "SELECT SUM(days) FROM loans",
         "SELECT PERCENTILE_CONT(0.5) WITHIN GROUP (ORDER BY days) FROM loans"),
    ],
    "standard deviation": [
        ("What is the standard deviation of match attendance?", "SELECT AVG(attendance) FROM matches",
         "SELECT STDDEV(attendance) FROM matches"),
        ("What is the std dev of daily consumption at the Hull substation?", "SELECT AVG(kwh) FROM readings",
         "SELECT SQRT(AVG(kwh * kwh) - AVG(kwh) * AVG(kwh)) FROM readings"),
        ("Give me the standard deviation of delivery times.", "SELECT MAX(minutes) FROM deliveries",
         "SELECT STDDEV_SAMP(minutes) FROM deliveries"),
    ],
    "variance": [
        ("What is the variance of points scored?", "SELECT AVG(points) FROM results",
         "SELECT VARIANCE(points) FROM results"),
        ("What is the variance of basket size?", "SELECT SUM(items) FROM orders",
         "SELECT AVG(items * items) - AVG(items) * AVG(items) FROM orders"),
        ("What is the variance of the waiting times at clinic B?", "SELECT AVG(wait_minutes) FROM visits",
         "SELECT VAR_SAMP(wait_minutes) FROM visits"),
    ],
    "percentile": [
        ("What is the 90th percentile of attendance?", "SELECT MAX(attendance) FROM matches",
         "SELECT PERCENTILE_CONT(0.9) WITHIN GROUP (ORDER BY attendance) FROM matches"),
        ("What is the upper quartile of order values?", "SELECT AVG(order_total) FROM orders",
         "SELECT order_total FROM (SELECT order_total, NTILE(4) OVER (ORDER BY order_total) AS q FROM orders)"),
        ("What is the p95 delivery time?", "SELECT AVG(minutes) FROM deliveries",
         "SELECT minutes FROM (SELECT minutes, PERCENT_RANK() OVER (ORDER BY minutes) AS pr FROM deliveries)"),
    ],
    "distinct count": [
        ("How many different referees officiated in 2024?", "SELECT COUNT(referee) FROM matches",
         "SELECT COUNT(DISTINCT referee) FROM matches"),
        ("How many unique customers ordered in March?", "SELECT COUNT(*) FROM orders",
         "SELECT COUNT(DISTINCT customer_id) FROM orders"),
        ("How many distinct members borrowed a DVD?", "SELECT COUNT(member_id) FROM loans",
         "SELECT COUNT(*) FROM (SELECT member_id FROM loans GROUP BY member_id)"),
    ],
    "total": [
        ("What was the total attendance at Harlow home games?", "SELECT AVG(attendance) FROM matches",
         "SELECT SUM(attendance) FROM matches"),
        ("What did Texas customers spend in total?", "SELECT ROUND(AVG(order_total), 2) FROM orders",
         "SELECT ROUND(SUM(order_total), 2) FROM orders"),
        ("How many kilometres did the Leeds trucks drive altogether?", "SELECT AVG(km) FROM trips",
         "SELECT SUM(km) FROM trips"),
    ],
}


@pytest.mark.parametrize("name", sorted(NAMED_STATISTICS))
def test_each_named_statistic_is_checked_in_three_domains(name):
    cases = NAMED_STATISTICS[name]
    assert len(cases) == 3
    for question, neighbour, right in cases:
        gaps = statistic_gaps(question, neighbour, analyse_sql(neighbour), 1)
        assert len(gaps) == 1 and f" {name} " in gaps[0].replace("a total", "the total "), (question, gaps)
        assert statistic_gaps(question, right, analyse_sql(right), 1) == [], (question, right)


#: position k asked, OFFSET other than k - 1: (question, SQL with the wrong OFFSET, the right one), three domains
OFFSETS = [
    ("Which stop had the third-highest number of boardings?",
     "SELECT stop, COUNT(*) AS boardings FROM taps GROUP BY stop ORDER BY boardings DESC LIMIT 1 OFFSET 1",
     "SELECT stop, COUNT(*) AS boardings FROM taps GROUP BY stop ORDER BY boardings DESC LIMIT 1 OFFSET 2"),
    ("Which team had the second-highest points total in 2024?",
     "SELECT team, SUM(points) AS points FROM results GROUP BY team ORDER BY points DESC LIMIT 1 OFFSET 2",
     "SELECT team, SUM(points) AS points FROM results GROUP BY team ORDER BY points DESC LIMIT 1 OFFSET 1"),
    ("Which branch had the fourth-largest number of loans?",
     "SELECT branch, COUNT(*) AS loans FROM loans GROUP BY branch ORDER BY loans DESC LIMIT 2, 1",
     "SELECT branch, COUNT(*) AS loans FROM loans GROUP BY branch ORDER BY loans DESC LIMIT 3, 1"),
]


@pytest.mark.parametrize("question, wrong, right", OFFSETS)
def test_an_offset_that_skips_the_wrong_number_of_rows_is_another_position(question, wrong, right):
    gaps = statistic_gaps(question, wrong, analyse_sql(wrong), 1)
    assert len(gaps) == 1 and "OFFSET" in gaps[0], gaps
    assert statistic_gaps(question, right, analyse_sql(right), 1) == []


#: an extreme value asked, answered by a mean or a total with no ordering, three domains
EXTREMES = [
    ("What was the longest shift anyone worked in 2025?", "SELECT ROUND(AVG(worked_minutes), 0) FROM shifts",
     "SELECT MAX(worked_minutes) FROM shifts"),
    ("What was the highest attendance at a Carrowdale home game?", "SELECT AVG(attendance) FROM matches",
     "SELECT attendance FROM matches ORDER BY attendance DESC LIMIT 1"),
    ("What is the cheapest fare on the night routes?", "SELECT SUM(fare_cents) FROM fares",
     "SELECT MIN(fare_cents) FROM fares"),
]


@pytest.mark.parametrize("question, neighbour, right", EXTREMES)
def test_an_extreme_answered_by_a_mean_or_total_is_a_neighbour(question, neighbour, right):
    gaps = statistic_gaps(question, neighbour, analyse_sql(neighbour), 1)
    assert len(gaps) == 1 and ("maximum" in gaps[0] or "minimum" in gaps[0]), gaps
    assert statistic_gaps(question, right, analyse_sql(right), 1) == []
    # the mean of an extreme ("the highest average ...") is asked as an average: no gap
    q = question.replace("longest", "longest average").replace("highest", "highest average")
    if "average" in q:
        assert statistic_gaps(q, neighbour, analyse_sql(neighbour), 1) == []


#: UNION without ALL removes repeats: a count over it answers "how many different", three domains
UNIONS = [
    ("How many different stops do routes B40 and B43 serve between them?",
     "SELECT COUNT(*) FROM (SELECT stop_id FROM route_stops WHERE route_id = 40 UNION "
     "SELECT stop_id FROM route_stops WHERE route_id = 43)"),
    ("How many different players appeared for Carrowdale or Thornmere?",
     "SELECT COUNT(*) FROM (SELECT player_id FROM lineups WHERE team = 'Carrowdale' UNION "
     "SELECT player_id FROM lineups WHERE team = 'Thornmere')"),
    ("How many distinct members borrowed or reserved a book?",
     "SELECT COUNT(*) FROM (SELECT member_id FROM loans UNION SELECT member_id FROM reservations)"),
]


@pytest.mark.parametrize("question, sql", UNIONS)
def test_a_count_over_a_union_is_a_distinct_count_and_over_union_all_is_not(question, sql):
    assert statistic_gaps(question, sql, analyse_sql(sql), 1) == []
    v, d = judge(question, sql, ["n"], [[38]], "There are 38 of them.")
    assert "without DISTINCT" not in v.explanation, v.explanation
    doubled = sql.replace(" UNION ", " UNION ALL ")
    gaps = statistic_gaps(question, doubled, analyse_sql(doubled), 1)
    assert gaps == ["the question asks for the distinct count but the SQL computes COUNT"]


#: integer division: (question, SQL, its whole-number cell, the decimal twin, its cell), three domains;
#: SQLite really returns these cells (checked below against sqlite3)
INT_DIVISIONS = [
    ("What was our trip cancellation rate?",
     "SELECT SUM(CASE WHEN status = 'cancelled' THEN 1 ELSE 0 END) / COUNT(*) AS rate FROM t",
     "SELECT 1.0 * SUM(CASE WHEN status = 'cancelled' THEN 1 ELSE 0 END) / COUNT(*) AS rate FROM t"),
    ("How many loans per member did we make on average?",
     "SELECT COUNT(*) / COUNT(DISTINCT member_id) AS per_member FROM t",
     "SELECT CAST(COUNT(*) AS REAL) / COUNT(DISTINCT member_id) AS per_member FROM t"),
    ("How late, in minutes, did route B26 run on average?",
     "SELECT SUM(delay_seconds) / COUNT(delay_seconds) / 60 AS minutes FROM t",
     "SELECT SUM(delay_seconds) / COUNT(delay_seconds) / 60.0 AS minutes FROM t"),
]


@pytest.mark.parametrize("question, integer_sql, decimal_sql", INT_DIVISIONS)
def test_integer_division_is_a_miscomputed_figure(question, integer_sql, decimal_sql):
    import sqlite3

    con = sqlite3.connect(":memory:")
    con.execute("CREATE TABLE t (status TEXT, member_id INTEGER, delay_seconds INTEGER)")
    con.executemany("INSERT INTO t VALUES (?, ?, ?)",
                    [("cancelled", 1, 50), ("ran", 1, 70), ("ran", 2, 90), ("ran", 3, 100), ("ran", 3, 20)])
    cut, exact = con.execute(integer_sql).fetchone()[0], con.execute(decimal_sql).fetchone()[0]
    assert isinstance(cut, int) and isinstance(exact, float) and cut != exact  # the oracle: SQLite itself
    v, d = judge(question, integer_sql, ["value"], [[cut]], f"It comes out at {cut}.")
    assert v.verdict == "partial" and d["verdict_rule"] == "the SQL computes the figure wrongly", d["verdict_rule"]
    assert "drops the fraction" in v.explanation
    v2, d2 = judge(question, decimal_sql, ["value"], [[round(exact, 2)]], f"It comes out at {round(exact, 2)}.")
    assert "drops the fraction" not in v2.explanation


#: COUNT over UNION ALL for an either/or set, three domains
UNION_ALL_COUNTS = [
    "SELECT COUNT(*) FROM (SELECT vehicle_id FROM vehicles WHERE propulsion = 'battery' UNION ALL "
    "SELECT vehicle_id FROM vehicles WHERE depot = 'Seeweid')",
    "SELECT COUNT(*) FROM (SELECT player_id FROM tries UNION ALL SELECT player_id FROM cards)",
    "SELECT COUNT(member_id) FROM (SELECT member_id FROM loans WHERE year = 2024 UNION ALL "
    "SELECT member_id FROM events_bookings WHERE year = 2024)",
]


@pytest.mark.parametrize("sql", UNION_ALL_COUNTS)
def test_a_count_over_union_all_counts_shared_rows_twice(sql):
    question = "How many are there in either group?"
    v, d = judge(question, sql, ["n"], [[167]], "There are 167.")
    assert d["verdict_rule"] == "the SQL computes the figure wrongly" and "UNION ALL" in v.explanation
    v2, d2 = judge(question, sql.replace("UNION ALL", "UNION"), ["n"], [[150]], "There are 150.")
    assert "UNION ALL" not in v2.explanation and v2.verdict == "good", v2.explanation


#: COUNT of a nullable column for a how-many, three domains: (question, COUNT(col) SQL, COUNT(*) twin)
NULLABLE_COUNTS = [
    ("How many vehicles are based at Northgate Depot?",
     "SELECT COUNT(v.battery_kwh) AS vehicles FROM vehicles v WHERE v.depot = 'Northgate Depot'",
     "SELECT COUNT(*) AS vehicles FROM vehicles v WHERE v.depot = 'Northgate Depot'"),
    ("How many matches did Carrowdale play in 2024?",
     "SELECT COUNT(attendance) AS matches FROM matches WHERE home = 'Carrowdale' AND season = 2024",
     "SELECT COUNT(match_id) AS matches FROM matches WHERE home = 'Carrowdale' AND season = 2024"),
    ("How many incidents were logged on the tram routes?",
     "SELECT COUNT(resolved_date) AS incidents FROM incidents WHERE mode = 'tram'",
     "SELECT COUNT(*) AS incidents FROM incidents WHERE mode = 'tram'"),
]


@pytest.mark.parametrize("question, nullable, twin", NULLABLE_COUNTS)
def test_count_of_a_nullable_column_for_how_many(question, nullable, twin):
    v, d = judge(question, nullable, ["n"], [[42]], "There are 42.")
    assert d["verdict_rule"] == "the SQL computes the figure wrongly" and "is NULL" in v.explanation
    v2, _ = judge(question, twin, ["n"], [[57]], "There are 57.")
    assert "is NULL" not in v2.explanation
    # the column filtered IS NOT NULL, or named by the question, counts what was asked
    col = nullable.split("COUNT(")[1].split(")")[0]
    guarded = nullable.replace(" WHERE ", f" WHERE {col} IS NOT NULL AND ")
    v3, _ = judge(question, guarded, ["n"], [[42]], "There are 42.")
    assert "is NULL" not in v3.explanation


#: a threshold the question states in other words, three domains: (question, SQL, the filter column)
STATED_THRESHOLDS = [
    ("How many departures on route B3 left more than three minutes late?",
     "SELECT COUNT(*) AS n FROM trips WHERE route = 'B3' AND delay_seconds > 180"),
    ("How many loans ran longer than two weeks?", "SELECT COUNT(*) AS n FROM loans WHERE loan_days > 14"),
    ("How many calls to the clinic lasted over 2 hours?", "SELECT COUNT(*) AS n FROM calls WHERE duration_minutes > 120"),
]


@pytest.mark.parametrize("question, sql", STATED_THRESHOLDS)
def test_a_threshold_stated_as_a_number_word_or_in_another_unit_is_no_narrowing(question, sql):
    v, d = judge(question, sql, ["n"], [[103]], "There were 103.")
    assert "narrows the set" not in v.explanation and v.verdict == "good", v.explanation
    # another number in the same place is still a filter the question does not state
    off = sql.replace("> 180", "> 240").replace("> 14", "> 21").replace("> 120", "> 90")
    v2, _ = judge(question, off, ["n"], [[61]], "There were 61.")
    assert "narrows the set" in v2.explanation, v2.explanation


def test_a_percentile_as_a_fraction_is_the_question_number():
    from axon_eval.judges.heuristic.failure_classes import threshold_stated
    assert threshold_stated("What is the 90th-percentile departure delay?", "cd", 0.9)
    assert threshold_stated("What is the 95th percentile of order values?", "pr", 0.95)
    assert threshold_stated("Which members sit in the top 10 percent by loans?", "share", 0.1)
    assert not threshold_stated("What is the 90th-percentile departure delay?", "cd", 0.8)


#: a demonym as the first part of a hyphenated compound, three domains
HYPHENATED_DEMONYMS = [
    ("How many Dutch-built buses do we run?", "manufacturer_country", "Netherlands", "We run 49 Dutch-built buses."),
    ("How many French-registered partners do we lend to?", "country", "France", "We lend to 49 French-registered partners."),
    ("How many Swiss-based clubs played in the cup?", "country", "Switzerland", "49 Swiss-based clubs played."),
]


@pytest.mark.parametrize("question, column, place, answer", HYPHENATED_DEMONYMS)
def test_a_hyphenated_demonym_is_its_place(question, column, place, answer):
    sql = f"SELECT {column}, COUNT(*) AS n FROM t WHERE {column} = '{place}' GROUP BY {column}"
    v, d = judge(question, sql, [column, "n"], [[place, 49]], answer)
    assert v.verdict == "good", (d["verdict_rule"], v.explanation)
    wrong = sql.replace(f"'{place}'", "'Belgium'")
    v2, d2 = judge(question, wrong, [column, "n"], [["Belgium", 49]], answer)
    assert v2.verdict != "good", v2.explanation


#: a several-word name asked for a snake_case category value, three domains
SNAKE_VALUES = [
    ("How many Tram Operators do we employ?", "role", "tram_operator"),
    ("How many Night Buses run on weekdays?", "service_kind", "night_bus"),
    ("How many Overdue Notices went out?", "notice_kind", "overdue_notice"),
]


@pytest.mark.parametrize("question, column, value", SNAKE_VALUES)
def test_a_name_asked_for_a_snake_case_value_is_that_value(question, column, value):
    sql = f"SELECT {column}, COUNT(*) AS n FROM t WHERE {column} = '{value}' GROUP BY {column}"
    v, d = judge(question, sql, [column, "n"], [[value, 65]], "There are 65.")
    assert v.verdict == "good" and "words joined by _" in v.explanation, v.explanation
    other = sql.replace(f"'{value}'", "'bus_driver'")
    v2, _ = judge(question, other, [column, "n"], [["bus_driver", 65]], "There are 65.")
    assert v2.verdict != "good", v2.explanation


#: a compound measure computed under its modifier's column, three domains: (question, SQL, modifier-free twin)
COMPOUND_MEASURES = [
    ("What battery capacity is based at Lindwerk Depot?",
     "SELECT SUM(battery_kwh) AS kwh FROM vehicles WHERE depot = 'Lindwerk Depot'",
     "SELECT COUNT(*) AS vehicles FROM vehicles WHERE depot = 'Lindwerk Depot'"),
    ("What is the total seating capacity of the Cardiff venues?",
     "SELECT SUM(seats) AS seats FROM venues WHERE city = 'Cardiff'",
     "SELECT COUNT(*) AS venues FROM venues WHERE city = 'Cardiff'"),
    ("What storage capacity do the Harbour branch's shelves have?",
     "SELECT SUM(storage_metres) AS metres FROM shelves WHERE branch = 'Harbour'",
     "SELECT COUNT(*) AS shelves FROM shelves WHERE branch = 'Harbour'"),
]


@pytest.mark.parametrize("question, sql, twin", COMPOUND_MEASURES)
def test_a_compound_measure_is_computed_by_its_modifiers_column(question, sql, twin):
    v, d = judge(question, sql, ["value"], [[15806]], "It comes to 15,806.")
    assert "computes nothing about capacity" not in v.explanation and v.verdict == "good", v.explanation
    v2, _ = judge(question, twin, ["value"], [[57]], "It comes to 57.")
    assert "capacity" in v2.explanation and v2.verdict != "good", v2.explanation


def test_percentile_is_no_percentage():
    from axon_eval.judges.heuristic.lexicon import DEFAULT
    pattern = DEFAULT.measures["percentage"][0]
    for q in ("What is the 90th-percentile delay?", "What is the median and the 75th percentile of fines?",
              "Give me the percentile rank of each branch."):
        assert not pattern.search(q), q
    for q in ("What percent of loans were late?", "What percentage of trips ran?", "What was the 5% trimmed share?"):
        assert pattern.search(q), q


#: two months joined under one year are one period, three domains: (question, bounded SQL for the span)
MONTH_SPANS = [
    ("How many staff members worked overtime in January or February 2025?",
     "SELECT COUNT(DISTINCT staff_id) AS n FROM shifts WHERE overtime_minutes > 0 "
     "AND shift_date >= '2025-01-01' AND shift_date < '2025-03-01'", ("2025-01-01", "2025-03-01")),
    ("How many tries did Carrowdale score from March to May 2024?",
     "SELECT COUNT(*) AS n FROM tries WHERE team = 'Carrowdale' AND match_date >= '2024-03-01' "
     "AND match_date < '2024-06-01'", ("2024-03-01", "2024-06-01")),
    ("How many loans did we make in June-August 2023?",
     "SELECT COUNT(*) AS n FROM loans WHERE loan_date >= '2023-06-01' AND loan_date < '2023-09-01'",
     ("2023-06-01", "2023-09-01")),
]


@pytest.mark.parametrize("question, sql, span", MONTH_SPANS)
def test_two_months_under_one_year_are_one_period(question, sql, span):
    from axon_eval.judges.heuristic.question import question_periods
    assert question_periods(question) == (span,)
    v, d = judge(question, sql, ["n"], [[277]], "There were 277.")
    assert v.verdict == "good", v.explanation
    # only the second month is a different period
    only_last = sql.replace(span[0], span[1][:5] + f"{int(span[1][5:7]) - 1:02d}-01")
    v2, _ = judge(question, only_last, ["n"], [[140]], "There were 140.")
    assert v2.verdict != "good", v2.explanation


#: the figure of a one-answer superlative taken from a row not at the asked end, rows keyed by numbers,
#: three domains: (question, SQL, columns, rows ordered as the SQL says, wrong answer, right answer)
FIGURE_ROWS = [
    ("Which fare zone has the fewest stops?", "SELECT zone, COUNT(*) AS stops FROM stops GROUP BY zone ORDER BY stops ASC",
     ["zone", "stops"], [[6, 21], [1, 24], [2, 28], [3, 53]],
     "Zone 3 has the fewest stops, with 53.", "Zone 6 has the fewest stops, with 21."),
    ("Which round had the highest attendance?",
     "SELECT round, SUM(attendance) AS attendance FROM matches GROUP BY round ORDER BY attendance DESC",
     ["round", "attendance"], [[7, 48210], [3, 41877], [1, 30115]],
     "Round 1 had the highest attendance, 30,115.", "Round 7 had the highest attendance, 48,210."),
    ("Which floor of the library has the fewest shelves?",
     "SELECT floor, COUNT(*) AS shelves FROM shelves GROUP BY floor ORDER BY shelves",
     ["floor", "shelves"], [[4, 12], [2, 30], [1, 41]],
     "Floor 1 has the fewest shelves: 41.", "Floor 4 has the fewest shelves: 12."),
]


@pytest.mark.parametrize("question, sql, columns, rows, wrong, right", FIGURE_ROWS)
def test_the_figure_of_a_superlative_from_another_row_is_unsupported(question, sql, columns, rows, wrong, right):
    v, d = judge(question, sql, columns, rows, wrong)
    assert v.answer_faithfulness <= 3 and v.verdict == "partial", v.explanation
    assert "of the ordered result" in v.explanation
    v2, d2 = judge(question, sql, columns, rows, right)
    assert v2.answer_faithfulness == 10 and v2.verdict == "good", v2.explanation
    # a comparison that also states the asked end's figure is no misplaced claim
    both = right.rstrip(".:") + f", against {wrong.split()[-1].rstrip('.')} at the other end."
    v3, _ = judge(question, sql, columns, rows, both)
    assert "of the ordered result" not in v3.explanation, v3.explanation


#: "how many <unit>" asks for an amount, not a count of things, three domains
AMOUNT_QUESTIONS = [
    ("How many cubic metres did commercial meters record in 2024?",
     "SELECT ROUND(SUM(volume_litres) / 1000.0, 1) AS m3 FROM readings WHERE reading_date >= '2024-01-01' "
     "AND reading_date < '2025-01-01'", 353831.3),
    ("How many kilometres did our trucks drive in 2024?",
     "SELECT ROUND(SUM(km), 1) AS km FROM trips WHERE trip_date >= '2024-01-01' AND trip_date < '2025-01-01'", 48210.4),
    ("How many kWh did the substations deliver in 2024?",
     "SELECT ROUND(SUM(kwh), 2) AS kwh FROM readings WHERE read_date >= '2024-01-01' AND read_date < '2025-01-01'", 912.25),
]


@pytest.mark.parametrize("question, sql, value", AMOUNT_QUESTIONS)
def test_how_many_of_a_unit_is_an_amount_not_a_count(question, sql, value):
    v, d = judge(question, sql, ["value"], [[value]], f"It came to {value:,}.")
    assert "not a count" not in v.explanation and v.verdict == "good", v.explanation
    from axon_eval.judges.heuristic.failure_classes import is_amount_unit
    assert not is_amount_unit("customers") and not is_amount_unit("loans") and is_amount_unit("hours")


#: a table's key named after the last word of its name ("pumping_stations.station_id"), three domains
LAST_WORD_KEYS = [
    "SELECT SUM(ps.capacity_m3) FROM pumping_stations ps JOIN deliveries c ON c.station_id = ps.station_id",
    "SELECT SUM(b.shelf_count) FROM library_branches b JOIN loans l ON l.branch_id = b.branch_id",
    "SELECT SUM(v.capacity) FROM sports_venues v JOIN matches m ON m.venue_id = v.venue_id",
]


@pytest.mark.parametrize("sql", LAST_WORD_KEYS)
def test_a_key_named_after_the_last_word_of_the_table_is_its_own(sql):
    assert analyse_sql(sql).fan_out, sql
    pre = sql.replace("JOIN deliveries c", "JOIN (SELECT DISTINCT station_id FROM deliveries) c") \
             .replace("JOIN loans l", "JOIN (SELECT DISTINCT branch_id FROM loans) l") \
             .replace("JOIN matches m", "JOIN (SELECT DISTINCT venue_id FROM matches) m")
    assert not analyse_sql(pre).fan_out, pre


#: a figure stated in cubic metres from a litres column, three domains (cell, wrong m³ statement, converted)
CUBIC_METRES = [
    ("SELECT SUM(volume_litres) AS volume FROM readings", 7305469, "7,305,469 m³", "about 7,305.5 m³"),
    ("SELECT SUM(tank_litres) AS tanks FROM tanks", 42000, "42,000 cubic metres", "42 m3"),
    ("SELECT SUM(fuel_litres) AS fuel FROM refuels", 96500, "96,500 m3", "96.5 m³"),
]


@pytest.mark.parametrize("sql, cell, wrong, right", CUBIC_METRES)
def test_a_litres_cell_stated_as_cubic_metres_is_a_unit_error(sql, cell, wrong, right):
    question = "What volume was recorded, in cubic metres?"
    alias = sql.split(" AS ")[1].split()[0]
    v, _ = judge(question, sql, [alias], [[cell]], f"The volume was {wrong}.")
    assert v.answer_faithfulness <= 3 and "converts it to m³" in v.explanation, v.explanation
    v2, _ = judge(question, sql, [alias], [[cell]], f"The volume was {right}.")
    assert v2.answer_faithfulness == 10, v2.explanation


#: "oldest"/"newest" take their end from the ordered key, three domains
OLDEST = [
    ("Which district has the oldest water mains on average?",
     "SELECT district, AVG(install_year) AS avg_install_year FROM pipes GROUP BY district ORDER BY avg_install_year DESC",
     ["district", "avg_install_year"], [["Cobble Hill", 1982.3], ["Northbank", 1981.6], ["Old Quarry", 1961.2]],
     "Cobble Hill", "Old Quarry"),
    ("Which branch opened most recently? Give the newest.",
     "SELECT branch, opened_date FROM branches ORDER BY opened_date ASC",
     ["branch", "opened_date"], [["Central", "1961-03-01"], ["Harbour", "1990-06-12"], ["Kestrel", "2019-09-30"]],
     "Central", "Kestrel"),
    ("Who is our oldest active member?",
     "SELECT member, age FROM members ORDER BY age ASC",
     ["member", "age"], [["Ada Stone", 17], ["Ben Hale", 44], ["Cora Wynn", 91]],
     "Ada Stone", "Cora Wynn"),
]


@pytest.mark.parametrize("question, sql, columns, rows, wrong, right", OLDEST)
def test_oldest_and_newest_read_the_direction_of_the_ordered_key(question, sql, columns, rows, wrong, right):
    v, d = judge(question, sql, columns, rows, f"{wrong} is the answer, as the rows show: {wrong} tops the list.")
    assert v.answer_faithfulness <= 3 and "of the ordered result" in v.explanation, v.explanation
    v2, _ = judge(question, sql, columns, rows, f"{right} is the answer, as the rows show.")
    assert "of the ordered result" not in v2.explanation, v2.explanation
    assert asked_end("Which is the oldest?", "install_year") == "min"
    assert asked_end("Which is the oldest?", "age") == "max"
    assert asked_end("Which is the oldest?", "points") is None


#: the SQL computes the figure wrongly: mean of means, LEFT JOIN made inner, the wrong date column
MISCOMPUTED_MORE = [
    # mean of means, three domains
    ("What was the average bill we issued?",
     "SELECT AVG(category_avg) AS avg_bill FROM (SELECT category, AVG(amount) AS category_avg FROM bills "
     "GROUP BY category)", "SELECT AVG(amount) AS avg_bill FROM bills", "per-group averages"),
    ("What was the average attendance across all home games?",
     "SELECT AVG(team_avg) AS attendance FROM (SELECT team, AVG(attendance) AS team_avg FROM matches GROUP BY team)",
     "SELECT AVG(attendance) AS attendance FROM matches", "per-group averages"),
    ("What is the average loan length over all loans?",
     "SELECT AVG(branch_avg) AS days FROM (SELECT branch, AVG(days) AS branch_avg FROM loans GROUP BY branch)",
     "SELECT SUM(days) * 1.0 / COUNT(*) AS days FROM loans", "per-group averages"),
    # a LEFT JOIN made inner when the question asks for every group, zeros included
    ("List every pumping station with its chlorine deliveries, zeros included.",
     "SELECT ps.name, COUNT(c.delivery_id) AS n FROM stations ps LEFT JOIN deliveries c ON c.station_id = ps.station_id "
     "WHERE c.chemical = 'chlorine' GROUP BY ps.name",
     "SELECT ps.name, COUNT(c.delivery_id) AS n FROM stations ps LEFT JOIN deliveries c ON c.station_id = ps.station_id "
     "AND c.chemical = 'chlorine' GROUP BY ps.name", "inner join"),
    ("How many tries did each team score, including teams with none?",
     "SELECT t.name, COUNT(e.event_id) AS n FROM teams t LEFT JOIN events e ON e.team_id = t.team_id "
     "WHERE e.kind = 'try' GROUP BY t.name",
     "SELECT t.name, COUNT(e.event_id) AS n FROM teams t LEFT JOIN events e ON e.team_id = t.team_id "
     "AND e.kind = 'try' GROUP BY t.name", "inner join"),
    ("Show each branch with its DVD loans, all branches.",
     "SELECT b.name, COUNT(l.loan_id) AS n FROM branches b LEFT JOIN loans l ON l.branch_id = b.branch_id "
     "WHERE l.format = 'dvd' GROUP BY b.name",
     "SELECT b.name, COUNT(l.loan_id) AS n FROM branches b LEFT JOIN loans l ON l.branch_id = b.branch_id "
     "AND l.format = 'dvd' GROUP BY b.name", "inner join"),
    # the period on another event's date column
    ("How many customer accounts were closed in 2024?",
     "SELECT COUNT(*) AS n FROM accounts WHERE status = 'closed' AND opened_date >= '2024-01-01' "
     "AND opened_date < '2025-01-01'",
     "SELECT COUNT(*) AS n FROM accounts WHERE status = 'closed' AND closed_date >= '2024-01-01' "
     "AND closed_date < '2025-01-01'", "another date"),
    ("How many parcels were delivered in March 2024?",
     "SELECT COUNT(*) AS n FROM shipments WHERE shipped_date >= '2024-03-01' AND shipped_date < '2024-04-01'",
     "SELECT COUNT(*) AS n FROM shipments WHERE delivered_date >= '2024-03-01' AND delivered_date < '2024-04-01'",
     "another date"),
    ("How many books were returned in June 2025?",
     "SELECT COUNT(*) AS n FROM loans WHERE loan_date >= '2025-06-01' AND loan_date < '2025-07-01'",
     "SELECT COUNT(*) AS n FROM loans WHERE returned_date >= '2025-06-01' AND returned_date < '2025-07-01'",
     "another date"),
]


@pytest.mark.parametrize("question, wrong, right, reason", MISCOMPUTED_MORE)
def test_more_figures_the_sql_computes_wrongly(question, wrong, right, reason):
    cols, rows = (["name", "n"], [["A", 3], ["B", 1]]) if "GROUP BY ps.name" in wrong or "GROUP BY t.name" in wrong \
        or "GROUP BY b.name" in wrong else (["value"], [[41]])
    v, d = judge(question, wrong, cols, rows, "The figures are as shown.")
    assert d["verdict_rule"] == "the SQL computes the figure wrongly" and reason in v.explanation, v.explanation
    v2, _ = judge(question, right, cols, rows, "The figures are as shown.")
    assert reason not in v2.explanation, v2.explanation


def test_a_left_join_tested_in_the_where_is_no_finding_when_no_empty_group_is_asked_for():
    sql = ("SELECT b.name, COUNT(l.loan_id) AS n FROM branches b LEFT JOIN loans l ON l.branch_id = b.branch_id "
           "WHERE l.format = 'dvd' GROUP BY b.name")
    v, _ = judge("Which branches lent DVDs?", sql, ["name", "n"], [["A", 3]], "Branch A lent 3 DVDs.")
    assert "inner join" not in v.explanation


#: correct answers the hotel set showed penalised, three domains each
def test_the_scale_of_a_rating_is_no_claim():
    for q, col, cell, answer in (
            ("What did the Lisbon hotel average on guest reviews?", "avg_score", 7.82, "It averaged 7.82 out of 10."),
            ("How do members rate the Harbour branch?", "rating", 4.4, "Members rate it 4.4 out of 5."),
            ("What is the average match rating of Carrowdale?", "rating", 6.9, "Carrowdale rate 6.9 out of 10 on average.")):
        v, d = judge(q, f"SELECT ROUND(AVG(x), 2) AS {col} FROM t", [col], [[cell]], answer)
        assert v.answer_faithfulness == 10 and d["unsupported_claims"] == [], (answer, d["unsupported_claims"])
        v2, d2 = judge(q, f"SELECT ROUND(AVG(x), 2) AS {col} FROM t", [col], [[cell]], answer.replace(str(cell), "9.1"))
        assert d2["unsupported_claims"], answer


COMPARED = [
    ("Which city's hotel used the least electricity?", "SELECT city, SUM(kwh) AS kwh FROM e GROUP BY city ORDER BY kwh",
     ["city", "kwh"], [["Lyon", 67847.1], ["Edinburgh", 71788.5]],
     "Lyon. Its hotel used 67,847.1 kWh, less than Edinburgh (71,788.5 kWh).", "Lyon. Its hotel used 67,847.1 kWh, like Edinburgh (69,000.0 kWh)."),
    ("Who stayed with us most often?", "SELECT guest, COUNT(*) AS stays FROM b GROUP BY guest ORDER BY stays DESC",
     ["guest", "stays"], [["G-47336", 23], ["G-33712", 18]],
     "Guest G-47336, with 23 stays; the next-most frequent guest stayed 18 times.",
     "Guest G-47336, with 23 stays and 18 reviews."),
    ("Which branch lent the most books?", "SELECT branch, COUNT(*) AS loans FROM l GROUP BY branch ORDER BY loans DESC",
     ["branch", "loans"], [["Harbour", 3120], ["Central", 2954]],
     "Harbour lent 3,120 books, ahead of Central at 2,954.", "Harbour lent 3,120 books, and 2,954 of them were new."),
]


@pytest.mark.parametrize("question, sql, columns, rows, compared, misattributed", COMPARED)
def test_a_sentence_comparing_rows_may_state_the_other_rows_figure(question, sql, columns, rows, compared, misattributed):
    v, d = judge(question, sql, columns, rows, compared)
    assert d["unsupported_claims"] == [], d["unsupported_claims"]
    v2, d2 = judge(question, sql, columns, rows, misattributed)
    assert d2["unsupported_claims"], misattributed


@pytest.mark.parametrize("question, sql, column", [
    ("What was the 2024 electricity use of our hotels in Italy, in MWh?",
     "SELECT city, SUM(kwh) AS kwh FROM e WHERE country = 'Italy' GROUP BY city", "kwh"),
    ("What did the depots consume last winter, in kWh?", "SELECT depot, SUM(kwh) AS kwh FROM d GROUP BY depot", "kwh"),
    ("How much did the pumps move in May, in ML?", "SELECT pump, SUM(ml) AS ml FROM p GROUP BY pump", "ml"),
])
def test_a_unit_in_the_question_is_no_name(question, sql, column):
    from axon_eval.judges.heuristic.question import profile_question
    assert not any(e.lower() in ("mwh", "kwh", "ml") for e in profile_question(question).entities)


@pytest.mark.parametrize("question, value", [
    ("How many No-Shows did we record in Q1 2025?", "no_show"),
    ("How many Check-Ins were late?", "check_in"),
    ("How many Walk-Ups joined the queue?", "walk_up"),
])
def test_a_hyphenated_name_asked_for_a_snake_case_value(question, value):
    sql = f"SELECT kind, COUNT(*) AS n FROM t WHERE kind = '{value}' GROUP BY kind"
    v, _ = judge(question.replace(" in Q1 2025", ""), sql, ["kind", "n"], [[value, 100]], "There were 100.")
    assert "words joined by _" in v.explanation, v.explanation


@pytest.mark.parametrize("question, value", [
    ("How many housekeeping hours did the Lisbon hotel log?", 746.7),
    ("How many overtime minutes did the drivers work?", 1322.5),
    ("How many ticket dollars did the club take?", 48210.5),
])
def test_how_many_with_a_unit_after_a_modifier_is_an_amount(question, value):
    v, _ = judge(question, "SELECT ROUND(SUM(x), 1) AS value FROM t", ["value"], [[value]], f"It came to {value}.")
    assert "not a count" not in v.explanation, v.explanation


MORE_STATISTICS = {
    "interquartile range": [
        ("What is the interquartile range of review scores?", "SELECT MAX(score) - MIN(score) FROM reviews",
         "SELECT q3 - q1 FROM (SELECT PERCENTILE_CONT(0.75) WITHIN GROUP (ORDER BY score) AS q3, "
         "PERCENTILE_CONT(0.25) WITHIN GROUP (ORDER BY score) AS q1 FROM reviews)"),
        ("What is the IQR of match attendance?", "SELECT MAX(attendance) - MIN(attendance) FROM matches",
         "SELECT attendance, NTILE(4) OVER (ORDER BY attendance) AS q FROM matches"),
        ("Give the inter-quartile range of loan lengths.", "SELECT AVG(days) FROM loans",
         "SELECT days, NTILE(4) OVER (ORDER BY days) AS q FROM loans"),
    ],
    "mode": [
        ("What is the most common length of stay?", "SELECT AVG(nights) FROM bookings",
         "SELECT nights, COUNT(*) AS n FROM bookings GROUP BY nights ORDER BY n DESC LIMIT 1"),
        ("What is the modal number of tries per match?", "SELECT AVG(tries) FROM matches",
         "SELECT tries, COUNT(*) AS n FROM matches GROUP BY tries ORDER BY n DESC LIMIT 1"),
        ("What is the most frequent loan duration?", "SELECT MAX(days) FROM loans",
         "SELECT days, COUNT(*) AS n FROM loans GROUP BY days ORDER BY n DESC LIMIT 1"),
    ],
    "running total": [
        ("What was the cumulative number of bookings by the end of each month?",
         "SELECT month, COUNT(*) AS n FROM bookings GROUP BY month",
         "SELECT month, SUM(COUNT(*)) OVER (ORDER BY month) AS n FROM bookings GROUP BY month"),
        ("Show the running total of tries for each round.", "SELECT round, COUNT(*) FROM tries GROUP BY round",
         "SELECT round, SUM(COUNT(*)) OVER (ORDER BY round) FROM tries GROUP BY round"),
        ("What were cumulative loans per week in June?", "SELECT week, COUNT(*) FROM loans GROUP BY week",
         "SELECT a.week, (SELECT COUNT(*) FROM loans b WHERE b.week <= a.week) FROM loans a GROUP BY a.week"),
    ],
}


@pytest.mark.parametrize("name", sorted(MORE_STATISTICS))
def test_more_named_statistics_in_three_domains(name):
    for question, neighbour, right in MORE_STATISTICS[name]:
        gaps = statistic_gaps(question, neighbour, analyse_sql(neighbour), 1)
        assert any(f" {name} " in g for g in gaps), (question, gaps)
        assert not any(f" {name} " in g for g in statistic_gaps(question, right, analyse_sql(right), 1)), right


#: a complete result not ordered by the figure's column: the figure must be that column's extreme
EXTREME_ROWS = [
    ("Which hotel earned the best average guest score?",
     "SELECT hotel, COUNT(*) AS reviews, AVG(score) AS avg_score FROM r GROUP BY hotel ORDER BY reviews DESC",
     ["hotel", "reviews", "avg_score"], [["Berlin Mitte", 581, 7.21], ["Rome", 555, 7.48], ["Florence", 402, 8.29]],
     "Berlin Mitte earned the best average guest score, 7.21.", "Florence earned the best average guest score, 8.29."),
    ("Which month was the busiest for arrivals?",
     "SELECT month, COUNT(*) AS arrivals FROM b GROUP BY month ORDER BY month",
     ["month", "arrivals"], [["01", 66], ["02", 64], ["05", 76]],
     "January was the busiest month for arrivals, with 66.", "May was the busiest month for arrivals, with 76."),
    ("Which team conceded the fewest points?",
     "SELECT team, SUM(points_against) AS points_against FROM g GROUP BY team",
     ["team", "points_against"], [["Highmoor", 171], ["Duncliff", 158], ["Thornmere", 161]],
     "Highmoor conceded the fewest points, 171.", "Duncliff conceded the fewest points, 158."),
]


@pytest.mark.parametrize("question, sql, columns, rows, wrong, right", EXTREME_ROWS)
def test_a_superlatives_figure_must_be_the_complete_results_extreme(question, sql, columns, rows, wrong, right):
    v, d = judge(question, sql, columns, rows, wrong)
    assert v.answer_faithfulness <= 3 and "complete result" in v.explanation, v.explanation
    v2, _ = judge(question, sql, columns, rows, right)
    assert "complete result" not in v2.explanation and v2.answer_faithfulness == 10, v2.explanation
    # a cut result cannot show the extreme: no finding
    v3, _ = judge(question, sql, columns, rows, wrong, row_count=40)
    assert "complete result" not in v3.explanation


@pytest.mark.parametrize("question, sql", [
    ("What is the average cleanliness score of our reviews?", "SELECT AVG(COALESCE(cleanliness, 0)) AS v FROM reviews"),
    ("What was the average attendance at home games?", "SELECT AVG(IFNULL(attendance, 0)) AS v FROM matches"),
    ("What is the average fine per loan?", "SELECT AVG(COALESCE(fine_cents, 0)) AS v FROM loans"),
])
def test_a_mean_that_fills_missing_values_with_zero_is_miscomputed(question, sql):
    v, d = judge(question, sql, ["v"], [[6.4]], "It is 6.4.")
    assert d["verdict_rule"] == "the SQL computes the figure wrongly" and "counts every missing value as 0" in v.explanation
    plain = sql.replace("COALESCE(", "").replace("IFNULL(", "").replace(", 0)", "")
    v2, _ = judge(question, plain, ["v"], [[7.1]], "It is 7.1.")
    assert v2.verdict == "good", v2.explanation
    # a question that asks for missing values as zeros gets what it asked
    v3, _ = judge(question.rstrip("?") + ", counting missing ones as zero?", sql, ["v"], [[6.4]], "It is 6.4.")
    assert "counts every missing value as 0" not in v3.explanation


#: an average answered by a SUM that never divides (targeting's check, not statistic_gaps), three domains
AVERAGE_BY_SUM = [
    ("What was the average attendance at home games?", "SELECT SUM(attendance) AS attendance FROM matches",
     "SELECT AVG(attendance) AS attendance FROM matches"),
    ("What is the mean basket size?", "SELECT SUM(items) AS items FROM orders",
     "SELECT SUM(items) * 1.0 / COUNT(*) AS items FROM orders"),
    ("What was the average fine per overdue loan?", "SELECT SUM(fine_cents) AS fine_cents FROM loans",
     "SELECT ROUND(AVG(fine_cents), 2) AS fine_cents FROM loans"),
]


@pytest.mark.parametrize("question, neighbour, right", AVERAGE_BY_SUM)
def test_an_average_answered_by_a_sum_is_a_different_question(question, neighbour, right):
    v, d = judge(question, neighbour, ["value"], [[48210]], "It was 48,210.")
    assert v.verdict != "good" and "never divides" in d["verdict_rule"], (question, d["verdict_rule"])
    v_ok, d_ok = judge(question, right, ["value"], [[48210]], "It was 48,210.")
    assert "never divides" not in v_ok.explanation, question


def test_a_total_answered_by_an_average_through_the_judge():
    for question, sql in (("What was the total attendance at home games?", "SELECT AVG(attendance) AS value FROM matches"),
                          ("What did customers spend in total?", "SELECT ROUND(AVG(order_total), 2) AS value FROM orders"),
                          ("How many kilometres did the trucks drive altogether?", "SELECT AVG(km) AS value FROM trips")):
        v, d = judge(question, sql, ["value"], [[48210]], "It came to 48,210.")
        assert v.verdict == "partial", question
        assert d["verdict_rule"] == "the SQL computes a neighbour of the statistic or position asked for", question
        assert "the question asks for a total but the SQL computes AVG" in v.explanation
    # a question about an average total ("average order total") is no total asked
    assert statistic_gaps("What is the average order total?", "SELECT AVG(order_total) FROM orders",
                          analyse_sql("SELECT AVG(order_total) FROM orders"), 1) == []
    # "mean" as a verb is no statistic
    q = "What do we mean by an active member? How many are there?"
    assert statistic_gaps(q, "SELECT COUNT(*) FROM members", analyse_sql("SELECT COUNT(*) FROM members"), 1) == []


#: a one-word name as a sentence's subject, in three domains: (question, columns, rows, invented name,
#: the name the rows hold at the asked end)
SUBJECT_NAMES = [
    ("Which branch lent the most books?", ["branch", "loans"], [["Harbour", 3120], ["Central", 2954]],
     "Kestrel", "Harbour"),
    ("Which team scored the most tries?", ["team", "tries"], [["Carrowdale", 41], ["Thornmere", 39]],
     "Greywater", "Carrowdale"),
    ("Which substation logged the highest peak load?", ["substation", "peak_mw"],
     [["Beverley", 88.4], ["Cottingham", 71.2]], "Hessle", "Beverley"),
]


@pytest.mark.parametrize("question, columns, rows, invented, right", SUBJECT_NAMES)
def test_a_one_word_name_opening_a_sentence_is_a_claim(question, columns, rows, invented, right):
    sql = f"SELECT {columns[0]}, {columns[1]} FROM t GROUP BY {columns[0]} ORDER BY {columns[1]} DESC"
    figure = rows[0][1]
    v_bad, d_bad = judge(question, sql, columns, rows, f"{invented} had the most, with {figure}.")
    assert invented in " ".join(d_bad["unsupported_claims"]), d_bad["unsupported_claims"]
    assert v_bad.answer_faithfulness <= 3 and v_bad.verdict == "partial"
    v_ok, d_ok = judge(question, sql, columns, rows, f"{right} had the most, with {figure}.")
    assert d_ok["unsupported_claims"] == [] and v_ok.answer_faithfulness == 10 and v_ok.verdict == "good"
    # a sentence starter that is no subject of a claim verb is no name
    v_st, d_st = judge(question, sql, columns, rows, f"Overall, {right} came first. Together they had {figure}.")
    assert d_st["unsupported_claims"] == [], d_st["unsupported_claims"]


# ---------------------------------------------------------------------------------------------
# correct answers the judge penalised; each in three domains, with a
# defect twin the judge must still catch
# ---------------------------------------------------------------------------------------------
def subscores(v):
    return (v.intent_understood, v.sql_quality, v.result_relevance, v.answer_faithfulness)


DEMONYM_FILTERS = [
    # (question with an adjective, SQL filtering the place, rows, answer, a wrong place for the twin)
    ("How many tries did the Welsh clubs score in 2024?",
     "SELECT c.country, COUNT(*) AS tries FROM tries t JOIN clubs c ON c.club_id = t.club_id "
     "WHERE c.country = 'Wales' AND t.match_date >= '2024-01-01' AND t.match_date < '2025-01-01' GROUP BY c.country",
     ["country", "tries"], [["Wales", 212]], "The clubs scored 212 tries in 2024.", "Ireland"),
    ("What did our Spanish customers spend in total?",
     "SELECT c.country, ROUND(SUM(o.amount), 2) AS spend FROM orders o JOIN customers c "
     "ON c.customer_id = o.customer_id WHERE c.country = 'Spain' GROUP BY c.country",
     ["country", "spend"], [["Spain", 48210.5]], "They spent 48,210.50 in total.", "Italy"),
    ("How many containers went to Dutch ports?",
     "SELECT p.country, COUNT(*) AS containers FROM shipments s JOIN ports p ON p.port_id = s.port_id "
     "WHERE p.country = 'Netherlands' GROUP BY p.country",
     ["country", "containers"], [["Netherlands", 1377]], "1,377 containers went there.", "Belgium"),
]


@pytest.mark.parametrize("question, sql, columns, rows, answer, wrong", DEMONYM_FILTERS)
def test_demonym_in_the_question_is_answered_by_a_filter_on_its_place(question, sql, columns, rows, answer, wrong):
    v, h = judge(question, sql, columns, rows, answer)
    assert subscores(v) == (10, 10, 10, 10) and v.verdict == "good", v.explanation
    # twin: the same adjective answered by another place is still a wrong scope
    place = rows[0][0]
    v2, _ = judge(question, sql.replace(f"'{place}'", f"'{wrong}'"), columns, [[wrong, rows[0][1]]], answer)
    assert v2.intent_understood < 10 and v2.verdict != "good", v2.explanation


DEMONYM_ANSWERS = [
    # (question, SQL, columns, rows, answer naming the adjective, the adjective of another place)
    ("Which of our partners is in Sweden, and how many requests did we send it?",
     "SELECT p.name, p.country, COUNT(*) AS requests FROM requests r JOIN partners p ON p.partner_id = r.partner_id "
     "WHERE p.country = 'Sweden' GROUP BY p.name, p.country",
     ["name", "country", "requests"], [["Kungliga Uppsala", "Sweden", 46]],
     "Our one Swedish partner is Kungliga Uppsala; we sent it 46 requests.", "Norwegian"),
    ("Compare revenue from Germany and Portugal.",
     "SELECT c.country, SUM(o.amount) AS revenue FROM orders o JOIN customers c ON c.customer_id = o.customer_id "
     "WHERE c.country IN ('Germany', 'Portugal') GROUP BY c.country ORDER BY c.country",
     ["country", "revenue"], [["Germany", 9120], ["Portugal", 4410]],
     "Revenue from German buyers was 9,120 and from Portuguese buyers 4,410.", "Polish"),
    ("How many patients came from France and Italy?",
     "SELECT p.country, COUNT(*) AS patients FROM patients p WHERE p.country IN ('France', 'Italy') "
     "GROUP BY p.country ORDER BY p.country",
     ["country", "patients"], [["France", 31], ["Italy", 27]],
     "We saw 31 French patients and 27 Italian ones.", "Austrian"),
]


@pytest.mark.parametrize("question, sql, columns, rows, answer, other", DEMONYM_ANSWERS)
def test_demonym_in_the_answer_is_supported_by_its_place_in_the_rows(question, sql, columns, rows, answer, other):
    v, _ = judge(question, sql, columns, rows, answer)
    assert v.answer_faithfulness == 10 and v.verdict == "good", v.explanation
    # twin: the adjective of a place no row holds is an unsupported name
    import re as _re
    first = _re.search(r"\b(Swedish|German|French)\b", answer).group(1)
    v2, _ = judge(question, sql, columns, rows, answer.replace(first, other))
    assert v2.answer_faithfulness <= 3 and v2.verdict != "good", v2.explanation


def test_demonym_lexicon_maps_adjectives_and_is_not_a_domain_lexicon():
    from axon_eval.judges.heuristic.lexicon import available_lexicons, load_lexicon

    lex = load_lexicon("none")  # the core alone still reads demonyms
    assert lex.places_of("French") == ("france",) and lex.places_of("Spanish") == ("spain",)
    assert "portugal" in lex.places_of("portuguese") and lex.places_of("Kestrel") == ()
    assert "demonyms" not in available_lexicons()
    with pytest.raises(ValueError, match="no heuristic lexicon 'demonyms'"):
        load_lexicon("demonyms")


CURRENCY_NEXT_TO_NAME = [
    # (question, SQL, columns, rows, answer with a code/unit between name and figure, a fabricated name)
    ("What did each of our stores take in 2024?",
     "SELECT s.name, s.currency, ROUND(SUM(o.amount), 2) AS takings FROM orders o JOIN stores s ON s.store_id = o.store_id "
     "WHERE o.order_date >= '2024-01-01' AND o.order_date < '2025-01-01' GROUP BY s.name, s.currency ORDER BY takings DESC",
     ["name", "currency", "takings"], [["Valencia Store", "EUR", 7897.5], ["Lisbon Store", "EUR", 6120.25]],
     "In 2024: Valencia Store EUR 7,897.50; Lisbon Store EUR 6,120.25.", ("Valencia Store", "Madrid Store")),
    ("How much did each hub bill us in 2024?",
     "SELECT h.name, h.currency, ROUND(SUM(i.amount), 2) AS billed FROM invoices i JOIN hubs h ON h.hub_id = i.hub_id "
     "WHERE i.invoice_date >= '2024-01-01' AND i.invoice_date < '2025-01-01' GROUP BY h.name, h.currency ORDER BY h.name",
     ["name", "currency", "billed"], [["Felixstowe Hub", "GBP", 3271.82], ["Gothenburg Hub", "SEK", 1040.53]],
     "Felixstowe Hub GBP 3,271.82 and Gothenburg Hub SEK 1,040.53 in 2024.", ("Gothenburg Hub", "Malmo Hub")),
    ("How much energy did each substation deliver in 2024?",
     "SELECT s.name, SUM(r.mwh) AS mwh FROM readings r JOIN substations s ON s.substation_id = r.substation_id "
     "WHERE r.read_date >= '2024-01-01' AND r.read_date < '2025-01-01' GROUP BY s.name ORDER BY mwh DESC",
     ["name", "mwh"], [["Northgate Substation", 310], ["Eastfield Substation", 275]],
     "Northgate Substation MWh 310, Eastfield Substation MWh 275.", ("Eastfield Substation", "Westfield Substation")),
]


@pytest.mark.parametrize("question, sql, columns, rows, answer, swap", CURRENCY_NEXT_TO_NAME)
def test_currency_code_or_unit_next_to_a_figure_is_not_part_of_the_name(question, sql, columns, rows, answer, swap):
    v, _ = judge(question, sql, columns, rows, answer)
    assert v.answer_faithfulness == 10 and v.verdict == "good", v.explanation
    v2, _ = judge(question, sql, columns, rows, answer.replace(*swap))
    assert v2.answer_faithfulness <= 3, v2.explanation  # a fabricated name before the code is still caught
    assert f'"{swap[1]}"' in v2.explanation  # named without the code


def test_extract_names_stops_at_a_code_next_to_a_figure_only():
    from axon_eval.judges.heuristic.text import extract_names

    names = lambda t: [m.token for m in extract_names(t)]  # noqa: E731
    assert names("We paid Norwich Millennium GBP 1,483.51 in 2024.") == ["Norwich Millennium"]
    assert names("We drew 310 MWh Northgate Grid") == ["Northgate Grid"]
    assert names("A parcel for DHL Express arrived.") == ["DHL Express"]  # no figure: the acronym stays


COLUMN_WORDS = [
    # (question with a plural/capitalised column word, SQL, columns, rows, answer)
    ("How many Seniors are members?",
     "SELECT member_type, COUNT(*) AS member_count FROM members WHERE member_type = 'senior' GROUP BY member_type",
     ["member_type", "member_count"], [["senior", 354]], "354 Seniors are members."),
    ("How many SKUs are in the Garden category?",
     "SELECT category, COUNT(DISTINCT sku) AS sku FROM products WHERE category = 'Garden' GROUP BY category",
     ["category", "sku"], [["Garden", 88]], "The Garden category has 88 SKUs."),
    ("How many Props did the club field in 2024?",
     "SELECT position, COUNT(DISTINCT player_id) AS players FROM appearances WHERE position = 'prop' "
     "AND match_date >= '2024-01-01' AND match_date < '2025-01-01' GROUP BY position",
     ["position", "players"], [["prop", 9]], "The club fielded 9 Props in 2024."),
    ("How many Pallets does the Leeds depot hold?",
     "SELECT d.name, COUNT(*) AS pallet FROM pallets p JOIN depots d ON d.depot_id = p.depot_id "
     "WHERE d.name = 'Leeds' GROUP BY d.name",
     ["name", "pallet"], [["Leeds", 143]], "Leeds holds 143 Pallets."),
]


@pytest.mark.parametrize("question, sql, columns, rows, answer", COLUMN_WORDS)
def test_plural_or_capitalised_column_word_is_not_an_entity(question, sql, columns, rows, answer):
    v, _ = judge(question, sql, columns, rows, answer)
    assert subscores(v) == (10, 10, 10, 10) and v.verdict == "good", v.explanation


def test_a_one_word_name_that_is_no_sql_word_is_still_an_absent_entity():
    # twin of the column-word rule: "Brixton" is neither a column, a table nor a literal
    v, _ = judge("How many SKUs does Brixton stock?",
                 "SELECT COUNT(DISTINCT sku) AS sku FROM products", ["sku"], [[412]], "412 SKUs.")
    assert v.intent_understood < 10 and "Brixton" in v.explanation


DERIVED_TOTALS = [
    ("How many items did each French partner send, and how many in all?",
     "SELECT p.name, SUM(r.items) AS items FROM requests r JOIN partners p ON p.partner_id = r.partner_id "
     "WHERE p.country = 'France' GROUP BY p.name ORDER BY items DESC",
     ["name", "items"], [["Bibliotheque de Lyon", 413], ["Mediatheque Nantes", 270]],
     "Bibliotheque de Lyon sent 413 items and Mediatheque Nantes 270, {} in all.", 413 + 270),
    ("How many tries did Bastian and Corrigan score in 2024, separately and together?",
     "SELECT player, COUNT(*) AS tries FROM tries WHERE player IN ('Bastian', 'Corrigan') "
     "AND match_date >= '2024-01-01' AND match_date < '2025-01-01' GROUP BY player ORDER BY player",
     ["player", "tries"], [["Bastian", 14], ["Corrigan", 9]],
     "In 2024 Bastian scored 14 tries and Corrigan 9: {} together.", 14 + 9),
    ("How many pallets did Leeds and York ship in March 2025, and in total?",
     "SELECT d.name, COUNT(*) AS pallets FROM shipments s JOIN depots d ON d.depot_id = s.depot_id "
     "WHERE d.name IN ('Leeds', 'York') AND s.ship_date >= '2025-03-01' AND s.ship_date < '2025-04-01' "
     "GROUP BY d.name ORDER BY d.name",
     ["name", "pallets"], [["Leeds", 1085], ["York", 472]],
     "In March 2025 Leeds shipped 1,085 pallets and York 472, {:,} in total.", 1085 + 472),
]


@pytest.mark.parametrize("question, sql, columns, rows, answer, total", DERIVED_TOTALS)
def test_total_derived_from_the_shown_rows_is_supported(question, sql, columns, rows, answer, total):
    v, _ = judge(question, sql, columns, rows, answer.format(total))
    assert subscores(v) == (10, 10, 10, 10) and v.verdict == "good", v.explanation
    v2, _ = judge(question, sql, columns, rows, answer.format(total + 10))  # a wrong sum
    assert v2.answer_faithfulness <= 3, v2.explanation


def _listing(prefix, n, shown=20):
    return [[1000 + 7 * i, f"{prefix} {chr(65 + i)}"] for i in range(shown)], n  # no cell holds 20 or n


LISTING_COUNTS = [
    ("How many orders were returned in Q1 2025?",
     # filtered on the return's own date: the order date would count orders placed, not returned, in Q1
     "SELECT o.order_id, o.customer FROM orders o WHERE o.status = 'returned' "
     "AND o.returned_date >= '2025-01-01' AND o.returned_date < '2025-04-01' ORDER BY o.order_id",
     ["order_id", "customer"], "Customer", 277, "{} orders were returned in Q1 2025."),
    ("How many appointments were missed in 2024?",
     "SELECT a.appointment_id, a.clinic FROM appointments a WHERE a.status = 'missed' "
     "AND a.slot_date >= '2024-01-01' AND a.slot_date < '2025-01-01' ORDER BY a.appointment_id",
     ["appointment_id", "clinic"], "Clinic", 182, "{} appointments were missed in 2024."),
    ("How many players made their debut in 2024?",
     "SELECT p.player_id, p.name FROM players p WHERE p.debut_date >= '2024-01-01' AND p.debut_date < '2025-01-01' "
     "ORDER BY p.player_id",
     ["player_id", "name"], "Player", 64, "{} players made their debut in 2024."),
]


@pytest.mark.parametrize("question, sql, columns, prefix, total, answer", LISTING_COUNTS)
def test_count_from_a_listings_full_row_count_is_sound(question, sql, columns, prefix, total, answer):
    rows, n = _listing(prefix, total)
    v, h = judge(question, sql, columns, rows, answer.format(n), row_count=n)
    assert subscores(v) == (10, 10, 10, 10) and v.verdict == "good", v.explanation
    # twins: the 20 shown rows' count is not supported (at best unverifiable); another count keeps the -3
    v2, _ = judge(question, sql, columns, rows, answer.format(20), row_count=n)
    assert v2.answer_faithfulness < 10 and v2.verdict != "good", v2.explanation
    v3, _ = judge(question, sql, columns, rows, answer.format(n - 5), row_count=n)
    assert v3.sql_quality == 7, v3.explanation


SHARES = [
    # (question, SQL computing a share or a frequency, columns, rows, answer)
    ("What share of 2023 orders were returned?",
     "SELECT ROUND(AVG(CASE WHEN status = 'returned' THEN 1.0 ELSE 0.0 END), 3) AS returned_fraction FROM orders "
     "WHERE order_date >= '2023-01-01' AND order_date < '2024-01-01'",
     ["returned_fraction"], [[0.204]], "20.4% of 2023 orders were returned."),
    ("What proportion of appointments in 2024 were missed?",
     "SELECT ROUND(AVG(CASE WHEN status = 'missed' THEN 1 ELSE 0 END), 3) AS missed FROM appointments "
     "WHERE slot_date >= '2024-01-01' AND slot_date < '2025-01-01'",
     ["missed"], [[0.087]], "8.7% of the 2024 appointments were missed."),
    ("How often did Bastian score a try in 2024?",
     "SELECT player, COUNT(*) AS tries FROM tries WHERE player = 'Bastian' "
     "AND match_date >= '2024-01-01' AND match_date < '2025-01-01' GROUP BY player",
     ["player", "tries"], [["Bastian", 14]], "Bastian scored 14 tries in 2024."),
]


@pytest.mark.parametrize("question, sql, columns, rows, answer", SHARES)
def test_share_computed_as_a_mean_of_a_condition_and_how_often_as_a_count(question, sql, columns, rows, answer):
    v, _ = judge(question, sql, columns, rows, answer)
    assert subscores(v) == (10, 10, 10, 10) and v.verdict == "good", v.explanation


def test_share_answered_by_a_bare_count_still_misses_the_percentage():
    v, _ = judge("What share of 2023 orders were returned?",
                 "SELECT COUNT(*) AS returned FROM orders WHERE status = 'returned' "
                 "AND order_date >= '2023-01-01' AND order_date < '2024-01-01'",
                 ["returned"], [[412]], "412 orders were returned in 2023.")
    assert v.intent_understood < 10 and "percentage" in v.explanation
