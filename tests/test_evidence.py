"""Loading, validation errors (counted and listed per line), segment splitting, trajectory facts and
event assembly."""

from __future__ import annotations

import json
import random

import pytest

from axon_eval import load_turns, split_segments, trajectory_facts
from axon_eval.events import assemble_turns, load_events, turn_to_events
from axon_eval.evidence import (
    Turn,
    describe_invalid_lines,
    invalid_lines,
    split_questions,
    turn_json_schema,
)


def turn_dict(turn_id="eu-0001", **over):
    d = {"schema_version": 1, "turn_id": turn_id, "captured_at": "2026-07-20T09:14:03Z", "region": "eu",
         "surface": "web", "client": "client-a",
         "question": "How many tries did Harbour City score in the 2024 final?",
         "answer": "Harbour City scored 4 tries.",
         "steps": [{"kind": "tool", "name": "list_tables", "status": "ok", "args": {}, "output": "matches"},
                   {"kind": "sql", "sql": "SELECT team, tries FROM t", "status": "ok", "error": None,
                    "columns": ["team", "tries"], "rows": [["Harbour City", 4]], "row_count": 1, "elapsed_ms": 84}]}
    d.update(over)
    return d


def test_mixed_file_keeps_valid_turns_and_reports_each_bad_line(tmp_path):
    bad_step = turn_dict("eu-0005")
    bad_step["steps"][1]["status"] = "exploded"
    lines = [
        json.dumps(turn_dict("eu-0001")),
        '{"schema_version": 1, "turn_id": "eu-0002", ',                      # broken JSON
        json.dumps({k: v for k, v in turn_dict("eu-0003").items() if k != "question"}),  # missing field
        json.dumps(turn_dict("eu-0004", region=7)),                           # wrong type
        json.dumps(bad_step),                                                 # unknown status
        "",                                                                   # blank: skipped
        json.dumps(turn_dict("eu-0001")),                                     # duplicate id
        json.dumps(turn_dict("us-0002", answer=None)),
    ]
    path = tmp_path / "turns.jsonl"
    path.write_text("\n".join(lines) + "\n")
    turns, invalid = load_turns(path)
    assert [t.turn_id for t in turns] == ["eu-0001", "us-0002"]
    by_line = {i.line: i for i in invalid}
    assert sorted(by_line) == [2, 3, 4, 5, 7]
    assert by_line[2].field == "<line>" and "not valid JSON" in by_line[2].message
    assert by_line[3].field == "question" and by_line[3].turn_id == "eu-0003"
    assert by_line[4].field == "region" and "7" in by_line[4].message
    assert by_line[5].field == "steps.1.status" and "exploded" in by_line[5].message
    assert by_line[7].field == "turn_id" and "duplicate" in by_line[7].message and "line 1" in by_line[7].message
    assert str(path) in str(by_line[2]) and ":2" in str(by_line[2])


def _two_bad_lines_four_problems(tmp_path):
    """Lines 2 and 4 are bad with two problems each; line 3 is blank."""
    bad_a = turn_dict("eu-0002", answer=5)
    bad_a["steps"][1]["status"] = "weird"
    bad_b = {k: v for k, v in turn_dict("eu-0004", region=7).items() if k != "question"}
    path = tmp_path / "two_bad.jsonl"
    path.write_text("\n".join([json.dumps(turn_dict("eu-0001")), json.dumps(bad_a), "", json.dumps(bad_b),
                               json.dumps(turn_dict("eu-0005"))]) + "\n", encoding="utf-8")
    return path


def test_invalid_records_are_grouped_per_line(tmp_path):
    turns, invalid = load_turns(_two_bad_lines_four_problems(tmp_path))
    assert [t.turn_id for t in turns] == ["eu-0001", "eu-0005"]
    assert len(invalid) == 4  # records: one per field problem
    grouped = invalid_lines(invalid)
    assert len(grouped) == 2  # lines
    assert list(grouped) == [2, 4]
    # fields in the model's order (region before question; answer before steps)
    assert [[p.split(": ")[0] for p in problems] for problems in grouped.values()] == [
        ["answer", "steps.1.status"], ["region", "question"]]
    assert grouped == {i.line: [f"{j.field}: {j.message}" for j in invalid if j.line == i.line] for i in invalid}
    # the dicts of a run's invalid.jsonl group the same way
    assert invalid_lines([i.to_dict() for i in invalid]) == grouped
    texts = describe_invalid_lines(invalid)
    assert len(texts) == 2
    assert texts[0].startswith("line 2 (turn eu-0002): answer: ") and "; steps.1.status: " in texts[0]
    assert texts[1].startswith("line 4 (turn eu-0004): region: ") and "; question: " in texts[1]
    assert "'weird'" in texts[0]


def test_validate_and_evaluate_count_bad_lines_not_problems(tmp_path, capsys):
    from axon_eval.cli import main

    path = _two_bad_lines_four_problems(tmp_path)
    assert main(["validate", str(path)]) == 0
    out = capsys.readouterr().out
    assert "2 valid turns (2 segments), 2 invalid line(s) (4 problems)" in out
    invalid_out = [line for line in out.splitlines() if "INVALID" in line]
    assert len(invalid_out) == 2 and f"INVALID {path}: line 2 (turn eu-0002): answer: " in invalid_out[0]
    assert main(["validate", str(path), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["invalid_lines"], report["invalid_problems"], len(report["invalid"])) == (2, 4, 4)

    assert main(["evaluate", "--turns", str(path), "--judge", "heuristic", "--out", str(tmp_path / "runs")]) == 0  # not --quiet: quiet lists no items
    out = capsys.readouterr().out
    assert "invalid input lines: 2 (4 problems)" in out
    assert "2 invalid input line(s)" in out
    listed = [line.strip() for line in out.splitlines() if "INVALID" in line]
    assert [x.split(":")[0] for x in listed] == ["INVALID line 2 (turn eu-0002)", "INVALID line 4 (turn eu-0004)"]


def test_row_shape_errors_are_reported():
    d = turn_dict()
    d["steps"][1]["row_count"] = 0
    from axon_eval.evidence import parse_turn_lines
    _, invalid = parse_turn_lines([json.dumps(d)])
    assert invalid and invalid[0].field == "steps.1" and "row_count" in invalid[0].message


def test_round_trip_and_schema():
    t = Turn.model_validate(turn_dict())
    assert Turn.model_validate_json(t.to_json_line()) == t
    assert json.loads(t.to_json_line())["captured_at"] == "2026-07-20T09:14:03Z"
    schema = turn_json_schema()
    assert {"turn_id", "steps", "answer"} <= set(schema["properties"])


@pytest.mark.parametrize("text,expected", [
    ("How many tries did Harbour City score?", ["How many tries did Harbour City score?"]),
    ("1. Who won the 2023 final? 2. Where was it played?", ["Who won the 2023 final?", "Where was it played?"]),
    ("1) Top scorer in 2022\n2) Top scorer in 2023\n3) Top scorer in 2024",
     ["Top scorer in 2022", "Top scorer in 2023", "Top scorer in 2024"]),
    ("Who won the final? How many tries were scored?", ["Who won the final?", "How many tries were scored?"]),
    ("Who won the final? Keep it short.", ["Who won the final? Keep it short."]),
    ("What was the score in 2. round?", ["What was the score in 2. round?"]),
])
def test_split_questions(text, expected):
    assert split_questions(text) == expected


def test_segments_ids_and_explicit_list_wins():
    single = Turn.model_validate(turn_dict())
    assert [s.segment_id for s in split_segments(single)] == ["eu-0001"]
    bundled = Turn.model_validate(turn_dict(question="Who won? How many tries were scored?"))
    segs = split_segments(bundled)
    assert [s.segment_id for s in segs] == ["eu-0001#1", "eu-0001#2"]
    assert segs[1].question == "How many tries were scored?" and segs[1].turn is bundled
    explicit = Turn.model_validate(turn_dict(question="a relay of stuff", segments=["Q one", "Q two", "Q three"]))
    assert [s.question for s in split_segments(explicit)] == ["Q one", "Q two", "Q three"]


def test_trajectory_facts_table():
    def facts(statuses, tools=0):
        steps = [{"kind": "tool", "name": "list_tables", "status": "ok"}] * tools + [
            {"kind": "sql", "sql": "SELECT 1", "status": s} for s in statuses]
        return trajectory_facts(Turn.model_validate(turn_dict(steps=steps)))
    f = facts(["error", "ok", "timeout", "ok"], tools=1)
    assert (f.n_steps, f.n_sql_executed, f.n_sql_failed, f.recovered_errors) == (5, 4, 2, 2)
    assert not f.all_sql_failed and not f.ended_on_failure and not f.no_tools
    f = facts(["ok", "blocked"])
    assert f.n_sql_executed == 1 and not f.ended_on_failure and f.n_sql_blocked == 1
    f = facts(["ok", "timeout", "blocked"])
    assert f.ended_on_failure and not f.all_sql_failed and f.recovered_errors == 0
    f = facts([], tools=2)
    assert not f.no_tools and f.n_sql_executed == 0 and not f.all_sql_failed
    assert facts([]).no_tools


def test_events_round_trip_shuffled_and_incomplete():
    turns = [Turn.model_validate(turn_dict(f"eu-000{i}", captured_at=f"2026-07-2{i}T09:00:00Z")) for i in range(1, 4)]
    turns.append(Turn.model_validate(turn_dict("us-0009", answer=None, captured_at="2026-07-29T09:00:00Z",
                                               question="Who won? Who lost?")))
    events = [e for t in turns for e in turn_to_events(t)]
    orphan = [e for e in turn_to_events(Turn.model_validate(turn_dict("eu-0099"))) if e["type"] != "turn_ended"]
    events += orphan
    random.Random(3).shuffle(events)
    result = assemble_turns(json.loads(json.dumps(events)))
    assert result.turns == turns
    assert [p.turn_id for p in result.incomplete] == ["eu-0099"]
    assert "turn_ended" in result.incomplete[0].message


def test_event_problems_are_reported(tmp_path):
    t = Turn.model_validate(turn_dict())
    ev = turn_to_events(t)
    ev[1]["seq"] = 0  # duplicate seq
    lines = [json.dumps(e) for e in ev] + ["not json", json.dumps({"turn_id": "x", "seq": 0, "type": "party"})]
    p = tmp_path / "ev.jsonl"
    p.write_text("\n".join(lines))
    result = load_events(p)
    assert not result.turns
    kinds = sorted(x.kind for x in result.invalid)
    assert kinds == ["bad_event", "bad_event", "invalid"]
    assert any("unknown event type 'party'" in x.message for x in result.invalid)
    assert any("duplicate seq" in x.message for x in result.invalid)


# -- schema version 2 (imported evidence): unknown row counts, sanitised query text ------------------
def v2_turn(**step_over):
    d = turn_dict(schema_version=2)
    d["steps"][1].update(step_over)
    return Turn.model_validate(d)


def test_version_1_lines_load_and_dump_unchanged(tmp_path):
    from axon_eval.evidence import SCHEMA_VERSION, SCHEMA_VERSIONS

    assert SCHEMA_VERSION == 1 and SCHEMA_VERSIONS == (1, 2)  # the cache key's version did not move
    line = json.dumps(turn_dict(), ensure_ascii=False, separators=(", ", ": "))
    t = Turn.model_validate_json(line)
    assert t.to_json_line() == Turn.model_validate(turn_dict()).to_json_line()
    assert "sanitized" not in t.to_json_line() and t.sql_steps[0].row_count_known
    # in version 1 a null row count still means "the stored rows are the whole result"
    d = turn_dict()
    d["steps"][1]["row_count"] = None
    v1 = Turn.model_validate(d)
    assert v1.sql_steps[0].row_count_known and v1.sql_steps[0].total_rows == 1


def test_version_2_null_row_count_is_unknown_and_round_trips():
    t = v2_turn(row_count=None, sanitized=True, sql="SELECT team, tries FROM t WHERE year = ?")
    step = t.sql_steps[0]
    assert not step.row_count_known and step.total_rows == 1 and step.sanitized
    line = t.to_json_line()
    assert '"row_count": null' in line and '"sanitized": true' in line
    back = Turn.model_validate_json(line)
    assert back == t and not back.sql_steps[0].row_count_known
    # a known count, or a failed statement, is not unknown
    assert v2_turn(row_count=1).sql_steps[0].row_count_known
    assert v2_turn(status="error", rows=[], columns=[], row_count=None, error="boom").sql_steps[0].row_count_known


def test_sanitized_needs_version_2():
    from axon_eval.evidence import parse_turn_lines

    d = turn_dict()
    d["steps"][1]["sanitized"] = True
    _, invalid = parse_turn_lines([json.dumps(d)])
    assert invalid and "schema_version 2" in invalid[0].message
    d["schema_version"] = 3
    _, invalid = parse_turn_lines([json.dumps(d)])
    assert invalid and invalid[0].field == "schema_version"


def test_schema_covers_both_versions():
    schema = turn_json_schema()
    assert schema["properties"]["schema_version"]["enum"] == [1, 2]
    assert "sanitized" in schema["$defs"]["SqlStep"]["properties"]


def test_view_says_row_count_unknown_and_query_sanitised():
    from axon_eval.view import render_view

    seg = split_segments(v2_turn(row_count=None, sanitized=True, sql="SELECT team, tries FROM t WHERE year = ?"))[0]
    head = render_view(seg, 20)
    assert "row count unknown" in head.text and "query text sanitised" in head.text
    assert head.steps[1].row_count is None and not head.steps[1].row_count_known
    rows = [[f"team {i}", i] for i in range(30)]
    seg = split_segments(v2_turn(row_count=None, rows=rows))[0]
    ev = render_view(seg, 5, "evidence")
    assert "row count unknown" in ev.text and "searched all" not in ev.text
    assert ev.row_selections[1] is not None and not ev.row_selections[1].searched_all
    # the same turn as version 1 with a known count renders the version-1 text (no new lines)
    known = render_view(split_segments(Turn.model_validate(turn_dict()))[0], 20)
    assert "unknown" not in known.text and "sanitised" not in known.text
    assert render_view(split_segments(v2_turn(row_count=1))[0], 20).text == known.text
