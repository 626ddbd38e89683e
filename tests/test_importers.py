"""Trace importers: one hand-written export per format, the import report, the OTLP
round trip on the bundled sample and on every status with no flag, unmapped statuses as warnings, files
that are not exports, schema-version-2 evidence in the view, and an end-to-end evaluation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from axon_eval import load_turns
from axon_eval.cli import main
from axon_eval.evidence import split_segments
from axon_eval.importers import (
    BlockedRule,
    ImportOptions,
    import_documents,
    import_traces,
    parse_result,
    report_path,
    write_import,
)
from axon_eval.view import render_view

TRACES = Path(__file__).parent / "data" / "traces"
SAMPLE = Path(__file__).parents[1] / "data" / "turns" / "sample_turns.jsonl"
Q1 = "How many tries did Harbour City score in the 2024 final?"
A1 = "Harbour City scored 4 tries in the 2024 final."
Q2 = "Which venue hosted the 2023 final?"
FILES = {"otel": "otel.jsonl", "openinference": "openinference.json", "langfuse": "langfuse.json",
         "langsmith": "langsmith.jsonl"}
# LangSmith's SQL tool takes the statement as its plain input, so it is named on the command line
SQL_TOOLS = {"langsmith": ("sql_db_query",)}


def _import(fmt: str):
    return import_traces(TRACES / FILES[fmt], fmt, ImportOptions.make(
        sql_tools=SQL_TOOLS.get(fmt, ()), blocked_when=["GuardrailRefusal"], surface_attrs=["app.surface"]))


@pytest.mark.parametrize("fmt", sorted(FILES))
def test_each_format_maps_the_agent_trajectory(fmt):
    result = _import(fmt)
    rep = result.report
    assert (rep.traces_read, rep.turns_built, len(rep.not_turns)) == (3, 2, 1)
    first, second = result.turns
    # trace 1: schema discovery, a failed statement, a recovered statement, an answer
    assert first.question == Q1 and first.answer == A1
    assert [(s.kind, s.status) for s in first.steps] == [("tool", "ok"), ("sql", "error"), ("sql", "ok")]
    assert first.steps[0].name == "list_tables" and "teams" in first.steps[0].output
    assert "no such table: tries_by_team" in first.steps[1].error and first.steps[1].row_count == 0
    ok = first.steps[2]
    assert ok.rows == [["Harbour City", 4]] and "2024" in ok.sql and not ok.sanitized
    assert first.surface == "slack"
    # trace 2: no answer captured, a guardrail refusal (--blocked-when), a Markdown/CSV result
    assert second.question == Q2 and second.answer is None
    assert [(s.kind, s.status) for s in second.steps] == [("sql", "blocked"), ("sql", "ok")]
    venue = second.steps[1]
    assert venue.columns == ["venue", "city"] and venue.rows == [["Gullwing Park", "Kestrel Bay"]]
    assert venue.row_count is None and not venue.row_count_known and second.schema_version == 2
    # trace 3 is broken (its root was never exported): kept in the report, not dropped
    assert "no root span" in rep.not_turns[0]["reason"]
    assert rep.skipped_by_reason["model call (not a step)"] == 1
    assert rep.skipped_by_reason["its trace could not become a turn"] == 1
    assert rep.spans_read == rep.spans_used + rep.spans_skipped
    assert {i["field"] for i in rep.inferred} >= {"row_count", "status"}


def test_otel_reads_old_and_new_attribute_names():
    rep = _import("otel").report
    for name in ("gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.tool.call.arguments",
                 "gen_ai.tool.call.result", "db.query.text", "db.response.returned_rows",
                 "gen_ai.prompt.N.role|content", "db.statement", "db.system"):
        assert rep.attributes_read.get(name), name
    first = _import("otel").turns[0]
    # the database span's text was sanitised: the tool arguments' statement is used, and that is reported
    assert first.steps[2].row_count == 1 and first.client == "rugby-assistant" and first.region == "eu-west-1"
    assert any("sanitised" in i["how"] for i in _import("otel").report.inferred)


def _otlp(spans):
    return {"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [{"spans": spans}]}]}


def _attr(k, v):
    return {"key": k, "value": {"intValue": str(v)} if isinstance(v, int) else {"stringValue": v}}


def test_a_sanitised_query_without_the_raw_statement_is_marked_and_shown():
    t0 = 1783000000_000000000
    root = {"traceId": "ab" * 16, "spanId": "01" * 8, "name": "invoke_agent a", "startTimeUnixNano": str(t0),
            "endTimeUnixNano": str(t0 + 10**9), "attributes": [_attr("gen_ai.operation.name", "invoke_agent"),
                                                              _attr("gen_ai.input.messages", json.dumps(
                                                                  [{"role": "user", "content": "Tries in 2024?"}]))]}
    db = {"traceId": "ab" * 16, "spanId": "02" * 8, "parentSpanId": "01" * 8, "name": "SELECT",
          "startTimeUnixNano": str(t0 + 10**6), "endTimeUnixNano": str(t0 + 5 * 10**6),
          "attributes": [_attr("db.query.text", "SELECT COUNT(*) FROM tries WHERE year = ? AND note = 'a?'"),
                         _attr("db.response.returned_rows", 1)]}
    turn = import_documents([_otlp([root, db])], "otel").turns[0]
    step = turn.sql_steps[0]
    assert step.sanitized and turn.schema_version == 2 and step.row_count == 1 and step.elapsed_ms == 4
    assert "query text sanitised" in render_view(split_segments(turn)[0], 20).text
    assert '"sanitized": true' in turn.to_json_line()


def test_unknown_row_count_is_said_in_the_view():
    turn = _import("langfuse").turns[1]
    text = render_view(split_segments(turn)[0], 20).text
    assert "row count unknown" in text


def test_round_trip_bundled_sample_through_otlp_without_flags(tmp_path):
    """The README's commands: ``export-otlp`` then ``import-traces --format otel`` with no flag give the
    bundled sample back byte for byte (the blocked statements used to come back as
    ``error`` unless ``--blocked-when error.type=blocked`` was given)."""
    turns, invalid = load_turns(SAMPLE)
    assert not invalid
    statuses = [s.status for t in turns for s in t.steps]
    assert {"ok", "error", "timeout", "blocked"} <= set(statuses)  # the sample exercises every status
    otlp = tmp_path / "sample.otlp.json"
    assert main(["export-otlp", str(SAMPLE), "--out", str(otlp)]) == 0
    out = tmp_path / "back.jsonl"
    assert main(["import-traces", str(otlp), "--format", "otel", "--out", str(out)]) == 0
    back, invalid = load_turns(out)
    assert not invalid and len(back) == len(turns)
    assert [s.status for t in back for s in t.steps] == statuses
    for a, b in zip(back, turns, strict=True):
        assert a.model_dump() == b.model_dump(), a.turn_id  # every field: rows, row counts, errors, answer
    assert out.read_bytes() == SAMPLE.read_bytes()
    assert any(s.row_count > len(s.rows) for t in back for s in t.sql_steps)
    rep = json.loads(report_path(out).read_text())
    assert rep["turns_built"] == len(turns) and rep["not_turns"] == [] and rep["warnings"] == []
    assert rep["attributes_read"]["axon_eval.step.status"] == len(statuses)


def _every_status_turns():
    """One turn per status with a tool step and a SQL step in it, with and without error text."""
    lines = []
    for i, status in enumerate(["ok", "error", "timeout", "blocked"]):
        for with_text in (True, False):
            error = None if status == "ok" or not with_text else f"{status} text {i}"
            ok = status == "ok"
            lines.append(json.dumps({
                "schema_version": 1, "turn_id": f"st-{status}-{int(with_text)}",
                "captured_at": f"2026-03-0{i + 1}T10:00:0{int(with_text)}Z", "region": "eu", "surface": "web",
                "client": "c", "question": f"Question about {status}?",
                "answer": None if status == "blocked" else f"Answer {status}.",
                "steps": [
                    {"kind": "tool", "name": "list_tables", "status": status, "args": {"schema": "main"},
                     "output": {"tables": ["teams"]} if ok else None, "error": error, "elapsed_ms": 3},
                    {"kind": "sql", "sql": "SELECT name FROM teams", "status": status, "error": error,
                     "columns": ["name"] if ok else [], "rows": [["A"], ["B"]] if ok else [],
                     "row_count": 5 if ok else 0, "elapsed_ms": 12.5}]}))
    return lines


def test_round_trip_every_status_of_both_step_kinds_without_flags(tmp_path):
    src = tmp_path / "statuses.jsonl"
    src.write_text("\n".join(_every_status_turns()) + "\n", encoding="utf-8")
    turns, invalid = load_turns(src)
    assert not invalid and len(turns) == 8
    otlp = tmp_path / "statuses.otlp.json"
    assert main(["export-otlp", str(src), "--out", str(otlp)]) == 0
    out = tmp_path / "back.jsonl"
    assert main(["import-traces", str(otlp), "--format", "otel", "--out", str(out)]) == 0
    back, invalid = load_turns(out)
    assert not invalid
    # hand-derived: each turn's two steps carry the status in its id, errors exactly as written
    assert [(t.turn_id, [s.status for s in t.steps], [s.error for s in t.steps]) for t in back] == [
        (f"st-{st}-{w}", [st, st], [None if st == "ok" or not w else f"{st} text {i}"] * 2)
        for i, st in enumerate(["ok", "error", "timeout", "blocked"]) for w in (1, 0)]
    assert [t.model_dump() for t in back] == [t.model_dump() for t in turns]
    assert out.read_text(encoding="utf-8") == "".join(t.to_json_line() + "\n" for t in turns)


T0 = 1783000000_000000000
QUESTION_MESSAGES = json.dumps([{"role": "user", "content": "How many tries?"}])


def _tool_trace(status: dict, extra_attrs=()) -> dict:
    root = {"traceId": "ef" * 16, "spanId": "0a" * 8, "name": "invoke_agent a", "startTimeUnixNano": str(T0),
            "endTimeUnixNano": str(T0 + 10**9), "status": {"code": 1},
            "attributes": [_attr("gen_ai.operation.name", "invoke_agent"),
                           _attr("gen_ai.input.messages", QUESTION_MESSAGES)]}
    tool = {"traceId": "ef" * 16, "spanId": "0b" * 8, "parentSpanId": "0a" * 8, "name": "execute_tool lookup",
            "startTimeUnixNano": str(T0 + 10**6), "endTimeUnixNano": str(T0 + 3 * 10**6), "status": status,
            "attributes": [_attr("gen_ai.operation.name", "execute_tool"), _attr("gen_ai.tool.name", "lookup"),
                           _attr("gen_ai.tool.call.arguments", '{"team": "x"}'), *extra_attrs]}
    return _otlp([root, tool])


@pytest.mark.parametrize("status,attrs,expected_status,expected_error,field,value", [
    # our attribute holds a value outside ok/error/timeout/blocked: ignored, the span status decides
    ({"code": 2, "message": "boom"}, [_attr("axon_eval.step.status", "partial")], "error", "boom",
     "axon_eval.step.status", "partial"),
    ({"code": 1}, [_attr("axon_eval.step.status", "partial")], "ok", None, "axon_eval.step.status", "partial"),
    # an OTLP status code outside 0/1/2: read as unset (not failed)
    ({"code": 7, "message": "odd"}, [], "ok", None, "status.code", 7),
])
def test_an_unmapped_status_is_a_warning_and_the_step_is_kept(status, attrs, expected_status, expected_error,
                                                              field, value):
    result = import_documents([_tool_trace(status, attrs)], "otel")
    (turn,) = result.turns
    (step,) = turn.steps
    assert (step.status, step.error) == (expected_status, expected_error)
    (warning,) = result.report.warnings
    assert (warning["span_id"], warning["name"], warning["field"], warning["value"]) == (
        "0b" * 8, "execute_tool lookup", field, value)
    assert warning["turn_id"] == turn.turn_id and repr(expected_status) in warning["fallback"]
    line = next(x for x in result.report.summary_lines() if "WARNING" in x)
    assert "execute_tool lookup" in line and repr(value) in line


def test_a_known_step_status_attribute_is_read_in_any_case_without_warning():
    result = import_documents([_tool_trace({"code": 2}, [_attr("axon_eval.step.status", "Blocked")])], "otel")
    assert result.turns[0].steps[0].status == "blocked" and result.report.warnings == []


_ISO0, _ISO1, _ISO2 = "2026-05-01T10:00:00Z", "2026-05-01T10:00:01Z", "2026-05-01T10:00:02Z"
UNMAPPED_EXPORTS = {
    "langfuse": ([{"id": "r", "traceId": "t1", "type": "AGENT", "name": "agent", "startTime": _ISO0,
                   "endTime": _ISO2, "input": "How many tries?", "output": "Four."},
                  {"id": "s", "traceId": "t1", "parentObservationId": "r", "type": "TOOL", "name": "lookup",
                   "startTime": _ISO1, "endTime": _ISO2, "input": {"team": "x"}, "output": "done",
                   "level": "FATAL"}], "s", "level", "FATAL"),
    "langsmith": ([{"id": "r", "trace_id": "r", "run_type": "chain", "name": "agent", "start_time": _ISO0,
                    "end_time": _ISO2, "inputs": "How many tries?", "outputs": "Four.", "status": "success"},
                   {"id": "s", "trace_id": "r", "parent_run_id": "r", "run_type": "tool", "name": "lookup",
                    "start_time": _ISO1, "end_time": _ISO2, "inputs": {"team": "x"}, "outputs": {"output": "done"},
                    "status": "cancelled"}], "s", "status", "cancelled"),
    "openinference": ([{"name": "agent", "context": {"trace_id": "t1", "span_id": "r1"}, "parent_id": None,
                        "start_time": _ISO0, "end_time": _ISO2, "status_code": "OK",
                        "attributes": {"openinference.span.kind": "AGENT", "input.value": "How many tries?",
                                       "output.value": "Four."}},
                       {"name": "lookup", "context": {"trace_id": "t1", "span_id": "s1"}, "parent_id": "r1",
                        "start_time": _ISO1, "end_time": _ISO2, "status_code": "WEIRD",
                        "attributes": {"openinference.span.kind": "TOOL", "tool.name": "lookup",
                                       "input.value": '{"team": "x"}', "output.value": "done"}}],
                      "s1", "status_code", "WEIRD"),
}


@pytest.mark.parametrize("fmt", sorted(UNMAPPED_EXPORTS))
def test_every_format_warns_about_a_status_it_cannot_map(fmt):
    doc, span_id, field, value = UNMAPPED_EXPORTS[fmt]
    result = import_documents([doc], fmt)
    (turn,) = result.turns
    assert turn.question == "How many tries?" and turn.answer == "Four."
    (step,) = turn.steps
    assert (step.kind, step.name, step.status) == ("tool", "lookup", "ok")  # the documented fallback
    (warning,) = result.report.warnings
    assert (warning["span_id"], warning["field"], warning["value"]) == (span_id, field, value)


def test_cli_writes_evidence_that_validates_and_a_report(tmp_path, capsys):
    out = tmp_path / "lf.jsonl"
    code = main(["import-traces", str(TRACES / "langfuse.json"), "--format", "langfuse", "--out", str(out),
                 "--blocked-when", "error.type=GuardrailRefusal"])
    printed = capsys.readouterr().out
    assert code == 0 and "2 turn(s) built" in printed and "NOT A TURN lf-trace-0003" in printed
    report = json.loads((tmp_path / "lf.import.json").read_text())
    assert report["traces_read"] == 3 and report["turns_built"] == 2 and len(report["not_turns"]) == 1
    assert report["options"]["blocked_when"] == ["error.type=GuardrailRefusal"]
    assert main(["validate", str(out), "--strict"]) == 0
    assert main(["import-traces", str(TRACES / "langfuse.json"), "--format", "langsmith",
                 "--out", str(tmp_path / "x.jsonl")]) == 2
    assert main(["import-traces", str(tmp_path / "missing.json"), "--format", "otel",
                 "--out", str(tmp_path / "y.jsonl")]) == 2


@pytest.mark.parametrize("content,what", [
    (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00", "NUL byte at byte offset 8"),
    (b"\xff\xfe{\"resourceSpans\": []}", "byte 0xff at byte offset 0"),
])
def test_a_binary_file_is_one_line_naming_the_file_and_nothing_is_written(tmp_path, capsys, content, what):
    binary = tmp_path / "capture.bin"
    binary.write_bytes(content)
    out = tmp_path / "turns.jsonl"
    assert main(["import-traces", str(binary), "--format", "otel", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(binary) in err and what in err
    assert "expected a --format otel export: JSON or JSON Lines text" in err
    assert list(tmp_path.iterdir()) == [binary]  # no evidence, no report


def test_a_file_of_another_format_names_the_file(tmp_path, capsys):
    assert main(["import-traces", str(SAMPLE), "--format", "otel", "--out", str(tmp_path / "x.jsonl")]) == 2
    assert capsys.readouterr().err == f"error: {SAMPLE}: not OTLP JSON: no 'resourceSpans' found\n"
    assert not (tmp_path / "x.jsonl").exists()


def test_a_file_without_any_turn_exits_5(tmp_path):
    broken = tmp_path / "broken.jsonl"
    broken.write_text(json.dumps(_otlp([{"traceId": "cd" * 16, "spanId": "03" * 8, "parentSpanId": "04" * 8,
                                         "name": "x", "attributes": []}])) + "\n")
    assert main(["import-traces", str(broken), "--format", "otel", "--out", str(tmp_path / "z.jsonl")]) == 5
    assert json.loads((tmp_path / "z.import.json").read_text())["not_turns"]


@pytest.mark.parametrize("value,columns,rows,count", [
    ('[{"a": 1, "b": "x"}, {"a": 2}]', ["a", "b"], [[1, "x"], [2, None]], None),
    ({"columns": ["a"], "rows": [[1], [2]], "row_count": 40}, ["a"], [[1], [2]], 40),
    ({"columns": [{"name": "a"}], "rows": [{"a": 3}]}, ["a"], [[3]], None),
    ("| a | b |\n|---|---:|\n| x | 1.5 |\n| y | NULL |", ["a", "b"], [["x", 1.5], ["y", None]], None),
    ("a,b\nx,1\ny,2", ["a", "b"], [["x", 1], ["y", 2]], None),
    ("[('x', 1)]", [], [["x", 1]], None),
])
def test_parse_result(value, columns, rows, count):
    parsed = parse_result(value)
    assert parsed is not None and (parsed.columns, parsed.rows, parsed.count) == (columns, rows, count)


def test_parse_result_refuses_prose():
    assert parse_result("The query returned four tries, mostly in the first half.") is None


def test_blocked_rules():
    assert BlockedRule.parse("name=guardrail") == BlockedRule("name", "guardrail")
    assert BlockedRule.parse("error.type:Refused") == BlockedRule("error.type", "Refused")
    assert BlockedRule.parse("Refused") == BlockedRule("any", "Refused")
    with pytest.raises(ValueError):
        BlockedRule.parse("name=")


def test_import_then_evaluate_with_the_heuristic_judge(tmp_path):
    from axon_eval.runs import evaluate

    result = _import("otel")
    evidence = tmp_path / "otel_turns.jsonl"
    write_import(result, evidence)
    run = evaluate(evidence, "heuristic", out_dir=tmp_path / "runs", name="imported", progress=False)
    assert run.manifest.counts.judged == len(run.results) > 0
    assert run.manifest.counts.unjudged == 0 and len(run.results) == len(result.turns)


def test_the_heuristic_treats_a_count_claim_on_an_unknown_row_count_as_unverifiable():
    """Schema 2, ``row_count: null``: the rows shown are a lower bound, so "3 teams" can be neither
    supported nor contradicted; with the count known (schema 1) the same claim is supported."""
    import json as _json

    from axon_eval.evidence import parse_turn_lines, split_segments
    from axon_eval.judges import build_judge
    from axon_eval.view import render_view

    def line(version, row_count):
        return _json.dumps({"schema_version": version, "turn_id": f"t{version}", "captured_at": "2026-07-20T09:14:03Z",
                            "region": "eu", "surface": "web", "client": "c", "question": "How many teams are there?",
                            "answer": "There are 3 teams: A, B and C.",
                            "steps": [{"kind": "sql", "sql": "SELECT name FROM teams", "status": "ok",
                                       "columns": ["name"], "rows": [["A"], ["B"], ["C"]], "row_count": row_count}]})

    turns, invalid = parse_turn_lines([line(1, 3), line(2, None)])
    assert not invalid
    judge = build_judge("heuristic-rules")  # the claim check the fitted judge's faithfulness signals read
    known, unknown = (judge.judge(render_view(split_segments(t)[0], 20)) for t in turns)
    assert known.verdict.answer_faithfulness == 10
    assert 0 < unknown.verdict.answer_faithfulness < 10  # unverifiable costs something, but is no fabrication
    assert "could not verify \"3\"" in unknown.verdict.explanation
    assert "row count is unknown" in unknown.verdict.explanation
    # the fitted offline judge reads the same finding as a signal: unverifiable, not unsupported, and a
    # lower faithfulness grade than the supported claim's
    fitted = build_judge("heuristic")
    fk, fu = (fitted.judge(render_view(split_segments(t)[0], 20)) for t in turns)
    sk, su = (r.extra["heuristic_fitted"]["signals"] for r in (fk, fu))
    assert (sk["claims_unverifiable"], su["claims_unverifiable"]) == (0.0, 1.0)
    assert sk["claims_unsupported"] == su["claims_unsupported"] == 0.0
    assert 0 < fu.verdict.answer_faithfulness < fk.verdict.answer_faithfulness
