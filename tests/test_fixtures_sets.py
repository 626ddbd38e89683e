"""The labelled sets kept as data: every set file validates, its counts match the committed labels, the
shared builder rebuilds the committed bytes, and a bad file is refused with the file, line, case and value.
"""

from __future__ import annotations

import csv
import json
import sqlite3
import subprocess
import sys
import tomllib
from collections import Counter
from fnmatch import fnmatch
from pathlib import Path

import pytest

from axon_eval.fixtures.__main__ import main
from axon_eval.fixtures.build import INCOMPLETE_TURN_FILE
from axon_eval.fixtures.labelled import (
    LABEL_COLUMNS, SETS_DIR, SetError, build_set_files, load_set, render, set_specs, spec,
)
from axon_eval.fixtures.reference import REFERENCE_FILE, reference_set

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data"
SPECS = set_specs()
WAREHOUSE = DATA / "warehouse" / "sports.sqlite"


@pytest.fixture(scope="module")
def sports():
    conn = sqlite3.connect(f"file:{WAREHOUSE}?mode=ro", uri=True)
    yield conn
    conn.close()


def _conn(s, sports):
    return sports if s.rows == "sports" else None


def _labels(s) -> list[dict[str, str]]:
    with (DATA / "turns" / s.labels_file).open(encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


def test_the_index_names_every_set_file_and_only_those():
    on_disk = {p.name for p in SETS_DIR.glob("*.jsonl")}
    # beside the case files: the sample's one incomplete turn (its event stream stops before the answer)
    assert on_disk == {s.cases for s in SPECS} | {INCOMPLETE_TURN_FILE}
    for s in SPECS:
        assert s.readme is None or (SETS_DIR / s.readme).is_file(), s.readme
    assert {s.turns_file for s in SPECS} | {s.labels_file for s in SPECS} <= {
        p.name for p in (DATA / "turns").iterdir()}


@pytest.mark.parametrize("s", SPECS, ids=lambda s: s.name)
def test_every_set_rebuilds_its_committed_files_byte_for_byte(s, sports, tmp_path):
    build_set_files(tmp_path, s, _conn(s, sports))
    for name in (s.turns_file, s.labels_file):
        assert (tmp_path / "turns" / name).read_bytes() == (DATA / "turns" / name).read_bytes(), name


@pytest.mark.parametrize("s", SPECS, ids=lambda s: s.name)
def test_counts_by_class_and_defect_match_the_committed_labels(s, sports):
    cases = load_set(SETS_DIR / s.cases, _conn(s, sports))
    labels = [lb for case, _ in cases for lb in case.labels]
    rows = _labels(s)
    assert len(labels) == len(rows)
    assert Counter(lb.defect for lb in labels) == Counter(r["defect"] for r in rows)
    assert Counter(lb.verdict for lb in labels) == Counter(r["verdict"] for r in rows)
    if s.class_column:
        assert Counter(lb.class_ for lb in labels) == Counter(r[s.class_column] for r in rows)
    if s.note == "class_reason":
        assert Counter(lb.class_ for lb in labels) == Counter(r["note"].split(":", 1)[0] for r in rows)
    else:
        assert [lb.reason for lb in labels] == [r["note"] for r in rows]
    assert [r["turn_id"] for r in rows] == [t.turn_id for case, t in cases for _ in case.labels]
    assert list(rows[0]) == [*LABEL_COLUMNS, *s.extra_columns]


def test_the_check_command_validates_every_set_and_prints_counts_by_class(capsys):
    assert main(["check"]) == 0
    out = capsys.readouterr().out
    for s in SPECS:
        assert f"{s.name}: " in out
    assert "reference: " in out and f"{len(SPECS) + 1} sets valid" in out
    hotel = out.split("\nhotel: ", 1)[1].split("\nlearning: ", 1)[0]
    assert "fan_out" in hotel and "control" in hotel


def test_the_check_command_runs_as_a_module():
    done = subprocess.run([sys.executable, "-m", "axon_eval.fixtures", "check"], capture_output=True, text=True,
                          cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "sets valid" in done.stdout


def _broken(tmp_path: Path, name: str, edit) -> Path:
    lines = (SETS_DIR / spec(name).cases).read_text(encoding="utf-8").splitlines()
    case = json.loads(lines[2])
    edit(case)
    lines[2] = json.dumps(case, ensure_ascii=False)
    path = tmp_path / f"{name}.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_a_bad_range_is_refused_naming_file_line_case_and_value(tmp_path):
    path = _broken(tmp_path, "hotel", lambda c: c["labels"][0].update(sql=[7, 3]))
    case_id = json.loads(path.read_text().splitlines()[2])["id"]
    with pytest.raises(SetError) as err:
        load_set(path)
    msg = str(err.value)
    assert msg.startswith(f"hotel.jsonl:3 (case {case_id}): labels.0.sql")
    assert "[7, 3]" in msg and "0 <= lo <= hi <= 10" in msg


def test_a_verdict_off_its_band_and_a_claim_not_in_the_answer_are_refused(tmp_path):
    def flip(c):
        lb = c["labels"][0]
        lb["verdict"] = "poor" if lb["verdict"] != "poor" else "good"
    with pytest.raises(SetError, match=r"water\.jsonl:3 .*verdict: got .*expected"):
        load_set(_broken(tmp_path, "water", flip))
    with pytest.raises(SetError, match=r"transit\.jsonl:3 .*'no such words' is not a substring"):
        load_set(_broken(tmp_path, "transit", lambda c: c["labels"][0].update(claims=["no such words"])))


def test_an_unknown_field_and_a_duplicate_id_are_refused(tmp_path):
    with pytest.raises(SetError, match=r"learning\.jsonl:3 .*labels\.0\.colour: Extra inputs"):
        load_set(_broken(tmp_path, "learning", lambda c: c["labels"][0].update(colour="red")))
    src = SETS_DIR / spec("library").cases
    first = src.read_text(encoding="utf-8").splitlines()[0]
    path = tmp_path / "dup.jsonl"
    path.write_text(first + "\n" + first + "\n", encoding="utf-8")
    with pytest.raises(SetError, match=r"dup\.jsonl:2 .*already used on line 1"):
        load_set(path)


def test_a_rows_from_warehouse_case_needs_the_warehouse():
    with pytest.raises(SetError, match=r"horizon\.jsonl:1 .*expected a warehouse connection"):
        load_set(SETS_DIR / spec("horizon").cases)


def test_render_fills_every_placeholder_or_names_the_one_it_cannot():
    summary = {"turns": 3, "class": {"a": 1, "b": 2}, "case_turns": {"x": "t-0001"}, "tables": {"t": 1234},
               "surface": {"mcp": 1}}
    assert render("{{turns}} {{turn:x}} {{tables}} {{mcp_turns}}\n{{table:class}}", summary) == \
        "3 t-0001 t 1,234 1\n| a | 1 |\n| b | 2 |"
    with pytest.raises(SetError, match=r"hotel\.README\.md: cannot fill \{\{nope\}\}"):
        render("{{nope}}", summary, "hotel.README.md")


def test_the_reference_set_file_validates_and_matches_the_committed_files():
    questions, responses, labels = reference_set()
    assert len(responses) == len(labels) >= 3 * len(questions)
    with (DATA / "reference" / "labels.csv").open(encoding="utf-8", newline="") as fh:
        assert [r["response_id"] for r in csv.DictReader(fh)] == [r["response_id"] for r in labels]


def test_a_reference_response_without_a_note_is_refused(tmp_path):
    path = tmp_path / "reference.yaml"
    path.write_text(REFERENCE_FILE.read_text(encoding="utf-8").replace("expected_grade: pass", "expected_grade: maybe", 1),
                    encoding="utf-8")
    with pytest.raises(SetError, match=r"reference\.yaml: question \w+: .*expected_grade"):
        reference_set(path)


def test_the_set_files_are_package_data():
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    patterns = pyproject["tool"]["setuptools"]["package-data"]["axon_eval"]
    for p in SETS_DIR.iterdir():
        rel = f"fixtures/sets/{p.name}"
        assert any(fnmatch(rel, pat) for pat in patterns), rel


def test_no_python_file_of_the_fixtures_cites_an_issue_number():
    import re

    pattern = re.compile(r"\bissues? *[0-9]|\bissue-[0-9]", re.IGNORECASE)
    offenders = [str(p) for pkg in ("fixtures", "warehouses", "simulator")
                 for p in (ROOT / "axon_eval" / pkg).rglob("*.py") if pattern.search(p.read_text(encoding="utf-8"))]
    assert offenders == []

