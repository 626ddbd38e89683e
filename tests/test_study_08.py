"""Study 08 (reference grading): the notebook's hygiene and one papermill smoke run into ``tmp_path``
(offline, heuristic reference judge, a few seconds of grading)."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest

from axon_eval import runs
from axon_eval.runs.notebook import check_parameters, load_params_files, notebook_parameters, run_notebook
from tests.notebook_checks import assert_numbers_for_people, assert_thin_notebook

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "notebooks" / "08_reference_grading.ipynb"
SMOKE = ROOT / "notebooks" / "params" / "08_smoke.yaml"
STUDY = "08_reference_grading"

PARAMETERS = {"questions_file": "data/reference/questions.yaml", "responses_file": "data/reference/responses.jsonl",
              "labels_file": "data/reference/labels.csv", "judge": "heuristic", "seed": 0, "run_dir": None}
SPLIT_KEYS = ("n_questions", "n_responses", "false_pass", "false_fail", "review_required")
ISSUE_KEYS = {"study", "simulated", "source_run", "judge_id", "seed_examples", *SPLIT_KEYS}


def test_notebook_has_one_parameters_cell_no_outputs_and_no_definitions():
    nb = assert_thin_notebook(NOTEBOOK)
    assert notebook_parameters(NOTEBOOK) == PARAMETERS
    text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown").lower()
    for needed in ("claim being tested", "constructed", "held-out", "read-only", "study.json", "tolerance"):
        assert needed in text, needed


def test_smoke_parameters_are_notebook_parameters():
    params = load_params_files([SMOKE])
    check_parameters(NOTEBOOK, params, notebook_parameters(NOTEBOOK))
    assert params["judge"] == "heuristic"


@pytest.mark.slow
def test_smoke_run_writes_the_study(tmp_path, monkeypatch):
    monkeypatch.setenv(runs.RUNS_DIR_ENV, str(tmp_path))
    monkeypatch.delenv(runs.CACHE_ENV, raising=False)
    result = run_notebook(NOTEBOOK, params_files=[SMOKE], out_dir=tmp_path)
    assert result.status == "complete", result.error
    assert result.run_dir.parent.resolve() == tmp_path.resolve()
    study = json.loads((result.run_dir / "study.json").read_text())
    assert set(study) == ISSUE_KEYS
    assert study["study"] == STUDY and study["simulated"] is False and study["source_run"] is None
    assert study["judge_id"] == "heuristic-reference/v1"
    for key in SPLIT_KEYS:
        assert set(study[key]) == {"overall", "heldout"}, key
    assert study["n_questions"]["overall"] >= 24 and study["n_responses"]["overall"] >= 72
    assert study["false_pass"]["heldout"] == 0  # the issue's goal
    assert len(study["seed_examples"]) == 6
    assert all(set(r) == {"reference", "claim", "tolerance_rule", "within_tolerance"} for r in study["seed_examples"])
    assert [r["within_tolerance"] for r in study["seed_examples"]] == [True, True, False, False, False, False]
    manifest = json.loads((result.run_dir / "manifest.json").read_text())
    assert manifest["status"] == "complete" and manifest["kind"] == "study"
    assert {"data/reference/questions.yaml", "data/reference/responses.jsonl",
            "data/reference/labels.csv"} <= set(manifest["input_files"])
    # graded by the package call of `grade-reference`, recorded in the study folder and the grade cache
    for name in ("grades.parquet", "grades.jsonl", "evidence.jsonl", "agreement.json", "report.html"):
        assert (result.run_dir / name).is_file(), name
    assert manifest["judge_id"] == "heuristic-reference/v1" and manifest["cache_misses"] == 72
    assert manifest["counts"]["turns"] == 75 and manifest["counts"]["invalid"] == 3
    assert (tmp_path / ".cache" / "verdicts.sqlite").is_file()
    assert json.loads((result.run_dir / "agreement.json").read_text())["heldout"]["false_pass"] == 0
    executed = nbformat.read(result.run_dir / f"{STUDY}.ipynb", as_version=4)
    assert_numbers_for_people(executed)  # tables through display.styled, no raw float printed
    assert not [o for c in executed.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    page = (result.run_dir / f"{STUDY}.html").read_text()
    assert "no such column: returned_units" in page and "out_of_tolerance" in page
    # nothing else written under tmp_path
    assert [p for p in tmp_path.iterdir() if p.is_dir() and not p.name.startswith(".")] == [result.run_dir]
