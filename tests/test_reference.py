"""Reference-based grading: the source's numeric examples, the verification of a judge's
output (criteria once, quotes present), read-only evidence, and the bundled set against its labels."""

from __future__ import annotations

from pathlib import Path

import pytest

from axon_eval.fixtures.reference import reference_set
from axon_eval.warehouses.shop import ANCHORS
from axon_eval.reference import (Assessment, EvidenceError, HeuristicReferenceJudge, JudgeOutput, NumericClaim,
                                 Question, ReadOnlyViolation, ReferenceValue, check_value, grade_response,
                                 load_questions, prepare_evidence, run_readonly)
from axon_eval.reference.evaluate import (agreement, grade_set, grade_table, load_labels, load_responses,
                                          seed_examples)
from axon_eval.reference.spec import Criterion, dump_questions
from axon_eval.warehouses.shop import shop_database

ROOT = Path(__file__).resolve().parents[1]
SHOP = shop_database(ROOT / "data")  # expanded from the committed shop.sqlite.gz
REF = ROOT / "data" / "reference"


# -- the source's numeric examples ------------------------------------------------------------------------
def test_on_time_93_74_fails_the_0_01_pp_tolerance_and_93_6_passes():
    c = check_value("93.74%", ANCHORS["on_time_rate_pct"], "percent", tolerance=0.01)
    assert not c.within_tolerance and c.error == "out_of_tolerance"
    assert c.difference == pytest.approx(0.1357) and c.rule.startswith("explicit absolute")
    assert check_value("93.6%", 93.6043, "percent", tolerance=0.01).within_tolerance


def test_refund_rate_7_10_passes_by_displayed_precision():
    c = check_value("7.10%", ANCHORS["refund_rate_pct"], "percent")
    assert c.within_tolerance and c.rule == "displayed precision" and c.tolerance == pytest.approx(0.005)


def test_five_percent_low_refund_amount_fails():
    c = check_value("465,797", ANCHORS["tanks_refunded"], "currency")
    assert not c.within_tolerance and c.error == "out_of_tolerance"
    assert c.difference / ANCHORS["tanks_refunded"] == pytest.approx(-0.0506, abs=1e-3)


def test_sign_and_scale_errors_are_named():
    sign = check_value("-42", 42, "count")
    assert not sign.within_tolerance and sign.error == "sign" and sign.reported == -42
    scale = check_value("42", 420, "count")
    assert not scale.within_tolerance and scale.error == "scale"
    assert check_value("$1,250,000.50", ANCHORS["recall_month_net_income"], "currency").error == "sign"
    assert check_value("-$1.25M", ANCHORS["recall_month_net_income"], "currency").within_tolerance


def test_suffixes_units_and_relative_fallback():
    assert check_value("$490.6k", 490636.33, "currency").within_tolerance
    assert check_value("$4.9M", 490636.33, "currency").error == "scale"
    assert check_value("0.5 pp", 0.5, "percent", declared_unit="pp").within_tolerance
    assert check_value("50 bps", 0.5, "percent", declared_unit="bps").within_tolerance
    assert check_value("7.10%", 7.0989, "percent", declared_unit="currency").error == "unit"
    assert check_value("7.10", 7.0989, "percent").error == "unit"  # a bare number is not a percentage
    rel = check_value("forty-two", 42.3, "count")
    assert rel.within_tolerance and rel.rule.startswith("1% relative")


def test_seed_examples_are_graded_as_the_source_says():
    rows = seed_examples()
    assert len(rows) == 6
    assert all(r["within_tolerance"] == r["source_says_within"] for r in rows)


# -- verifying the judge's output ---------------------------------------------------------------------------
VALUE = ReferenceValue(id="x", name="x", unit="count", sql="SELECT 42")
Q = Question(id="q", layer="descriptive", text="?", metric="m", population="p", period="2024", tolerance="display",
             values=(VALUE,),
             criteria=(Criterion(id="fig", text="states x", kind="value", value="x"),
                       Criterion(id="why", text="explains", groups=(("because",),)),
                       Criterion(id="extra", text="optional", required=False, groups=(("note",),))))
RESPONSE = "There were 42 orders, because of the sale."


def _evidence():
    from axon_eval.reference.evidence import Evidence
    return Evidence("q", values={"x": 42.0})


def _out(*assessments, claims=(NumericClaim("42", "x", "count"),)):
    return JudgeOutput("test", list(assessments), list(claims))


def test_a_clean_output_passes_and_an_optional_failure_does_not_block():
    g = grade_response(Q, _evidence(), "r", RESPONSE, _out(
        Assessment("fig", "pass", "There were 42 orders"), Assessment("why", "pass", "because of the sale."),
        Assessment("extra", "fail", reason="no note")))
    assert g.grade == "pass", g.reasons


def test_each_criterion_exactly_once():
    missing = grade_response(Q, _evidence(), "r", RESPONSE, _out(
        Assessment("fig", "pass", "42 orders"), Assessment("extra", "pass", "42 orders")))
    assert missing.grade == "error" and any("why assessed 0 times" in r for r in missing.reasons)
    twice = grade_response(Q, _evidence(), "r", RESPONSE, _out(
        Assessment("fig", "pass", "42 orders"), Assessment("why", "pass", "because"),
        Assessment("why", "fail", reason="x"), Assessment("extra", "pass", "42")))
    assert twice.grade == "error" and any("why assessed 2 times" in r for r in twice.reasons)


def test_quotes_must_occur_in_the_response_after_normalisation():
    ok = grade_response(Q, _evidence(), "r", RESPONSE, _out(
        Assessment("fig", "pass", "There  were\n42 orders"), Assessment("why", "pass", "\u201cbecause of the sale\u201d"),
        Assessment("extra", "unverifiable")))
    assert ok.grade == "review_required"  # quotes verified; the unverifiable criterion sends it to review
    bad = grade_response(Q, _evidence(), "r", RESPONSE, _out(
        Assessment("fig", "pass", "There were 42 orders"), Assessment("why", "pass", "because demand rose"),
        Assessment("extra", "fail")))
    assert bad.grade == "error" and any("quote not found" in r for r in bad.reasons)


def test_numeric_claims_are_rechecked_by_code():
    # the judge says pass, but the response says -42: a sign error, so no pass
    resp = "There were -42 orders, because of the sale."
    g = grade_response(Q, _evidence(), "r", resp, _out(
        Assessment("fig", "pass", "There were -42 orders"), Assessment("why", "pass", "because of the sale."),
        Assessment("extra", "fail"), claims=(NumericClaim("-42", "x", "count"),)))
    assert g.grade == "fail" and g.numeric_failures[0].error == "sign"
    # a claimed token that is not in the response (no dropped sign, no borrowed figure): the judge's output
    # does not verify -- an error grade, never a fail of the response
    g = grade_response(Q, _evidence(), "r", "There were 420 orders, because of the sale.", _out(
        Assessment("fig", "pass", "There were 420 orders"), Assessment("why", "pass", "because of the sale."),
        Assessment("extra", "fail"), claims=(NumericClaim("42", "x", "count"),)))
    assert g.grade == "error" and g.numeric[0].error == "token_missing" and not g.numeric_failures
    assert any("numeric claim '42' on x: token_missing" in r for r in g.reasons)
    # a value criterion passed without any numeric claim: unverifiable
    g = grade_response(Q, _evidence(), "r", RESPONSE, _out(
        Assessment("fig", "pass", "42 orders"), Assessment("why", "pass", "because"), Assessment("extra", "fail"),
        claims=()))
    assert g.grade == "review_required"


# -- coarse figures, the judge's token formatting, quotes ----------------------------------
AMOUNT = ReferenceValue(id="rev", name="revenue", unit="currency", sql="SELECT 1")
RATE = ReferenceValue(id="rate", name="refund rate", unit="percent", sql="SELECT 1")
Q2 = Question(id="q2", layer="descriptive", text="?", metric="m", population="p", period="2024", tolerance="display",
              values=(AMOUNT, RATE),
              criteria=(Criterion(id="rev", text="states revenue", kind="value", value="rev"),
                        Criterion(id="rate", text="states the refund rate", kind="value", value="rate")))


def _grade2(response, revenue, rev_token, rate_token, rev_quote, rate_quote, rate=7.0989):
    from axon_eval.reference.evidence import Evidence
    out = JudgeOutput("test", [Assessment("rev", "pass", rev_quote), Assessment("rate", "pass", rate_quote)],
                      [NumericClaim(rev_token, "rev", "currency"), NumericClaim(rate_token, "rate", "percent")])
    return grade_response(Q2, Evidence("q2", values={"rev": revenue, "rate": rate}), "r", response, out)


RESP2 = "Revenue was about $1M in 2024. The refund rate was 7.10% of orders."


def test_a_coarse_figure_is_review_required_and_a_wrong_one_fails():
    # $1M shows [0.5M, 1.5M] after rounding: 1,004,000 is within 1% (pass); 1,400,000 is consistent only
    # after rounding, 36% coarse (review required, the grade says why); 1,999,999 rounds to $2M (fail)
    args = ("$1M", "7.10%", "Revenue was about $1M in 2024", "The refund rate was 7.10% of orders")
    assert _grade2(RESP2, 1_004_000, *args).grade == "pass"
    coarse = _grade2(RESP2, 1_400_000, *args)
    assert coarse.grade == "review_required" and coarse.numeric[0].imprecise and not coarse.numeric_failures
    assert coarse.reasons == ["criterion rev unverifiable: figure too coarse to verify: '$1M' is shown to ±500,000 "
                              "(36% of 1,400,000), coarser than the 1% the code verifies to"]
    wrong = _grade2(RESP2, 1_999_999, *args)
    assert wrong.grade == "fail" and wrong.numeric_failures[0].error == "out_of_tolerance"


@pytest.mark.parametrize("written", ["7.10 %", "7.10 per cent", "7.10 percent", "7.10\u00a0%"])
def test_the_judges_token_formatting_does_not_fail_a_correct_answer(written):
    response = f"Revenue was $1,004,000 in 2024. The refund rate was {written} of orders."
    g = _grade2(response, 1_004_000, "$1,004,000", "7.10%", "Revenue was $1,004,000 in 2024",
                "The refund rate was 7.10% of orders")  # the judge cites 7.10% and quotes with it
    assert g.grade == "pass", g.reasons
    assert g.numeric[1].within_tolerance and g.numeric[1].token == "7.10%"


@pytest.mark.parametrize("quote,grade", [
    ("7", "error"),  # inside 7.10%: not a quote of the response at a word boundary
    ("7.10%", "review_required"),  # a bare figure shows nothing
    ("rate was", "review_required"),  # a word or two
    ("The REFUND rate was 7.10 per cent", "pass"),  # case and unit words normalised
    ("\u201crefund rate was 7.10%\u201d", "pass"),  # typographic quotes
])
def test_quotes_are_verified_on_normalised_text_and_short_ones_are_insufficient(quote, grade):
    g = _grade2(RESP2, 1_004_000, "$1M", "7.10%", "Revenue was about $1M in 2024", quote)
    assert g.grade == grade, g.reasons
    if grade == "review_required":
        assert g.reasons == [f"criterion rate unverifiable: insufficient quote {quote!r}: a bare figure or a word "
                             f"or two cannot show the criterion"]


def test_a_quote_with_an_em_dash_and_curly_quotes_verifies():
    response = "Revenue was about $1M in 2024\u2014the \u201cTanks & Kits\u201d refund rate was 7.10%."
    g = _grade2(response, 1_004_000, "$1M", "7.10%", "revenue was about $1M in 2024 -- the",
                'the "Tanks & Kits" refund rate was 7.10 %')  # plain marks, ASCII dashes, a spaced %
    assert g.grade == "pass", g.reasons


def test_missing_evidence_stops_grading():
    broken = Question(**{**Q.__dict__, "values": (ReferenceValue(id="x", name="x", unit="count",
                                                                 sql="SELECT nope FROM orders"),)})
    ev = prepare_evidence(broken, SHOP)
    assert not ev.ok and "no such column" in ev.error
    g = grade_response(broken, ev, "r", RESPONSE, None)
    assert g.grade == "error" and "grading stopped" in g.reasons[0]


# -- read-only evidence ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("sql", ["DELETE FROM orders", "UPDATE orders SET status = 'x'",
                                 "DROP TABLE refunds", "SELECT 1; DELETE FROM orders",
                                 "INSERT INTO categories VALUES (99, 'x')", "ATTACH DATABASE 'x' AS y"])
def test_write_statements_are_refused(sql):
    before = SHOP.stat().st_mtime_ns
    with pytest.raises(ReadOnlyViolation):
        run_readonly(SHOP, sql)
    assert SHOP.stat().st_mtime_ns == before


def test_a_write_hidden_in_a_cte_is_refused_by_sqlite():
    with pytest.raises(EvidenceError):
        run_readonly(SHOP, "WITH x AS (SELECT 1) DELETE FROM categories WHERE category_id IN (SELECT * FROM x)")


def test_every_row_of_a_reference_query_is_kept():
    questions, _, _ = reference_set()
    q = next(q for q in questions if q.id == "p_safety_stock")
    ev = prepare_evidence(q, SHOP)
    assert ev.ok and [ev.values[k] for k in ("so1", "so2", "so3")] == list(ANCHORS["stockout_days_top3"])
    assert len(ev.results["so1"]["rows"]) == 3
    q = next(q for q in questions if q.id == "d_on_time_rate")
    assert prepare_evidence(q, SHOP).values["on_time_pct"] == ANCHORS["on_time_rate_pct"]


# -- the bundled set --------------------------------------------------------------------------------------------
def test_bundled_files_match_the_generator():
    questions, responses, labels = reference_set()
    assert len(questions) >= 24 and {q.layer for q in questions} == {"descriptive", "diagnostic", "prescriptive"}
    assert load_questions(REF / "questions.yaml") == questions
    assert load_responses(REF / "responses.jsonl") == responses
    assert (REF / "questions.yaml").read_text().endswith(dump_questions(questions))
    per_q = {}
    for r in responses:
        per_q[r["question_id"]] = per_q.get(r["question_id"], 0) + 1
    assert min(per_q.values()) >= 3
    defects = {row["defect"] for row in labels}
    for needed in ("out_of_tolerance", "table_no_explanation", "number_5pct_low", "omits_holding_cost", "sign",
                   "scale", "unverified_projection", "evidence_error"):
        assert needed in defects, needed


def test_heuristic_grades_against_constructed_labels():
    questions = load_questions(REF / "questions.yaml")
    grades = grade_set(questions, load_responses(REF / "responses.jsonl"), SHOP, HeuristicReferenceJudge())
    table = grade_table(grades, load_labels(REF / "labels.csv"))
    counts = agreement(table)
    assert counts["heldout"]["false_pass"] == 0  # the goal
    assert counts["overall"]["false_pass"] == 0 and counts["overall"]["false_fail"] == 0
    by_id = table.set_index("response_id")["grade"]
    assert by_id["d_refund_rate#rounded"] == "pass" and by_id["d_on_time_rate#close"] == "fail"
    assert by_id["g_refund_category#five_pct_low"] == "fail" and by_id["g_revenue_gap#table_only"] == "fail"
    assert by_id["p_safety_stock#no_holding_cost"] == "fail" and by_id["p_carrier_mix#projection"] == "review_required"
    assert set(table.loc[table["question_id"] == "g_broken_reference", "grade"]) == {"error"}


# -- the optional Claude reference judge, against the local fake server --------------------------------------
def _claude_grades(responder, response_ids):
    import json as _json

    from axon_eval.judges.fake_server import FakeJudgeServer
    from axon_eval.reference.claude import ClaudeReferenceJudge

    questions = load_questions(REF / "questions.yaml")
    responses = [r for r in load_responses(REF / "responses.jsonl") if r["response_id"] in response_ids]
    seen: list[dict] = []

    def record(path, body):
        seen.append(body)
        return responder(path, body, _json)

    with FakeJudgeServer(responder=record, lifetime_s=30) as server:
        judge = ClaudeReferenceJudge("claude-fake", base_url=server.url, max_retries=0, retry_attempts=1,
                                     timeout_s=10)
        grades = grade_set(questions, responses, SHOP, judge)
        headers = server.received_headers
    return grades, seen, headers


def _heuristic_reply(path, body, _json):
    """Answer as the heuristic would: the spec and the answer are read back from the request."""
    from axon_eval.judges.fake_server import anthropic_message_json

    text = body["messages"][0]["content"]
    answer = text.split("<answer>\n", 1)[1].rsplit("\n</answer>", 1)[0]
    spec = _json.loads(text.split("<spec>\n", 1)[1].split("\n</spec>", 1)[0])
    q = next(q for q in load_questions(REF / "questions.yaml") if q.text == spec["question"])
    from axon_eval.reference.evidence import Evidence
    ev = Evidence(q.id, values={v["id"]: v["value"] for v in spec["reference_values"]})
    out = HeuristicReferenceJudge().assess(q, ev, answer)
    reply = {"assessments": [a.__dict__ for a in out.assessments], "claims": [c.__dict__ for c in out.claims]}
    return 200, {}, anthropic_message_json(_json.dumps(reply))


def test_claude_judge_structured_output_is_verified_like_the_heuristic(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-never-sent-to-a-local-server")
    ids = {"d_on_time_rate#close", "d_refund_rate#rounded", "g_revenue_gap#table_only", "p_carrier_mix#projection"}
    grades, seen, headers = _claude_grades(_heuristic_reply, ids)
    assert {g.response_id: g.grade for g in grades} == {
        "d_on_time_rate#close": "fail", "d_refund_rate#rounded": "pass", "g_revenue_gap#table_only": "fail",
        "p_carrier_mix#projection": "review_required"}
    assert all("output_config" in b and b["output_config"]["format"]["type"] == "json_schema" for b in seen)
    # the project's key rule: a loopback server gets the dummy key, never the real one
    for h in headers:
        assert "local-server-no-key" in (h.get("x-api-key") or h["authorization"])
        assert not any("sk-ant-never-sent" in v for v in h.values()), h
    assert all(g.judge_id.startswith("anthropic:claude-fake@reference_v1") and ",base=http://127.0.0.1:" in g.judge_id
               for g in grades)
    gap = next(b for b in seen if "finance revenue" in b["messages"][0]["content"])
    assert "2335556.84" in gap["messages"][0]["content"]  # every evidence row goes to the judge


def test_claude_judge_bad_quotes_and_malformed_replies_are_errors():
    from axon_eval.judges.fake_server import anthropic_message_json

    def invented_quote(path, body, _json):
        reply = {"assessments": [{"criterion_id": "figure", "status": "pass", "quote": "the rate was 7.0989%",
                                  "reason": ""}],
                 "claims": [{"token": "7.0989%", "reference_id": "refund_rate_pct", "declared_unit": "percent"}]}
        return 200, {}, anthropic_message_json(_json.dumps(reply))

    grades, _, _ = _claude_grades(invented_quote, {"d_refund_rate#out"})
    assert grades[0].grade == "error" and any("quote not found" in r for r in grades[0].reasons)
    assert grades[0].error_kind == "verify"

    def prose(path, body, _json):
        return 200, {}, anthropic_message_json("Looks fine to me.")

    grades, _, _ = _claude_grades(prose, {"d_refund_rate#out"})
    assert grades[0].grade == "error" and "malformed judge reply" in grades[0].reasons[0]
    assert grades[0].error_kind == "judge" and grades[0].extra["raw_output"] == "Looks fine to me."
