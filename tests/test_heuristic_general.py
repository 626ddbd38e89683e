"""The heuristic judge outside rugby: every case of the out-of-domain review, in three domains each
(sports, retail, finance), plus the number parser, the lexicons, the spec form and the v2 prompt.

The turns here are written by hand for these tests; none comes from a fixture generator, and no
check was tuned to them (they state the classes of error the checks must handle).
"""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from axon_eval.evidence import Turn, split_segments
from axon_eval.judges import build_judge, load_prompt
from axon_eval.judges import heuristic as hc
from axon_eval.judges.heuristic import HeuristicJudge
from axon_eval.view import render_view

#: sha256 of prompts/judge_v2.md. Editing the prompt requires a new version file, not a new hash here.
JUDGE_V2_SHA256 = "9ca1e47f2eac811ee2924852b28f11788869f851346820fcabd1bbd6cbe0491f"


def make_view(question, steps, answer="", horizon=20):
    turn = Turn.model_validate({
        "schema_version": 1, "turn_id": "g-1", "captured_at": "2026-07-01T00:00:00Z", "region": "eu",
        "surface": "web", "client": "c", "question": question,
        "answer": answer if answer != "" else None, "steps": steps})
    return render_view(split_segments(turn)[0], horizon)


def sql_step(sql, columns, rows, row_count=None, status="ok"):
    return {"kind": "sql", "sql": sql, "status": status, "columns": columns, "rows": rows,
            "row_count": len(rows) if row_count is None else row_count}


def judge(view, lexicon=None):
    record = HeuristicJudge(lexicon=lexicon).judge(view)
    assert record.error is None, record.error
    return record.verdict, record.extra["heuristic"]


DOMAINS = ("sports", "retail", "finance")


# ---------------------------------------------------------------------------------------------
# the number parser
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("text,token,value", [
    ("revenue of $1.2M", "$1.2M", 1.2e6),
    ("we spent $845K", "$845K", 845e3),
    ("3.4bn impressions", "3.4bn", 3.4e9),
    ("about 12k orders", "12k", 12e3),
    ("a $5B market", "$5B", 5e9),
    ("10mn users", "10mn", 10e6),
    ("1.2 million fans", "1.2 million", 1.2e6),
    ("€2,500.75 in fees", "€2,500.75", 2500.75),
    ("£3.10 each", "£3.10", 3.10),
    ("a loss of -$5.20", "-$5.20", -5.20),
    ("net income was (1,234)", "(1,234)", -1234.0),
    ("net income was ($1.2M)", "($1.2M)", -1.2e6),
])
def test_currency_and_scale_suffixes(text, token, value):
    m = [n for n in hc.extract_numbers(text) if n.token == token]
    assert m, [n.token for n in hc.extract_numbers(text)]
    assert m[0].value == pytest.approx(value)


def test_percent_points_and_basis_points():
    pct, pp, bps = hc.extract_numbers("7.35%, up 0.53pp, or 53 bps")
    assert (pct.kind, pct.value, pct.percent) == ("percent", 7.35, True)
    assert (pp.kind, pp.value, pp.percent) == ("pp", 0.53, True)
    assert (bps.kind, bps.value) == ("bps", 53.0)
    assert hc.extract_numbers("a 2.5 percentage points gap")[0].kind == "pp"
    cell = [hc.Cell(0.0053, (), "row", 1, 0)]
    assert hc.number_support(bps, cell)[0] == hc.SUPPORTED        # 53 bps <- a fraction 0.0053
    assert hc.number_support(pp, cell)[0] == hc.SUPPORTED         # 0.53 pp <- the same fraction


def test_brackets_are_negative_only_where_a_value_stands():
    assert [n.value for n in hc.extract_numbers("Al Bo (2), Cy Do (1)")] == [2.0, 1.0]
    aside = hc.extract_numbers("California ($274,384.16), Texas ($249,168.44) and Florida.")
    assert [n.value for n in aside] == [274384.16, 249168.44]
    ledger = hc.extract_numbers("gross sales 314,060.72; refunds (69,789.79); net income (35,209.07).")
    assert [n.value for n in ledger] == [314060.72, -69789.79, -35209.07]


def test_abbreviated_figures_match_rounded_cells_never_truncated_ones():
    # 1,250,000.5 rounds to $1.25M (precise: 0.5 away) and to $1.3M (49,999.5 away,
    # more than 1% of it: supported, but said to be too coarse); it does not round to $1.2M (50,000.5
    # away, more than the half-unit 50,000), which the old truncation rule accepted
    cells = [hc.Cell(1250000.5, ("revenue",), "row", 1, 0)]
    assert hc.number_support(hc.extract_numbers("$1.25M")[0], cells) == (hc.SUPPORTED, "matches a retrieved value")
    status, reason = hc.number_support(hc.extract_numbers("$1.3M")[0], cells)
    assert status == hc.SUPPORTED and reason.startswith("imprecise: ") and "±50,000 (4% of 1,250,000" in reason
    assert hc.number_support(hc.extract_numbers("$1.2M")[0], cells)[0] == hc.UNSUPPORTED
    assert hc.number_support(hc.extract_numbers("$1.5M")[0], cells)[0] == hc.UNSUPPORTED
    assert hc.number_support(hc.extract_numbers("$125K")[0], cells)[0] == hc.UNSUPPORTED  # scale


def test_a_coarse_figure_is_named_in_the_explanation():
    q, sql = CODE_CASES["retail"][:2]
    v, _ = judge(make_view(q, [sql_step(sql, ["revenue"], [[1165086.0]])], "Texas brought in $1.2M in 2024."),
                 "retail")
    # 1,165,086 rounds to $1.2M (34,914 away: more than 1% = 11,651): supported, but too coarse to verify
    assert "too coarse to verify" in v.explanation, v.explanation
    assert "'$1.2M' is shown to ±50,000 (4.3% of 1,165,086)" in v.explanation
    assert v.answer_faithfulness == 10


def test_periods_of_a_question():
    assert hc.question_periods("orders in March 2024") == (("2024-03-01", "2024-04-01"),)
    assert hc.question_periods("revenue in Q1 2024") == (("2024-01-01", "2024-04-01"),)
    assert hc.question_periods("the first half of 2023") == (("2023-01-01", "2023-07-01"),)
    assert hc.question_periods("tries in 2022") == (("2022-01-01", "2023-01-01"),)


# ---------------------------------------------------------------------------------------------
# case 1: a correct code filter is not "wrong scope"; an unmappable one is named, unverifiable
# ---------------------------------------------------------------------------------------------
CODE_CASES = {
    "sports": ("How many tries did Harbour City score in 2024?",
               "SELECT SUM(tries) AS tries FROM team_seasons WHERE team_code = 'HC' AND year = 2024",
               ["tries"], [[47]], "Harbour City scored 47 tries in 2024."),
    "retail": ("How much revenue came from Texas in 2024?",
               "SELECT ROUND(SUM(o.total), 2) AS revenue FROM orders o JOIN customers c ON c.id = o.customer_id "
               "WHERE c.state = 'TX' AND o.order_date >= '2024-01-01' AND o.order_date < '2025-01-01'",
               ["revenue"], [[249168.44]], "Texas brought in $249,168.44 in 2024."),
    "finance": ("What were the fees booked in Germany in 2024?",
                "SELECT ROUND(SUM(amount), 2) AS fees FROM ledger WHERE country = 'DE' AND fiscal_year = 2024 "
                "AND account_type = 'fee'", ["fees"], [[18250.0]], "Fees booked in Germany came to $18,250.00."),
}


@pytest.mark.parametrize("domain", DOMAINS)
def test_code_filter_for_a_named_place_is_not_wrong_scope(domain):
    q, sql, cols, rows, answer = CODE_CASES[domain]
    v, details = judge(make_view(q, [sql_step(sql, cols, rows)], answer), domain)
    assert v.intent_understood >= 8 and v.result_relevance >= 8, v.explanation
    assert "different question" not in v.explanation and v.verdict == "good"
    # without a lexicon the code is still not "wrong": an abbreviation or an unverifiable filter
    v0, d0 = judge(make_view(q, [sql_step(sql, cols, rows)], answer), "none")
    assert "different question" not in v0.explanation and v0.verdict != "poor"


@pytest.mark.parametrize("domain,question,sql", [
    ("sports", "How many cards did Harbour City get in 2024?",
     "SELECT SUM(cards) AS cards FROM discipline WHERE club_ref = 'Q7X' AND year = 2024"),
    ("retail", "How many orders came from Springfield in 2024?",
     "SELECT COUNT(*) AS orders FROM orders WHERE store_code = 'ZK9' AND order_date LIKE '2024-%'"),
    ("finance", "What was the Northwind fund's balance at the end of 2024?",
     "SELECT balance FROM fund_balances WHERE fund_code = 'QX4' AND as_of = '2024-12-31'"),
])
def test_unmappable_code_is_named_unverifiable_never_wrong_scope(domain, question, sql):
    v, details = judge(make_view(question, [sql_step(sql, ["x"], [[12]])], "It was 12."), domain)
    assert "different question" not in v.explanation
    assert details["unverifiable_filters"] and "cannot map" in details["unverifiable_filters"][0]
    assert "unverifiable" in v.explanation


# ---------------------------------------------------------------------------------------------
# case 2: loss / decline / deficit wording carries the sign of a negative cell
# ---------------------------------------------------------------------------------------------
SIGN_CASES = {
    "sports": ("What was Saltmere's points difference in 2024?", ["points_difference"], [[-40]],
               "Saltmere finished with a deficit of 40 points.", "Saltmere finished on +40."),
    "retail": ("How much did we refund in September 2024?", ["refunded"], [[-13685.72]],
               "We paid back $13,685.72 in refunds in September 2024.",
               "Refunds brought a gain of $13,685.72 in September 2024."),
    "finance": ("What was the net result for August 2024?", ["net_income"], [[-1250000.5]],
                "August 2024 closed with a net loss of $1,250,000.50.", "August 2024 showed a profit of $1,250,000.50."),
}


@pytest.mark.parametrize("domain", DOMAINS)
def test_loss_wording_matches_a_negative_cell_and_a_gain_does_not(domain):
    q, cols, rows, good, bad = SIGN_CASES[domain]
    sql = f"SELECT {cols[0]} FROM facts WHERE period = '2024'"
    v, _ = judge(make_view(q, [sql_step(sql, cols, rows)], good), domain)
    assert v.answer_faithfulness == 10, v.explanation
    v2, d2 = judge(make_view(q, [sql_step(sql, cols, rows)], bad), domain)
    assert v2.answer_faithfulness <= 3 and d2["unsupported_claims"], v2.explanation


@pytest.mark.parametrize("domain,answer,cell,column", [
    ("sports", "Attendance fell by 1,200 on the year.", 1200.0, "attendance_change"),
    ("retail", "Net sales declined by $4,500.00 year on year.", 4500.0, "net_sales_change"),
    ("finance", "The fund posted a net loss of $2.1M.", 2100000.0, "net_income"),
])
def test_decline_wording_against_a_positive_signed_cell_is_a_sign_error(domain, answer, cell, column):
    view = make_view("How did it change in 2024?", [sql_step(f"SELECT {column} FROM t WHERE year = 2024",
                                                             [column], [[cell]])], answer)
    v, details = judge(view, domain)
    assert v.answer_faithfulness <= 3 and "sign" in v.explanation, v.explanation


# ---------------------------------------------------------------------------------------------
# case 3: a month (or quarter) range is the asked period, not a narrowing filter
# ---------------------------------------------------------------------------------------------
PERIOD_CASES = {
    "sports": ("How many matches were played in March 2024?",
               "SELECT COUNT(*) AS matches FROM matches WHERE match_date >= '2024-03-01' AND match_date < '2024-04-01'",
               ["matches"], [[14]], "14 matches were played in March 2024."),
    "retail": ("How many orders did we ship in March 2024?",
               "SELECT COUNT(*) AS orders FROM orders WHERE shipped_at >= '2024-03-01' AND shipped_at < '2024-04-01'",
               ["orders"], [[779]], "We shipped 779 orders in March 2024."),
    "finance": ("What was revenue in Q1 2024?",
                "SELECT ROUND(SUM(amount), 2) AS revenue FROM ledger WHERE posted_on BETWEEN '2024-01-01' AND "
                "'2024-03-31' AND account = 'revenue'", ["revenue"], [[612000.0]], "Q1 2024 revenue was $612K."),
}


@pytest.mark.parametrize("domain", DOMAINS)
def test_period_range_is_not_narrowing(domain):
    q, sql, cols, rows, answer = PERIOD_CASES[domain]
    v, _ = judge(make_view(q, [sql_step(sql, cols, rows)], answer), domain)
    assert v.subscores() == {"intent_understood": 10, "sql_quality": 10, "result_relevance": 10,
                             "answer_faithfulness": 10}, v.explanation
    assert "narrows" not in v.explanation and v.verdict == "good"


@pytest.mark.parametrize("domain", DOMAINS)
def test_period_range_outside_the_question_is_wrong_scope(domain):
    q, sql, cols, rows, answer = PERIOD_CASES[domain]
    other = sql.replace("2024-0", "2023-0")
    v, _ = judge(make_view(q, [sql_step(other, cols, rows)], answer), domain)
    assert v.intent_understood <= 4 and v.verdict == "poor", v.explanation


# ---------------------------------------------------------------------------------------------
# case 4: scale suffixes are read and checked in every domain
# ---------------------------------------------------------------------------------------------
SCALE_CASES = {
    "sports": ("What was total attendance in 2024?", "attendance", 1234567.0, "Total attendance was 1.2M.", "1.2M"),
    "retail": ("What did Paid Search cost in 2024?", "spend", 245209.35, "Paid Search cost $245K in 2024.", "$245K"),
    "finance": ("What were total assets at the end of 2024?", "assets", 3729085268.0,
                "Total assets were 3.7bn at the end of 2024.", "3.7bn"),
}


@pytest.mark.parametrize("domain", DOMAINS)
def test_scaled_figures_are_supported_and_wrong_ones_are_not(domain):
    q, col, cell, answer, token = SCALE_CASES[domain]
    steps = [sql_step(f"SELECT SUM({col}) AS {col} FROM facts WHERE year = 2024", [col], [[cell]])]
    v, _ = judge(make_view(q, steps, answer), domain)
    assert v.answer_faithfulness == 10, v.explanation
    wrong = answer.replace(token, token.replace("1.2", "1.9").replace("245", "309").replace("3.7", "4.7"))
    v2, d2 = judge(make_view(q, steps, wrong), domain)
    assert v2.answer_faithfulness <= 3 and v2.verdict != "good", v2.explanation


# ---------------------------------------------------------------------------------------------
# case 5: a data question answered without SQL is not "no SQL was needed"
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("domain,question,answer", [
    ("sports", "Harbour City tries 2024", "Harbour City scored 58 tries in 2024."),
    ("retail", "Show me revenue by region for last quarter", "The West led with $1.2M."),
    ("finance", "Net interest margin for the retail book in 2024", "It was 2.4%."),
])
def test_data_question_without_sql(domain, question, answer):
    v, details = judge(make_view(question, [], answer), domain)
    assert v.sql_quality <= 2 and v.verdict == "poor", v.explanation
    assert "no SQL was needed" not in v.explanation
    tools = [{"kind": "tool", "name": "list_tables", "status": "ok", "args": {}, "output": "facts\ndims"}]
    v2, _ = judge(make_view(question, tools, answer), domain)
    assert v2.sql_quality <= 2 and v2.verdict == "poor", v2.explanation


@pytest.mark.parametrize("domain,question", [
    ("sports", "Drop the matches table."), ("retail", "Delete all orders from 2023."),
    ("finance", "Change the Q3 revenue figure to 1.5M."),
])
def test_refused_write_request_needs_no_sql(domain, question):
    v, _ = judge(make_view(question, [], "I can't change data: I only have read access."), domain)
    assert v.sql_quality == 10 and v.verdict == "good", v.explanation


# ---------------------------------------------------------------------------------------------
# case 6: an invented figure that would sit in unseen rows is not full marks, and is listed
# ---------------------------------------------------------------------------------------------
UNSEEN_CASES = {
    "sports": ("How many points did Player Xx score in 2022?", ["player", "points"],
               lambda i: [f"Player {chr(65 + i)}{chr(97 + i)}", 200 - i], "Player Xx scored 9,999 points in 2022."),
    "retail": ("How many orders did Mississippi customers place in 2023?", ["state", "orders"],
               lambda i: [f"S{i:02d}", 1000 - 10 * i], "Mississippi customers placed 9,999 orders in 2023."),
    "finance": ("What was the Birch account's balance at the end of 2023?", ["account", "balance"],
                lambda i: [f"Account {i:02d}", 5000.0 + i], "The Birch account closed 2023 at $9,999.00."),
}


@pytest.mark.parametrize("domain", DOMAINS)
def test_unverifiable_claim_costs_faithfulness_and_the_good_verdict(domain):
    q, cols, row, answer = UNSEEN_CASES[domain]
    rows = [row(i) for i in range(37)]
    view = make_view(q, [sql_step(f"SELECT {', '.join(cols)} FROM facts WHERE year = 2023", cols, rows)], answer)
    v, details = judge(view, domain)
    assert v.answer_faithfulness < 10 and v.verdict != "good", v.explanation
    assert any("9,999" in c for c in details["unverifiable_claims"]) and "could not verify" in v.explanation


# ---------------------------------------------------------------------------------------------
# case 7: a LIMIT below the N the question asks for is an incomplete set
# ---------------------------------------------------------------------------------------------
LIMIT_CASES = {
    "sports": ("Who were the top 5 try scorers in 2024?", "player", "tries"),
    "retail": ("What were our top 5 states by revenue in 2024?", "state", "revenue"),
    "finance": ("Which 5 accounts had the largest balances at the end of 2024?", "account", "balance"),
}


@pytest.mark.parametrize("domain", DOMAINS)
def test_limit_below_top_n_is_incomplete(domain):
    q, key, measure = LIMIT_CASES[domain]
    sql = f"SELECT {key}, SUM({measure}) AS {measure} FROM facts WHERE year = 2024 GROUP BY {key} " \
          f"ORDER BY {measure} DESC LIMIT 3"
    rows = [["Alpha One", 30], ["Beta Two", 20], ["Gamma Three", 10]]
    v, details = judge(make_view(q, [sql_step(sql, [key, measure], rows)]), domain)
    assert v.result_relevance <= 5 and v.sql_quality <= 6, v.explanation
    assert "LIMIT 3" in v.explanation and v.verdict == "partial"


# ---------------------------------------------------------------------------------------------
# case 8: the verdict comes from the judge's findings, so it can disagree with the band
# ---------------------------------------------------------------------------------------------
FABRICATED = {
    "sports": ("How many tries did Harbour City score in 2024?", ["team", "tries"], [["Harbour City", 47]],
               "Harbour City scored 74 tries in 2024."),
    "retail": ("How much did Texas customers spend in 2024?", ["state", "revenue"], [["TX", 249168.44]],
               "Texas customers spent $349,168.44 in 2024."),
    "finance": ("What were 2024 operating expenses?", ["opex"], [[412300.15]], "2024 opex came to $512,300.15."),
}


@pytest.mark.parametrize("domain", DOMAINS)
def test_verdict_is_independent_of_the_band(domain):
    q, cols, rows, answer = FABRICATED[domain]
    sql = f"SELECT {', '.join(cols)} FROM facts f JOIN customers c ON c.id = f.customer_id WHERE year = 2024"
    view = make_view(q, [sql_step(sql, cols, rows)], answer)
    v, details = judge(view, domain)
    assert details["band"] == "good" and v.verdict == "partial"  # the cross-check disagrees, visibly
    assert details["verdict_rule"].startswith("the answer states") and v.answer_faithfulness <= 3


def test_decision_list_order():
    failed = make_view("How many orders in 2024?", [{"kind": "sql", "sql": "SELECT COUNT(*) FROM ordrs",
                                                     "status": "error", "error": "no such table"}], "")
    v, details = judge(failed, "retail")
    assert v.verdict == "poor" and "failed" in details["verdict_rule"]


# ---------------------------------------------------------------------------------------------
# lexicons, the spec form, the v2 prompt, the code hash
# ---------------------------------------------------------------------------------------------
def test_lexicons_and_spec_form():
    assert set(hc.available_lexicons()) >= {"sports", "retail", "finance", "none"}
    assert build_judge("heuristic-rules").judge_id == "heuristic-rules"
    j = build_judge("heuristic-rules(lexicon=retail)")
    assert j.judge_id == "heuristic-rules[lexicon=retail]" and j.lexicon.name == "retail"
    assert j.lexicon.expand_code("TX") == ("texas",)
    with pytest.raises(ValueError, match="available"):
        build_judge("heuristic-rules(lexicon=astrology)")
    with pytest.raises(ValueError, match="available"):
        build_judge("heuristic(lexicon=astrology)")
    # the sports words live in the sports lexicon, not in the core
    assert "tries" in hc.load_lexicon("sports").measures and "tries" not in hc.load_lexicon("none").measures


def test_judge_v2_prompt_is_pinned_and_has_no_domain_examples():
    prompt = load_prompt("judge_v2")
    assert prompt.sha256 == JUDGE_V2_SHA256 == hashlib.sha256(prompt.text.encode("utf-8")).hexdigest()
    for word in ("rugby", "tries", "try", "match", "sport", "team", "scorer"):
        assert f" {word} " not in f" {prompt.text.lower()} ", word


def test_code_hash_covers_lexicon_files():
    from axon_eval.judges.heuristic import judge as judge_module

    assert ".yaml" in judge_module.CODE_SUFFIXES and len(judge_module.heuristic_code_hash()) == 10


# ---------------------------------------------------------------------------------------------
# classes found on the out-of-domain and horizon sets (each written here in three domains)
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("text,names", [
    ("Compare Harbour City and Saltmere in 2024.", ["Harbour City", "Saltmere"]),
    ("Rank Florida and New York by revenue.", ["Florida", "New York"]),
    ("Summarise Northwind Capital's fees for 2024.", ["Northwind Capital"]),
])
def test_a_request_verb_opening_the_question_is_not_part_of_a_name(text, names):
    assert [n.token for n in hc.extract_names(text)] == names


BUNDLED_CODE_CASES = {
    "sports": ("How many players does Harbour City have? How many tries were scored in 2024?",
               "SELECT COUNT(*) AS players FROM players WHERE team_code = 'HC'", ["players"], [[31]],
               "SELECT COUNT(*) AS tries FROM events WHERE event_type = 'try' AND match_date < '2024-01-01'",
               ["tries"], [[412]]),
    "retail": ("How many customers do we have in California? What was the refund rate in 2024?",
               "SELECT COUNT(*) AS customers FROM customers WHERE state = 'CA'", ["customers"], [[809]],
               "SELECT ROUND(100.0 * SUM(refunded) / COUNT(*), 2) AS refund_rate FROM orders "
               "WHERE order_date < '2024-01-01'", ["refund_rate"], [[6.82]]),
    "finance": ("How many accounts are held in New York? What were fees in 2024?",
                "SELECT COUNT(*) AS accounts FROM accounts WHERE branch_state = 'NY'", ["accounts"], [[1204]],
                "SELECT SUM(amount) AS fees FROM ledger WHERE kind = 'fee' AND booked_on < '2024-01-01'",
                ["fees"], [[18250.0]]),
}


@pytest.mark.parametrize("domain", DOMAINS)
def test_bundled_segment_is_answered_by_its_coded_statement_and_takes_no_later_period(domain):
    """The first question names a place only as a code in the SQL ('CA') and no period; the period
    of the second question does not carry back to it, and the code grounds the right statement."""
    q, sql1, c1, r1, sql2, c2, r2 = BUNDLED_CODE_CASES[domain]
    turn = Turn.model_validate({
        "schema_version": 1, "turn_id": "g-2", "captured_at": "2026-07-01T00:00:00Z", "region": "eu",
        "surface": "mcp", "client": "c", "question": q, "answer": None,
        "steps": [sql_step(sql1, c1, r1), sql_step(sql2, c2, r2)]})
    first, second = (render_view(s, 20) for s in split_segments(turn))
    v1, d1 = judge(first, domain)
    assert d1["answer_step"] == 1 and v1.verdict == "good" and d1["band"] == "good", v1.explanation
    v2, d2 = judge(second, domain)
    assert d2["answer_step"] == 2 and "different question" in v2.explanation  # its period is wrong


AMOUNT_FOR_COUNT = {
    # (was "how many metres": a unit of an amount, which may be fractional, since amounts have units)
    "sports": ("How many tackles did Harbour City make in 2024?", "tackles", [["Harbour City", 10234.5]]),
    "retail": ("How many units of Saltmix Pro did we sell in 2024?", "total", [["Saltmix Pro", 160887.79]]),
    "finance": ("How many trades did the Northwind fund make in 2024?", "volume", [["Northwind", 1250000.5]]),
}


@pytest.mark.parametrize("domain", DOMAINS)
def test_a_count_question_answered_with_fractional_amounts_is_a_different_question(domain):
    q, col, rows = AMOUNT_FOR_COUNT[domain]
    sql = f"SELECT name, ROUND(SUM(x), 2) AS {col} FROM facts WHERE year = 2024 GROUP BY name"
    answer = f"{rows[0][0]} came to {rows[0][1]:,} in 2024."
    v, details = judge(make_view(q, [sql_step(sql, ["name", col], rows)], answer), domain)
    assert "no whole number" in v.explanation and details["band"] == "poor", v.explanation
    # a whole-number result, or a ratio asked for, is not flagged
    whole = [[rows[0][0], 412]]
    v2, _ = judge(make_view(q, [sql_step(sql, ["name", col], whole)], f"{rows[0][0]}: 412."), domain)
    assert "no whole number" not in v2.explanation
    ratio_q = q.replace("How many", "On average, how many").replace(" in 2024?", " per month in 2024?")
    v3, _ = judge(make_view(ratio_q, [sql_step(sql, ["name", col], rows)], answer), domain)
    assert "no whole number" not in v3.explanation


NARROWED_BY_CODE = {
    "sports": ("What did the 2023 pool standings look like, and how many league points did Kestrel Bay finish with?",
               "SELECT team, league_points FROM standings WHERE year = 2023 AND pool = 'A' ORDER BY league_points DESC",
               ["team", "league_points"], [["Highmoor", 32], ["Northwick Vale", 22], ["Thornmere", 26]]),
    "retail": ("What were 2024 sales by store, and how much did Lake Forest sell?",
               "SELECT store, SUM(total) AS sales FROM orders WHERE year = 2024 AND region = 'W' GROUP BY store",
               ["store", "sales"], [["Springfield", 3200.5], ["Oak Ridge", 2100.25], ["Bayside", 900.0]]),
    "finance": ("What were 2024 balances by fund, and what did Silver Creek hold?",
                "SELECT fund, balance FROM balances WHERE year = 2024 AND tier = 'T1'",
                ["fund", "balance"], [["Northwind", 120.5], ["Blue Harbor", 88.0], ["Redwood", 61.25]]),
}


@pytest.mark.parametrize("domain", DOMAINS)
def test_an_unmapped_code_filter_that_drops_the_asked_name_narrows_the_set(domain):
    """Names of the asked kind fill a column (one word or two), the asked name is not among them and a
    code filter on another column is not in the question: the filter narrowed the set."""
    q, sql, cols, rows = NARROWED_BY_CODE[domain]
    v, details = judge(make_view(q, [sql_step(sql, cols, rows)], "The top row is shown above."), domain)
    assert "narrows the set" in v.explanation and v.result_relevance <= 5, v.explanation


PER_ROW_FIGURE = {
    "sports": ("How many points did Thornmere score in 2024?", ["team", "points_for", "league_points"],
               [["Ironhollow", 305, 32], ["Thornmere", 260, 24], ["Saltmere", 245, 24]],
               "Thornmere scored 260 points."),
    "retail": ("How many orders did Texas place in 2024?", ["state", "orders", "returns"],
               [["CA", 1082, 40], ["TX", 972, 31], ["FL", 753, 22]], "Texas placed 972 orders in 2024."),
    "finance": ("How many trades did Northwind make in 2024?", ["fund", "trades", "fees"],
                [["Northwind", 412, 20], ["Redwood", 200, 9], ["Blue Harbor", 150, 7]], "Northwind made 412 trades."),
}


@pytest.mark.parametrize("domain", DOMAINS)
def test_a_figure_one_row_holds_is_not_a_total_the_rows_fail_to_reach(domain):
    q, cols, rows, answer = PER_ROW_FIGURE[domain]
    sql = f"SELECT {cols[0]}, SUM(a) AS {cols[1]}, SUM(b) AS {cols[2]} FROM facts WHERE year = 2024 GROUP BY {cols[0]}"
    v, details = judge(make_view(q, [sql_step(sql, cols, rows)], answer), domain)
    assert "incomplete" not in v.explanation and v.verdict == "good", v.explanation


LOOKUP_OF_A_MEASURE_WORD = {
    "sports": ("Who scored Highmoor's try in minute 6 of their match on 2023-04-08?",
               ["minute", "team", "player", "event_type"], [[6, "Highmoor", "Hadrian Ormesby", "try"]],
               "That try was scored by Hadrian Ormesby."),
    "retail": ("Which customer placed the refund on 2024-03-02?", ["customer", "kind"],
               [["Ada Brook", "refund"]], "Ada Brook placed that refund."),
    "finance": ("Which desk booked the fee on 2024-05-01?", ["desk", "kind"], [["Rates Desk", "fee"]],
                "The Rates Desk booked that fee."),
}


@pytest.mark.parametrize("domain", DOMAINS)
def test_a_measure_word_the_rows_hold_as_a_value_is_not_an_uncomputed_measure(domain):
    q, cols, rows, answer = LOOKUP_OF_A_MEASURE_WORD[domain]
    sql = f"SELECT {', '.join(cols)} FROM events WHERE event_date = '{q.split(' on ')[-1].rstrip('?')}'"
    v, details = judge(make_view(q, [sql_step(sql, cols, rows)], answer), domain)
    assert "computes nothing about" not in v.explanation and v.intent_understood == 10, v.explanation


@pytest.mark.parametrize("question,bound", [
    ("How many tries since 2021?", (2021, float("inf"))),
    ("Orders placed after 2021, by state", (2022, float("inf"))),
    ("Fees booked before 2024?", (float("-inf"), 2024)),
    ("Revenue through 2023 by channel", (float("-inf"), 2024)),
    ("Revenue from 2021 onwards", (2021, float("inf"))),
    ("Revenue from 2021 to 2023", None),
    ("Revenue in 2023", None),
])
def test_year_bounds_a_question_states(question, bound):
    from axon_eval.judges.heuristic.targeting import question_year_bound
    assert question_year_bound(question) == bound


YEAR_RANGE_CASES = {
    "sports": ("tries", "season_year", "How many tries were scored"),
    "retail": ("orders", "order_year", "How many orders were placed"),
    "finance": ("trades", "fiscal_year", "How many trades were booked"),
}


@pytest.mark.parametrize("domain", DOMAINS)
@pytest.mark.parametrize("when,condition,expect", [
    ("in 2024", "{col} < 2024", "different question"),       # the inequality's year is not the year it selects
    ("in 2024", "{col} >= 2024 AND {col} < 2025", None),
    ("since 2021", "{col} > 2021", "part of it"),             # drops 2021: the set is narrowed
    ("since 2021", "{col} >= 2021", None),
    ("before 2024", "{col} < 2024", None),
    ("after 2021", "{col} >= 2022", None),
])
def test_year_inequalities_are_read_as_the_years_they_select(domain, when, condition, expect):
    measure, col, stem = YEAR_RANGE_CASES[domain]
    sql = f"SELECT SUM({measure}) AS {measure} FROM facts WHERE {condition.format(col=col)}"
    v, details = judge(make_view(f"{stem} {when}?", [sql_step(sql, [measure], [[412]])], f"There were 412 {measure}."),
                       domain)
    if expect is None:
        assert "year filters" not in v.explanation and v.verdict == "good", v.explanation
    else:
        assert expect in v.explanation and "year filters" in v.explanation, v.explanation


@pytest.mark.parametrize("question,expected", [
    ("Which customers placed more than 5 orders?", [("gt", 5.0)]),
    ("Players with 10 tries or more", [("gte", 10.0)]),
    ("Funds with at most 3 trades in 2024", [("lte", 3.0)]),
    ("Products priced under $20", [("lt", 20.0)]),
    ("Revenue over the last 30 days", []),
    ("Top 5 customers in 2024", []),
])
def test_thresholds_a_question_states(question, expected):
    from axon_eval.judges.heuristic.targeting import question_thresholds
    assert question_thresholds(question) == expected


THRESHOLD_CASES = {
    "sports": ("Which players scored {cmp} tries in 2024?", "player", "HAVING COUNT(*) {op} {n}", "tries"),
    "retail": ("Which customers placed {cmp} orders in 2024?", "customer", "HAVING COUNT(*) {op} {n}", "orders"),
    "finance": ("Which accounts booked {cmp} in fees in 2024?", "account", "HAVING SUM(amount) {op} {n}", "fees"),
}


@pytest.mark.parametrize("domain", DOMAINS)
@pytest.mark.parametrize("cmp,op,n,expect", [
    ("more than 5", ">", 5, None),
    ("more than 5", ">=", 6, None),           # the same set of whole numbers
    ("more than 5", ">=", 5, "also keeps the boundary"),
    ("at least 5", ">", 5, "drops the boundary"),
    ("at least 5", ">=", 5, None),
    ("fewer than 5", "<=", 5, "also keeps the boundary"),
    ("at most 5", "<", 5, "drops the boundary"),
    ("more than 5", "<", 5, "different question"),
])
def test_a_threshold_is_compared_with_the_sql_boundary(domain, cmp, op, n, expect):
    template, key, having, measure = THRESHOLD_CASES[domain]
    question = template.format(cmp=cmp)
    sql = (f"SELECT {key}, COUNT(*) AS {measure} FROM {measure} WHERE year = 2024 GROUP BY {key} "
           f"{having.format(op=op, n=n)}")
    rows = [["Alpha One", 9], ["Beta Two", 7]]
    v, details = judge(make_view(question, [sql_step(sql, [key, measure], rows)], "Alpha One and Beta Two."),
                       domain)
    if expect is None:
        assert "boundary" not in v.explanation and "different question" not in v.explanation, v.explanation
    else:
        assert expect in v.explanation, v.explanation
        assert v.verdict == ("poor" if expect == "different question" else "partial"), v.explanation


DISTINCT_CASES = {
    "sports": ("How many different players appeared in 2024?", "player_id", "players"),
    "retail": ("How many unique customers placed orders in 2024?", "customer_id", "customers"),
    "finance": ("How many distinct accounts paid fees in 2024?", "account_id", "accounts"),
}


@pytest.mark.parametrize("domain", DOMAINS)
def test_how_many_distinct_needs_a_distinct_count(domain):
    q, key, alias = DISTINCT_CASES[domain]
    plain = f"SELECT COUNT({key}) AS {alias} FROM events WHERE year = 2024"
    v, _ = judge(make_view(q, [sql_step(plain, [alias], [[5120]])], "5,120."), domain)
    assert "without DISTINCT" in v.explanation and v.verdict == "partial", v.explanation
    distinct = f"SELECT COUNT(DISTINCT {key}) AS {alias} FROM events WHERE year = 2024"
    v2, _ = judge(make_view(q, [sql_step(distinct, [alias], [[3120]])], "3,120."), domain)
    assert "DISTINCT" not in v2.explanation, v2.explanation


AVERAGE_CASES = {
    "sports": ("What was the average number of points per match in 2024?", "points", "matches"),
    "retail": ("What was the average selling price in 2024?", "price", "order_items"),
    "finance": ("What was the average fee in 2024?", "amount", "fees"),
}


@pytest.mark.parametrize("domain", DOMAINS)
def test_an_average_asked_for_needs_an_average_or_a_division(domain):
    q, col, table = AVERAGE_CASES[domain]
    summed = f"SELECT SUM({col}) AS v FROM {table} WHERE year = 2024"
    v, details = judge(make_view(q, [sql_step(summed, ["v"], [[51200.5]])], "It was 51,200.50."), domain)
    assert "never divides" in v.explanation and details["band"] == "poor", v.explanation
    assert v.intent_understood == 3  # one finding, not the wrong scope and a missing measure both
    for ok_sql in (f"SELECT AVG({col}) AS v FROM {table} WHERE year = 2024",
                   f"SELECT SUM({col}) * 1.0 / COUNT(*) AS v FROM {table} WHERE year = 2024"):
        v2, _ = judge(make_view(q, [sql_step(ok_sql, ["v"], [[51.5]])], "It was 51.50."), domain)
        assert "never divides" not in v2.explanation, v2.explanation


UNGROUPED_CASES = {
    "sports": ("How many tries did each team score in 2024?", "team", "COUNT(*)", "tries"),
    "retail": ("What did each customer spend in 2024?", "customer", "SUM(total)", "spend"),
    "finance": ("What were the average fees per account in 2024?", "account", "AVG(amount)", "fees"),
}


@pytest.mark.parametrize("domain", DOMAINS)
def test_a_bare_column_beside_an_aggregate_without_group_by_is_a_different_question(domain):
    q, key, agg, alias = UNGROUPED_CASES[domain]
    bad = f"SELECT {key}, {agg} AS {alias} FROM events WHERE year = 2024"
    v, details = judge(make_view(q, [sql_step(bad, [key, alias], [["Alpha One", 912]])], "Alpha One: 912."), domain)
    assert "without GROUP BY" in v.explanation and details["band"] == "poor", v.explanation
    good = bad + f" GROUP BY {key}"
    v2, _ = judge(make_view(q, [sql_step(good, [key, alias], [["Alpha One", 412], ["Beta Two", 500]])],
                            "Alpha One 412, Beta Two 500."), domain)
    assert "GROUP BY" not in v2.explanation, v2.explanation
    # beside MIN/MAX SQLite returns the extreme row's value: meaningful, not flagged
    extreme = f"SELECT {key}, MAX(x) AS {alias} FROM events WHERE year = 2024"
    v3, _ = judge(make_view(q, [sql_step(extreme, [key, alias], [["Alpha One", 912]])], "Alpha One: 912."), domain)
    assert "without GROUP BY" not in v3.explanation, v3.explanation


NULL_CASES = {
    "sports": ("How many points did Saltmere score in 2024?", "SUM(points)", "points", "saltmere"),
    "retail": ("What did Texas customers spend in 2024?", "SUM(total)", "spend", "texas"),
    "finance": ("What fees did the Northwind fund pay in 2024?", "SUM(amount)", "fees", "northwind"),
}


@pytest.mark.parametrize("domain", DOMAINS)
def test_an_aggregate_of_only_nulls_is_as_empty_as_no_rows(domain):
    """One row of NULLs (SUM over no matching rows: a filter literal that matched nothing) answers
    nothing; a row with a value does."""
    q, agg, alias, literal = NULL_CASES[domain]  # a lower-case literal that matches no stored name
    sql = f"SELECT {agg} AS {alias} FROM facts WHERE name = '{literal}' AND year = 2024"
    v, details = judge(make_view(q, [sql_step(sql, [alias], [[None]])]), "none")
    assert "only NULLs" in v.explanation and v.result_relevance == 2 and v.verdict == "partial", v.explanation
    empty, _ = judge(make_view(q, [sql_step(sql, [alias], [])]), "none")
    assert "returned no rows" in empty.explanation and empty.verdict == "partial", empty.explanation
    v2, _ = judge(make_view(q, [sql_step(sql, [alias], [[412]])]), "none")
    assert "NULL" not in v2.explanation and v2.result_relevance == 10, v2.explanation


UNORDERED_LIMIT_CASES = {
    "sports": ("Which player scored the most tries in 2024?", "player", "COUNT(*)", "tries", "tries"),
    "retail": ("Who were the top 3 customers by revenue in 2024?", "customer", "SUM(total)", "revenue", "orders"),
    "finance": ("Which account paid the lowest fees in 2024?", "account", "SUM(amount)", "fees", "fees"),
}


@pytest.mark.parametrize("domain", DOMAINS)
def test_a_limit_without_order_by_does_not_rank(domain):
    q, key, agg, alias, table = UNORDERED_LIMIT_CASES[domain]
    n = 3 if "top 3" in q else 1
    rows = [["Alpha One", 5], ["Beta Two", 9], ["Gamma Three", 7]][:n]
    base = f"SELECT {key}, {agg} AS {alias} FROM {table} WHERE year = 2024 GROUP BY {key}"
    v, details = judge(make_view(q, [sql_step(f"{base} LIMIT {n}", [key, alias], rows, row_count=n)]), domain)
    assert "without ORDER BY keeps arbitrary rows" in v.explanation and details["band"] == "poor", v.explanation
    desc = "ASC" if "lowest" in q else "DESC"
    v2, _ = judge(make_view(q, [sql_step(f"{base} ORDER BY {alias} {desc} LIMIT {n}", [key, alias], rows)]), domain)
    assert "arbitrary" not in v2.explanation, v2.explanation


@settings(max_examples=60, deadline=None)
@given(n=st.integers(min_value=2, max_value=1899) | st.integers(min_value=2101, max_value=10**6),  # not year-like
       phrase=st.sampled_from(
    [("more than", "gt"), ("at least", "gte"), ("fewer than", "lt"), ("at most", "lte")]))
def test_an_equivalent_sql_boundary_is_never_a_finding(n, phrase):
    """Law: over whole numbers, "more than N" is "> N" and ">= N+1" (and so on for each operator), so the
    same set written either way raises no threshold finding, while the boundary moved by one does."""
    from axon_eval.judges.heuristic.sql_facts import analyse_sql
    from axon_eval.judges.heuristic.targeting import Targeting, _threshold_findings

    words, op = phrase
    profile = hc.profile_question(f"Which customers placed {words} {n} orders?")
    same = {"gt": [f"> {n}", f">= {n + 1}"], "gte": [f">= {n}", f"> {n - 1}"],
            "lt": [f"< {n}", f"<= {n - 1}"], "lte": [f"<= {n}", f"< {n + 1}"]}[op]
    for cond in same:
        t = Targeting()
        _threshold_findings(profile, analyse_sql(f"SELECT c FROM o GROUP BY c HAVING COUNT(*) {cond}"), t)
        assert not (t.narrowing or t.wider or t.wrong_scope), (words, n, cond)
    other = {"gt": f">= {n}", "gte": f"> {n}", "lt": f"<= {n}", "lte": f"< {n}"}[op]
    t = Targeting()
    _threshold_findings(profile, analyse_sql(f"SELECT c FROM o GROUP BY c HAVING COUNT(*) {other}"), t)
    assert t.narrowing or t.wider
