"""Hostile evidence lines: each costs only its own line (one invalid record with its line number and
reason), never the file, never a traceback, never a raw control sequence on the terminal.

The lines are built for real (a nesting 10,000 levels deep, identifiers holding bidirectional overrides,
``NaN`` literals, a line past the size limit) and loaded through the same paths ``validate`` and ``evaluate``
use, including the partitioned one. Expectations come from outside the loader: the nesting depth from how
the line was built, character classes from :mod:`unicodedata`, the schema verdict from ``jsonschema``.
"""

from __future__ import annotations

import io
import json
import sys
import unicodedata
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import jsonschema
import pytest

from axon_eval import evidence
from axon_eval.evidence import (
    describe_invalid_lines,
    escape_control,
    iter_bounded_lines,
    iter_turns_range,
    load_turns,
    parse_turn_lines,
    plan_byte_ranges,
    turn_json_schema,
)

#: Unicode categories that must never reach a terminal raw: controls, format characters (bidirectional
#: marks, overrides, isolates, zero-width characters), surrogates, line and paragraph separators.
UNSAFE_CATEGORIES = {"Cc", "Cf", "Cs", "Zl", "Zp"}


def turn(turn_id: str = "eu-0001", **over) -> dict:
    d = {"schema_version": 1, "turn_id": turn_id, "captured_at": "2026-07-20T09:14:03Z", "region": "eu",
         "surface": "web", "client": "client-a", "question": "How many tries did Harbour City score?",
         "answer": "Harbour City scored 4 tries.",
         "steps": [{"kind": "tool", "name": "list_tables", "status": "ok", "args": {}, "output": "matches"},
                   {"kind": "sql", "sql": "SELECT team, tries FROM t", "status": "ok", "error": None,
                    "columns": ["team", "tries"], "rows": [["Harbour City", 4]], "row_count": 1,
                    "elapsed_ms": 84}]}
    d.update(over)
    return d


def nested_line(turn_id: str, levels: int) -> str:
    """A turn whose first tool step's ``args.x`` is ``levels`` arrays inside one another. The line's own
    object is level 1, ``steps`` 2, the step 3, ``args`` 4: the line nests ``4 + levels`` levels."""
    marker = "__NESTED__"
    text = json.dumps(turn(turn_id, steps=[{"kind": "tool", "name": "t", "status": "ok", "args": {"x": marker}}]))
    return text.replace(json.dumps(marker), "[" * levels + "]" * levels)


def has_unsafe(text: str) -> bool:
    return any(unicodedata.category(ch) in UNSAFE_CATEGORIES for ch in text)


def write(tmp_path: Path, lines: list[str], name: str = "turns.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


# -- nesting ------------------------------------------------------------------------------------------------
def test_a_line_nested_10000_deep_is_one_invalid_line_and_the_rest_loads(tmp_path):
    path = write(tmp_path, [json.dumps(turn("eu-0001")), nested_line("eu-0002", 10_000), json.dumps(turn("eu-0003"))])
    turns, invalid = load_turns(path)
    assert [t.turn_id for t in turns] == ["eu-0001", "eu-0003"]
    assert len(invalid) == 1
    (bad,) = invalid
    assert bad.line == 2 and "nested too deeply" in bad.message
    assert f"{path}:2" in str(bad)


@pytest.mark.parametrize(("levels", "loads"), [(96, True), (97, False), (900, False)])
def test_the_nesting_limit_counts_levels_from_the_line_itself(levels, loads):
    turns, invalid = parse_turn_lines([nested_line("eu-0001", levels)])
    assert evidence.MAX_NESTING_DEPTH == 100
    assert (len(turns) == 1) is loads and (len(invalid) == 0) is loads, invalid
    if not loads:
        assert invalid[0].field.startswith("steps.0.args.x"), invalid[0]
        assert "more than 100 levels" in invalid[0].message and invalid[0].turn_id == "eu-0001"


def test_the_nesting_limit_is_a_keyword(tmp_path):
    path = write(tmp_path, [nested_line("eu-0001", 10), json.dumps(turn("eu-0002"))])
    assert len(load_turns(path)[0]) == 2
    turns, invalid = load_turns(path, max_depth=12)
    assert [t.turn_id for t in turns] == ["eu-0002"] and invalid[0].line == 1


def test_a_wide_but_shallow_line_is_not_mistaken_for_a_deep_one():
    rows = [[i, f"name{i}"] for i in range(5_000)]
    line = json.dumps(turn(steps=[{"kind": "sql", "sql": "SELECT 1", "status": "ok", "columns": ["n", "s"],
                                    "rows": rows, "row_count": 5_000}]))
    turns, invalid = parse_turn_lines([line])
    assert invalid == [] and len(turns[0].steps[0].rows) == 5_000


# -- identifiers ------------------------------------------------------------------------------------------------
HOSTILE_ID_CHARS = ["\x1b", "\x00", "\x07", "\x7f", "\x85", "\x9b", "\u200e", "\u200f", "\u061c", "\u202a",
                    "\u202b", "\u202c", "\u202d", "\u202e", "\u2066", "\u2067", "\u2068", "\u2069", "\u200b",
                    "\ufeff", "\u2028", "\u00ad"]


@pytest.mark.parametrize("ch", HOSTILE_ID_CHARS, ids=[f"U+{ord(c):04X}" for c in HOSTILE_ID_CHARS])
def test_turn_ids_with_control_or_bidirectional_characters_are_refused(ch, tmp_path):
    assert unicodedata.category(ch) in UNSAFE_CATEGORIES
    hostile = f"eu-{ch}0001"
    path = write(tmp_path, [json.dumps(turn("eu-0000")), json.dumps(turn(hostile)), json.dumps(turn("eu-0002"))])
    turns, invalid = load_turns(path)
    assert [t.turn_id for t in turns] == ["eu-0000", "eu-0002"]
    (bad,) = invalid
    assert (bad.line, bad.field) == (2, "turn_id")
    assert f"U+{ord(ch):04X}" in bad.message and "position 3" in bad.message
    assert not has_unsafe(bad.message) and not has_unsafe(bad.turn_id) and not has_unsafe(str(bad))
    # the JSON Schema refuses it too (an independent regular-expression engine reads its pattern)
    validator = jsonschema.Draft202012Validator(turn_json_schema())
    assert not validator.is_valid(turn(hostile))


@pytest.mark.parametrize("good_id", ["eu-0001", "café-7", "東京-12", "run_1.2:3", "id-😀"])
def test_ordinary_unicode_turn_ids_still_load(good_id):
    turns, invalid = parse_turn_lines([json.dumps(turn(good_id), ensure_ascii=False)])
    assert invalid == [] and turns[0].turn_id == good_id
    assert jsonschema.Draft202012Validator(turn_json_schema()).is_valid(turn(good_id))


def test_a_lone_surrogate_in_a_turn_id_is_refused():
    turns, invalid = parse_turn_lines(['{"turn_id": "eu-\\ud800", ' + json.dumps(turn())[1:].replace(
        '"turn_id": "eu-0001", ', "")])
    assert turns == [] and invalid[0].field == "turn_id" and "U+D800" in invalid[0].message


def test_hostile_text_in_field_names_and_tags_is_escaped_in_the_records():
    line = json.dumps(turn("eu-0001", **{"\x1b[2J": 1}))
    step_tag = json.dumps(turn("eu-0002")).replace('"kind": "tool"', '"kind": "t\\u001b[31m"')
    _, invalid = parse_turn_lines([line, step_tag])
    assert {i.line for i in invalid} == {1, 2}
    for record in invalid:
        assert not has_unsafe(record.field) and not has_unsafe(record.message), record
    assert "\\x1b[2J" in invalid[0].field
    assert all(not has_unsafe(text) for text in describe_invalid_lines(invalid))


# -- non-finite numbers -------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("literal", "where", "field"), [
    ("NaN", '"elapsed_ms": 84', "steps.1.elapsed_ms"),
    ("Infinity", '"elapsed_ms": 84', "steps.1.elapsed_ms"),
    ("-Infinity", '"row_count": 1', "steps.1.row_count"),
    ("NaN", '"rows": [["Harbour City", 4]]', "steps.1.rows.0.1"),
    ("1e400", '"rows": [["Harbour City", 4]]', "steps.1.rows.0.1"),
    ("NaN", '"answer": "Harbour City scored 4 tries."', "answer"),
])
def test_non_finite_numbers_are_refused_naming_the_field(literal, where, field, tmp_path):
    key = where.split(":")[0]
    value = where.split(": ", 1)[1]
    replacement = (f"{key}: [[\"Harbour City\", {literal}]]" if key == '"rows"' else f"{key}: {literal}")
    assert value  # the text replaced below is really in the line
    line = json.dumps(turn("eu-0002"))
    assert where in line
    path = write(tmp_path, [json.dumps(turn("eu-0001")), line.replace(where, replacement), json.dumps(turn("eu-0003"))])
    turns, invalid = load_turns(path)
    assert [t.turn_id for t in turns] == ["eu-0001", "eu-0003"]
    (bad,) = invalid
    assert (bad.line, bad.field, bad.turn_id) == (2, field, "eu-0002")
    assert literal in bad.message and "refused" in bad.message


def test_the_largest_finite_numbers_still_load():
    line = json.dumps(turn()).replace('"elapsed_ms": 84', '"elapsed_ms": 1.7976931348623157e308')
    turns, invalid = parse_turn_lines([line])
    assert invalid == [] and turns[0].steps[1].elapsed_ms == sys.float_info.max


def test_an_integer_too_long_for_python_is_an_invalid_line_not_a_traceback():
    line = json.dumps(turn()).replace('"Harbour City", 4', '"Harbour City", ' + "9" * 5000)
    turns, invalid = parse_turn_lines([line, json.dumps(turn("eu-0002"))])
    assert [t.turn_id for t in turns] == ["eu-0002"] and invalid[0].line == 1


# -- line size ------------------------------------------------------------------------------------------------------
class CountingReader(io.BytesIO):
    """A binary file that records the longest piece any ``readline`` call returned."""

    longest = 0

    def readline(self, size: int | None = -1) -> bytes:  # type: ignore[override]
        piece = super().readline(size)
        self.longest = max(self.longest, len(piece))
        return piece


def test_a_line_over_the_size_limit_is_an_invalid_line_and_is_never_read_whole(tmp_path):
    big = json.dumps(turn("eu-0002", answer="x" * 200_000))
    small = [json.dumps(turn("eu-0001")), json.dumps(turn("eu-0003"))]
    limit = 10_000
    path = write(tmp_path, [small[0], big, small[1]])
    turns, invalid = load_turns(path, max_line_bytes=limit)
    assert [t.turn_id for t in turns] == ["eu-0001", "eu-0003"]
    (bad,) = invalid
    assert (bad.line, bad.field) == (2, "<line>")
    assert f"{len(big.encode()):,} bytes" in bad.message and f"{limit:,}" in bad.message
    reader = CountingReader(path.read_bytes())
    lines = list(iter_bounded_lines(reader, limit))
    assert reader.longest <= limit + 2, "the long line was read whole"
    assert [len(x) for x in lines] == [len(small[0]) + 1, len(big) + 1, len(small[1]) + 1]


def test_the_size_limit_is_the_module_constant_by_default(tmp_path, monkeypatch):
    assert evidence.MAX_LINE_BYTES == 16 * 1024 * 1024
    line = json.dumps(turn("eu-0001"))
    path = write(tmp_path, [line, json.dumps(turn("eu-0002"))])
    monkeypatch.setattr(evidence, "MAX_LINE_BYTES", len(line.encode()))  # exactly at the limit: loads
    assert len(load_turns(path)[0]) == 2
    monkeypatch.setattr(evidence, "MAX_LINE_BYTES", len(line.encode()) - 1)
    turns, invalid = load_turns(path)
    assert turns == [] and [i.line for i in invalid] == [1, 2]
    with pytest.raises(ValueError, match="max_line_bytes must be a whole number >= 1"):
        load_turns(path, max_line_bytes=0)


def test_the_partitioned_reader_applies_the_same_limits_with_file_line_numbers(tmp_path):
    lines = [json.dumps(turn(f"eu-{i:04d}")) for i in range(1, 9)]
    lines[2] = json.dumps(turn("eu-0003", answer="y" * 50_000))
    lines[5] = nested_line("eu-0006", 10_000)
    path = write(tmp_path, lines)
    ranges = plan_byte_ranges(path, 1_500)
    assert len(ranges) > 2
    items = [(line, item) for r in ranges for line, item in iter_turns_range(path, r, max_line_bytes=30_000)]
    good = [line for line, item in items if isinstance(item, evidence.Turn)]
    bad = {line: item for line, item in items if isinstance(item, evidence.InvalidTurn)}
    assert good == [1, 2, 4, 5, 7, 8] and sorted(bad) == [3, 6]
    assert "bytes" in bad[3].message and "nested" in bad[6].message


# -- escaping ----------------------------------------------------------------------------------------------------------
def test_escape_control_escapes_every_unsafe_character_and_keeps_the_rest():
    unsafe = [chr(c) for c in range(sys.maxunicode + 1) if unicodedata.category(chr(c)) in UNSAFE_CATEGORIES]
    assert len(unsafe) > 2_000
    escaped = escape_control("".join(unsafe))
    assert not has_unsafe(escaped) and escaped.isascii()
    assert escape_control("\x1b[31mred\u202e") == "\\x1b[31mred\\u202e"
    assert escape_control("\U000e0041") == "\\U000e0041"
    kept = "Harbour City — 4 tries, café, 東京, 😀, tab-free text with a \\ backslash"
    assert escape_control(kept) == kept
    assert escape_control(escape_control("a\x00b\u2066c")) == escape_control("a\x00b\u2066c")


# -- through the commands ------------------------------------------------------------------------------------------------
def hostile_file(tmp_path: Path) -> tuple[Path, list[str]]:
    """Good turns on odd lines, one hostile line of each kind between them."""
    good = [f"eu-{i:04d}" for i in (1, 3, 5, 7, 9)]
    lines = [
        json.dumps(turn(good[0])),
        nested_line("eu-0002", 10_000),
        json.dumps(turn(good[1])),
        json.dumps(turn("eu-\u202e0004\x1b[2J")),
        json.dumps(turn(good[2])),
        json.dumps(turn("eu-0006")).replace('"elapsed_ms": 84', '"elapsed_ms": NaN'),
        json.dumps(turn(good[3])),
        json.dumps(turn("eu-0008", **{"answer\x1b]0;pwned\x07": "x"})),
        json.dumps(turn(good[4])),
    ]
    return write(tmp_path, lines), good


def run_cli(args: list[str]) -> tuple[int, str, str]:
    from axon_eval.cli import main

    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(args)
    return code, out.getvalue(), err.getvalue()


def test_validate_reports_each_hostile_line_and_prints_nothing_raw(tmp_path):
    path, good = hostile_file(tmp_path)
    code, out, err = run_cli(["validate", str(path)])
    assert code == 0, err
    assert f"{len(good)} valid turns ({len(good)} segments), 4 invalid line(s)" in out
    listed = [line for line in out.splitlines() if "INVALID" in line]
    assert [line.split(": line ")[1].split(" ")[0].rstrip(":") for line in listed] == ["2", "4", "6", "8"]
    assert not has_unsafe(out.replace("\n", "")) and not has_unsafe(err.replace("\n", ""))
    assert "Traceback" not in err


@pytest.mark.parametrize("workers", [None, 2], ids=["one-process", "partitioned"])
def test_evaluate_judges_every_good_segment_of_a_file_with_hostile_lines(tmp_path, workers):
    from axon_eval import runs

    path, good = hostile_file(tmp_path)
    extra = ["--workers", str(workers), "--partition-bytes", "600"] if workers else []
    code, out, err = run_cli(["evaluate", "--turns", str(path), "--judge", "heuristic", "--out",
                              str(tmp_path / "runs"), "--no-cache", *extra])
    assert code == 0, err
    assert "Traceback" not in err and not has_unsafe(out.replace("\n", ""))
    (folder,) = [p for p in (tmp_path / "runs").iterdir() if p.is_dir() and not p.name.startswith(".")]
    run = runs.load_run(folder)
    assert sorted(run.results["segment_id"]) == good
    assert (run.results["status"] == "judged").all()
    invalid = [json.loads(line) for line in (folder / "invalid.jsonl").read_text().splitlines()]
    assert sorted({i["line"] for i in invalid}) == [2, 4, 6, 8]
    if workers:
        assert run.manifest.partitions is not None and run.manifest.partitions["count"] > 1
