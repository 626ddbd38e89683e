"""The evidence JSON Schema (``python -m axon_eval schema``) and ``python -m axon_eval validate`` agree.

Every document below is judged twice through the production path: by the ``jsonschema`` library against
the schema the ``schema`` verb prints (draft 2020-12, with format assertion), and by the ``validate`` verb
on a one-line file. Each rule of the evidence model has a good and a bad document. The two rules that
compare two fields of a SQL step cannot be written in JSON Schema: for them the schema accepts, ``validate``
rejects, and the schema's ``$comment`` says so.

``jsonschema`` (and ``rfc3339-validator``, which its ``date-time`` format check needs) are installed with
Jupyter (nbformat, jupyter-events); they are not direct dependencies.
"""

from __future__ import annotations

import copy
import io
import json
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from axon_eval.cli import main

ROOT = Path(__file__).resolve().parents[1]

#: JSON Schema 2020-12 keywords (core, applicator, validation, format and meta-data vocabularies) the
#: schema may use, plus ``discriminator``, the OpenAPI annotation pydantic adds beside ``oneOf`` (it
#: validates nothing; ``oneOf`` does).
KEYWORDS = {
    "$schema", "$id", "$defs", "$ref", "$comment", "title", "description", "default", "examples", "deprecated",
    "readOnly", "writeOnly", "type", "enum", "const", "properties", "patternProperties", "additionalProperties",
    "required", "items", "prefixItems", "contains", "anyOf", "oneOf", "allOf", "not", "if", "then", "else",
    "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minLength", "maxLength",
    "pattern", "format", "minItems", "maxItems", "uniqueItems", "minProperties", "maxProperties",
    "discriminator",
}
_SUBSCHEMA = ("items", "additionalProperties", "not", "if", "then", "else", "contains")
_SUBSCHEMAS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SCHEMA_MAPS = ("properties", "$defs", "patternProperties")


def good() -> dict[str, Any]:
    """A complete, valid version-1 line: a tool call and a SQL statement that returned rows."""
    return {"schema_version": 1, "turn_id": "eu-0001", "captured_at": "2026-07-20T09:14:03Z", "region": "eu",
            "surface": "web", "client": "client-a", "question": "How many tries did Harbour City score?",
            "answer": "Harbour City scored 4 tries.",
            "steps": [{"kind": "tool", "name": "list_tables", "status": "ok", "args": {"schema": "main"},
                       "output": ["matches"], "error": None, "elapsed_ms": 3},
                      {"kind": "sql", "sql": "SELECT team, tries FROM t", "status": "ok", "error": None,
                       "columns": ["team", "tries"], "rows": [["Harbour City", 4]], "row_count": 1,
                       "elapsed_ms": 84}]}


def doc(*edits: tuple[str, Any]) -> dict[str, Any]:
    """``good()`` with edits: ``("a.b.0.c", value)`` sets a path, ``("a.b", DELETE)`` removes the key."""
    d = copy.deepcopy(good())
    for path, value in edits:
        *parents, last = path.split(".")
        target: Any = d
        for part in parents:
            target = target[int(part)] if isinstance(target, list) else target[part]
        if value is DELETE:
            del target[last]
        elif isinstance(target, list):
            target[int(last)] = value
        else:
            target[last] = value
    return d


DELETE = object()
FAILED_SQL = {"kind": "sql", "sql": "SELECT nope FROM t", "status": "error", "error": "no such column: nope",
              "columns": [], "rows": [], "row_count": None, "elapsed_ms": 2}

#: (name, document, valid?) -- judged the same by the schema and by validate
CORPUS: list[tuple[str, dict[str, Any], bool]] = [
    # valid documents
    ("complete version-1 turn", good(), True),
    ("null answer (the client's own AI answered)", doc(("answer", None)), True),
    ("no answer key at all", doc(("answer", DELETE)), True),
    ("failed statement with rows [] and columns []", doc(("steps.1", FAILED_SQL)), True),
    ("blocked statement", doc(("steps.1", {**FAILED_SQL, "status": "blocked", "error": "guardrail"})), True),
    ("timed-out statement without error text", doc(("steps.1", {**FAILED_SQL, "status": "timeout", "error": None})),
     True),
    ("no steps", doc(("steps", [])), True),
    ("only the required fields", {k: good()[k] for k in ("schema_version", "turn_id", "captured_at", "region",
                                                        "surface", "client", "question")}, True),
    ("decimal elapsed_ms", doc(("steps.1.elapsed_ms", 12.5)), True),
    ("zero elapsed_ms and null elapsed_ms", doc(("steps.1.elapsed_ms", 0), ("steps.0.elapsed_ms", None)), True),
    ("row_count larger than the stored prefix", doc(("steps.1.row_count", 4000)), True),
    ("row_count written as an integral decimal", doc(("steps.1.row_count", 1.0)), True),
    ("rows without columns", doc(("steps.1.columns", [])), True),
    ("explicit segments", doc(("segments", ["How many tries?", "Who won?"])), True),
    ("captured_at with an offset and fractions", doc(("captured_at", "2026-07-20T11:14:03.25+02:00")), True),
    ("captured_at in lower case", doc(("captured_at", "2026-07-20t09:14:03z")), True),
    ("version 2: unknown row count on an ok statement", doc(("schema_version", 2), ("steps.1.row_count", None)),
     True),
    ("version 2: sanitised query text", doc(("schema_version", 2), ("steps.1.sanitized", True)), True),
    ("version 1: sanitized false", doc(("steps.1.sanitized", False)), True),
    # invalid documents
    ("negative elapsed_ms on a SQL step", doc(("steps.1.elapsed_ms", -5)), False),
    ("negative decimal elapsed_ms on a tool step", doc(("steps.0.elapsed_ms", -0.5)), False),
    ("elapsed_ms as text", doc(("steps.1.elapsed_ms", "84")), False),
    ("elapsed_ms as a boolean", doc(("steps.1.elapsed_ms", True)), False),
    ("negative row_count", doc(("steps.1.row_count", -1)), False),
    ("fractional row_count", doc(("steps.1.row_count", 1.5)), False),
    ("row_count as text", doc(("steps.1.row_count", "1")), False),
    ("unknown step status", doc(("steps.1.status", "failed")), False),
    ("failed statement carrying rows", doc(("steps.1", {**FAILED_SQL, "columns": ["a"], "rows": [[1]],
                                                        "row_count": 1})), False),
    ("missing question", doc(("question", DELETE)), False),
    ("missing captured_at", doc(("captured_at", DELETE)), False),
    ("missing schema_version", doc(("schema_version", DELETE)), False),
    ("step without status", doc(("steps.1.status", DELETE)), False),
    ("step without kind", doc(("steps.1.kind", DELETE)), False),
    ("step of an unknown kind", doc(("steps.0.kind", "http")), False),
    ("tool step without name", doc(("steps.0.name", DELETE)), False),
    ("SQL step with empty sql", doc(("steps.1.sql", "")), False),
    ("question as a number", doc(("question", 5)), False),
    ("answer as a number", doc(("answer", 4)), False),
    ("steps as an object", doc(("steps", {"0": good()["steps"][0]})), False),
    ("rows as text", doc(("steps.1.rows", "none")), False),
    ("column names as numbers", doc(("steps.1.columns", [1, 2])), False),
    ("args as text", doc(("steps.0.args", "schema=main")), False),
    ("extra top-level field", doc(("user", "u-1")), False),
    ("extra field on a SQL step", doc(("steps.1.duration", 84)), False),
    ("extra field on a tool step", doc(("steps.0.sanitized", True)), False),
    ("schema_version 3", doc(("schema_version", 3)), False),
    ("schema_version as text", doc(("schema_version", "1")), False),
    ("schema_version as a boolean", doc(("schema_version", True)), False),
    ("version 1: sanitised query text", doc(("steps.1.sanitized", True)), False),
    ("sanitized as text", doc(("schema_version", 2), ("steps.1.sanitized", "yes")), False),
    ("sanitized as a number", doc(("schema_version", 2), ("steps.1.sanitized", 1)), False),
    ("turn_id with #", doc(("turn_id", "eu#1")), False),
    ("turn_id with a space", doc(("turn_id", "eu 1")), False),
    ("empty turn_id", doc(("turn_id", "")), False),
    ("empty region", doc(("region", "")), False),
    ("null client", doc(("client", None)), False),
    ("captured_at without a timezone", doc(("captured_at", "2026-07-20T09:14:03")), False),
    ("captured_at without seconds", doc(("captured_at", "2026-07-20T09:14Z")), False),
    ("captured_at as a date", doc(("captured_at", "2026-07-20")), False),
    ("captured_at as a Unix time", doc(("captured_at", 1784538843)), False),
    ("captured_at as Unix time text", doc(("captured_at", "1784538843")), False),
    ("captured_at on a day that does not exist", doc(("captured_at", "2026-02-30T09:14:03Z")), False),
    ("empty segments", doc(("segments", [])), False),
    ("a blank segment", doc(("segments", ["How many tries?", "  "])), False),
]

#: (name, document): invalid for validate, beyond what a JSON Schema can state (two fields compared)
CROSS_FIELD: list[tuple[str, dict[str, Any]]] = [
    ("row_count below the stored rows", doc(("steps.1.rows", [["Harbour City", 4], ["Eastport", 2]]))),
    ("a row with more values than columns", doc(("steps.1.rows", [["Harbour City", 4, "extra"]]))),
]


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["schema"]) == 0
    return json.loads(out.getvalue())


@pytest.fixture(scope="module")
def schema_valid(schema):
    validator_class = jsonschema.validators.validator_for(schema)
    assert validator_class is jsonschema.Draft202012Validator
    validator_class.check_schema(schema)
    assert "date-time" in validator_class.FORMAT_CHECKER.checkers, "install rfc3339-validator (date-time checks)"
    validator = validator_class(schema, format_checker=validator_class.FORMAT_CHECKER)
    return lambda document: validator.is_valid(document)


def validate_valid(document: dict[str, Any], tmp_path: Path) -> tuple[bool, dict[str, Any]]:
    """``python -m axon_eval validate --json`` on a file holding the document as its one line."""
    path = tmp_path / "turn.jsonl"
    path.write_text(json.dumps(document) + "\n", encoding="utf-8")
    out = io.StringIO()
    with redirect_stdout(out), redirect_stderr(io.StringIO()):
        code = main(["validate", str(path), "--json"])
    report = json.loads(out.getvalue())
    assert code in (0, 5), code
    assert (code == 0) == (report["valid_turns"] == 1)
    return code == 0, report


def test_the_schema_uses_only_standard_keywords(schema):
    found: set[str] = set()

    def walk(node: Any) -> None:
        if not isinstance(node, dict):
            return
        for key, value in node.items():
            found.add(key)
            if key in _SCHEMA_MAPS:
                for sub in value.values():
                    walk(sub)
            elif key in _SUBSCHEMA:
                walk(value)
            elif key in _SUBSCHEMAS:
                for sub in value:
                    walk(sub)

    walk(schema)
    assert found - KEYWORDS == set(), f"not JSON Schema keywords: {sorted(found - KEYWORDS)}"
    assert {"minimum", "pattern", "minLength", "additionalProperties", "required"} <= found


def test_the_corpus_has_a_good_and_a_bad_document_per_rule():
    names = [name for name, _d, _ok in CORPUS]
    assert len(names) == len(set(names)) and len(CORPUS) >= 40
    assert sum(ok for *_x, ok in CORPUS) >= 15 and sum(not ok for *_x, ok in CORPUS) >= 30


@pytest.mark.parametrize(("name", "document", "expected"), CORPUS, ids=[c[0] for c in CORPUS])
def test_the_schema_and_validate_agree(name, document, expected, schema_valid, tmp_path):
    by_validate, report = validate_valid(document, tmp_path)
    assert schema_valid(document) == expected, f"jsonschema: {name}"
    assert by_validate == expected, f"validate: {name}: {report['invalid']}"
    if not expected:  # validate names the line and the field
        assert report["invalid"] and all(item["line"] == 1 for item in report["invalid"]), report["invalid"]


@pytest.mark.parametrize(("name", "document"), CROSS_FIELD, ids=[c[0] for c in CROSS_FIELD])
def test_cross_field_rules_are_validates_and_the_schema_says_so(name, document, schema, schema_valid, tmp_path):
    by_validate, report = validate_valid(document, tmp_path)
    assert not by_validate and report["invalid"][0]["field"] == "steps.1", report["invalid"]
    assert schema_valid(document), f"{name}: a JSON Schema cannot compare two fields"
    comment = schema["$defs"]["SqlStep"]["$comment"]
    assert "validate" in comment and "row_count" in comment and "one value per column" in comment


def test_the_bundled_evidence_is_valid_under_the_schema(schema_valid):
    for path in sorted((ROOT / "data" / "turns").glob("*.jsonl")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if line.strip():
                assert schema_valid(json.loads(line)), f"{path.name}:{number}"
