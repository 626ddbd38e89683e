"""Study 06 (judge drift): the notebook's hygiene and two real papermill executions.

* the committed notebook: one ``parameters`` cell with exactly the issue's parameters, no outputs, no
  ``def``/``class``/``lambda``; the smoke parameter file names only notebook parameters;
* the smoke run (``anchor_run = None``): the notebook evaluates the bundled sample with the heuristic
  judge, marks it as the anchor, re-judges it with the SIMULATED candidate and writes ``drift.json`` and
  ``study.json``; every folder lands under ``tmp_path`` (``out_dir`` for the study,
  ``$AXON_EVAL_RUNS_DIR`` for the anchor and the candidate, ``$AXON_EVAL_CACHE`` for the verdict cache);
* an explicit anchor re-judged by its own deterministic judge: no drift at all, not simulated, adopt.
"""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest

from axon_eval import runs
from axon_eval.calibration import anchors
from axon_eval.runs.notebook import check_parameters, load_params_files, notebook_parameters, run_notebook
from axon_eval.stats.drift import THRESHOLDS
from tests.notebook_checks import assert_numbers_for_people, assert_thin_notebook
from axon_eval.judges import build_judge

#: The offline judge's id (the fitted judge, named by its coefficient file's hash).
DEFAULT_JUDGE_ID = build_judge("heuristic").judge_id

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "notebooks" / "06_judge_drift.ipynb"
SMOKE = ROOT / "notebooks" / "params" / "06_smoke.yaml"
SAMPLE = ROOT / "data" / "turns" / "sample_turns.jsonl"
STUDY = "06_judge_drift"

PARAMETERS = {"anchor_run": None, "candidate_judge": "simulate(heuristic, sd=1, seed=1)", "thresholds": None,
              "seed": 0, "run_dir": None}
ISSUE_KEYS = {"study", "simulated", "source_run", "judge_id", "n", "anchor_run", "mean_delta", "mean_delta_ci",
              "wilcoxon_p", "decision"}
FIGURES = set(anchors.DRIFT_FIGURES)


# -- the committed notebook --------------------------------------------------------------------------------
def test_notebook_has_one_parameters_cell_no_outputs_and_no_definitions():
    nb = assert_thin_notebook(NOTEBOOK)
    assert notebook_parameters(NOTEBOOK) == PARAMETERS
    text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    for needed in ("What an anchor is", "anchor.json", "Bland-Altman", "Wilcoxon", "Band transitions",
                   "Per-dimension drift", "The decision", "SIMULATED", "study.json", "thresholds.yaml"):
        assert needed.lower() in text.lower(), needed


def test_smoke_parameters_are_notebook_parameters():
    params = load_params_files([SMOKE])
    check_parameters(NOTEBOOK, params, notebook_parameters(NOTEBOOK))
    assert params["anchor_run"] is None and params["candidate_judge"].startswith("simulate(")


# -- shared checks -------------------------------------------------------------------------------------------
def check_study(folder: Path) -> dict:
    study = json.loads((folder / "study.json").read_text())
    assert ISSUE_KEYS <= set(study)
    assert study["study"] == STUDY and study["decision"] in ("adopt", "hold") and study["n"] > 0
    drift = json.loads((folder / "drift.json").read_text())
    assert drift["decision"] == study["decision"] and drift["n"] == study["n"]
    assert drift["mean_delta"] == pytest.approx(study["mean_delta"])
    assert {c["threshold"] for c in drift["decision_detail"]["checks"]} == set(THRESHOLDS)
    assert FIGURES <= {p.name for p in (folder / "figures").glob("*.png")}
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["status"] == "complete" and manifest["kind"] == "study"
    assert manifest["source_run"] == study["source_run"] and manifest["judge_id"] == study["judge_id"]
    assert any(k.endswith("thresholds.yaml") for k in manifest["input_files"])
    executed = nbformat.read(folder / f"{STUDY}.ipynb", as_version=4)
    assert_numbers_for_people(executed)  # tables through display.styled, no raw float printed
    assert not [o for c in executed.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    return study


# -- the smoke run: the notebook makes and marks its own anchor ----------------------------------------------
@pytest.mark.slow
def test_smoke_run_writes_the_study(tmp_path, monkeypatch):
    monkeypatch.setenv(runs.RUNS_DIR_ENV, str(tmp_path))
    monkeypatch.setenv(runs.CACHE_ENV, str(tmp_path / "cache.sqlite"))
    result = run_notebook(NOTEBOOK, params_files=[SMOKE], out_dir=tmp_path)
    assert result.status == "complete", result.error
    assert result.run_dir.parent.resolve() == tmp_path.resolve()
    study = check_study(result.run_dir)
    assert study["simulated"] is True and study["judge_id"].startswith("simulated(")
    assert "SIMULATED" in json.loads((result.run_dir / "manifest.json").read_text())["warnings"][-1]
    lo, hi = study["mean_delta_ci"]
    assert lo <= study["mean_delta"] <= hi and 0 <= study["wilcoxon_p"] <= 1

    anchor = Path(study["source_run"])
    assert anchor.parent.resolve() == tmp_path.resolve() and anchors.is_anchor(anchor)
    assert study["anchor_run"] == anchor.name and anchors.verify_anchor(anchor).judge_id == DEFAULT_JUDGE_ID
    candidate = Path(study["candidate_run"])
    assert candidate.parent.resolve() == tmp_path.resolve()
    assert runs.load_run(candidate).manifest.source_run == str(anchor)
    # three folders in all: study, anchor, candidate (nothing written elsewhere)
    assert len([p for p in tmp_path.iterdir() if p.is_dir() and not p.name.startswith(".")]) == 3

    page = (result.run_dir / f"{STUDY}.html").read_text()
    assert "SIMULATED candidate judge." in page and "Decision:" in page
    assert "SIMULATED candidate judge." in (result.run_dir / "drift.html").read_text()


# -- an explicit anchor, re-judged by its own (deterministic) judge -------------------------------------------
@pytest.mark.slow
def test_explicit_anchor_with_the_same_judge_does_not_drift(tmp_path, monkeypatch):
    monkeypatch.setenv(runs.RUNS_DIR_ENV, str(tmp_path))
    monkeypatch.setenv(runs.CACHE_ENV, str(tmp_path / "cache.sqlite"))
    source = runs.evaluate(SAMPLE, "heuristic", "axon-v1", out_dir=tmp_path / "anchors", name="explicit",
                           progress=False)
    anchors.mark_anchor(source.run_dir, "explicit anchor for test_study_06")
    result = run_notebook(NOTEBOOK, {"anchor_run": str(source.run_dir), "candidate_judge": "heuristic"},
                          out_dir=tmp_path)
    assert result.status == "complete", result.error
    study = check_study(result.run_dir)
    assert study["simulated"] is False and study["judge_id"] == DEFAULT_JUDGE_ID
    assert study["mean_delta"] == 0 and study["mean_delta_ci"] == [0, 0] and study["wilcoxon_p"] is None
    assert study["decision"] == "adopt" and study["n"] == len(source.results)
    assert Path(study["source_run"]).resolve() == source.run_dir.resolve()
    page = (result.run_dir / f"{STUDY}.html").read_text()
    assert "SIMULATED candidate judge." not in page


def test_a_run_that_is_not_an_anchor_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv(runs.RUNS_DIR_ENV, str(tmp_path))
    monkeypatch.setenv(runs.CACHE_ENV, str(tmp_path / "cache.sqlite"))
    source = runs.evaluate(SAMPLE, "heuristic", "axon-v1", out_dir=tmp_path / "anchors", name="plain", limit=2,
                           progress=False)
    result = run_notebook(NOTEBOOK, {"anchor_run": str(source.run_dir)}, out_dir=tmp_path, export_html=False)
    assert result.status == "failed" and "not an anchor" in (result.error or "")
