"""Study 07 (weight recalibration): the notebook's hygiene and a real papermill execution.

* the committed notebook: one ``parameters`` cell with exactly the issue's parameters, no outputs, no
  ``def``/``class``/``lambda``; every section says the labels are constructed and the weights not to be
  adopted; the smoke parameter file names only notebook parameters;
* the smoke run (``source_run = None``): the notebook evaluates the bundled sample with the heuristic judge
  (under ``$AXON_EVAL_RUNS_DIR`` = tmp), fits both ways on the constructed labels, cross-validates on three
  folds and writes study.json, three figures and two proposals into its own folder -- nothing into the
  package. The proposals load as Rubrics that ``extends: axon-v1`` with the ids study.json records.

Offline, about 20-25 s on two cores.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import nbformat
import pytest
import yaml

from axon_eval import runs
from axon_eval.rubric import DIMENSIONS, Rubric
from axon_eval.runs.notebook import check_parameters, load_params_files, notebook_parameters
from axon_eval.stats.recalibration import DO_NOT_ADOPT
from tests.notebook_checks import (
    assert_headline_says_constructed,
    assert_numbers_for_people,
    assert_thin_notebook,
    run_smoke,
)

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "notebooks" / "07_weight_recalibration.ipynb"
SMOKE = ROOT / "notebooks" / "params" / "07_smoke.yaml"
STUDY = "07_weight_recalibration"

PARAMETERS = {"source_run": None, "labels_file": "data/turns/labels.csv", "n_folds": 5, "seed": 0,
              "write_proposal": True, "run_dir": None}
ISSUE_KEYS = {"study", "simulated", "constructed", "source_run", "judge_id", "rubric_id", "labels_file", "n", "n_folds", "seed",
              "fitted_weights", "cv_kappa", "nominal_weights", "in_sample_kappa", "fabricated_10_10_10_0",
              "least_squares", "ordinal", "proposals", "labels_note", "do_not_adopt", "targets", "base_rubric",
              "n_unlabelled"}
METHODS = {"nominal", "least_squares", "ordinal", "axon-v1-faithcap", "axon-v1-faithpartial"}
FIGURES = {"weights.png", "cv_kappa.png", "fabricated_10_10_10_0.png"}


# -- the committed notebook --------------------------------------------------------------------------------
def test_notebook_has_one_parameters_cell_no_outputs_and_no_definitions():
    nb = assert_thin_notebook(NOTEBOOK)
    assert notebook_parameters(NOTEBOOK) == PARAMETERS
    markdown = [c.source for c in nb.cells if c.cell_type == "markdown"]
    sections = [m for m in markdown if m.lstrip().startswith("## ")]
    for needed in ("## The question", "## 1. The two fits", "## 2. Cross-validated agreement",
                   "## 3. Perfect retrieval, fabricated answer", "## 4. The proposed rubrics", "## study.json"):
        assert any(s.lstrip().startswith(needed) for s in sections), needed
    # the warning is on the first page and on every results section
    warning = "the weights are fitted to constructed labels, not human judgements; do not adopt them"
    assert warning in markdown[0].lower()
    for s in sections:
        if s.lstrip().startswith(("## The question", "## 1.", "## 2.", "## 3.", "## 4.")):
            assert warning in s.lower(), s[:40]
    assert DO_NOT_ADOPT == warning


def test_smoke_parameters_are_notebook_parameters_and_tiny():
    params = load_params_files([SMOKE])
    check_parameters(NOTEBOOK, params, notebook_parameters(NOTEBOOK))
    assert params["source_run"] is None and params["n_folds"] <= 3 and params["write_proposal"] is True


# -- the smoke run ------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("runs")
    (result,) = run_smoke(NOTEBOOK, SMOKE, out, cache=tmp_path_factory.mktemp("cache") / "verdicts.sqlite")
    return out, result


@pytest.mark.slow
def test_smoke_run_writes_the_study(smoke_run):
    out, result = smoke_run
    assert result.status == "complete", result.error
    folder = result.run_dir
    assert folder.parent.resolve() == out.resolve()
    study = json.loads((folder / "study.json").read_text())
    assert set(study) == ISSUE_KEYS
    assert study["study"] == STUDY and study["simulated"] is False
    assert study["judge_id"].startswith("heuristic") and study["rubric_id"] == Rubric.default().id
    assert study["labels_file"] == "data/turns/labels.csv" and study["do_not_adopt"] == DO_NOT_ADOPT
    assert "CONSTRUCTED" in study["labels_note"]
    assert study["constructed"] is True  # the headline says CONSTRUCTED, as a SIMULATED study's says SIMULATED
    # the source run was evaluated here, under tmp, with the heuristic judge on the whole sample
    source = Path(study["source_run"])
    assert source.is_dir() and source.parent.resolve() == out.resolve()
    m = runs.load_run(source).manifest
    assert m.turns_file == "data/turns/sample_turns.jsonl" and study["n"] == m.counts.judged == 97
    assert study["n_folds"] == 3 and study["seed"] == 0

    # fitted weights: on the simplex; kappas for every method on the same three folds
    for method in ("least_squares", "ordinal"):
        w = study["fitted_weights"][method]
        assert set(w) == set(DIMENSIONS) and min(w.values()) >= 0 and sum(w.values()) == pytest.approx(1.0, abs=1e-5)
    assert set(study["cv_kappa"]) == METHODS
    for method, k in study["cv_kappa"].items():
        assert len(k["per_fold"]) == 3, method
        assert k["mean"] is None or -1 <= k["mean"] <= 1
    assert study["nominal_weights"] == Rubric.default().weights.as_dict()

    # (10, 10, 10, 0): 80 good under axon-v1, 49 poor / 79 partial under the faithfulness caps, 100 * (1 - w_f) refitted
    fab = {r["rubric"]: r for r in study["fabricated_10_10_10_0"]}
    assert (fab["nominal"]["score"], fab["nominal"]["band"]) == (80.0, "good")
    assert (fab["axon-v1-faithcap"]["score"], fab["axon-v1-faithcap"]["band"]) == (49.0, "poor")
    assert (fab["axon-v1-faithpartial"]["score"], fab["axon-v1-faithpartial"]["band"]) == (79.0, "partial")
    for method, prop in study["proposals"].items():
        expected = round(100 * (1 - prop["weights"]["answer_faithfulness"]), 1)
        assert fab[method]["score"] == pytest.approx(expected) and fab[method]["rubric_id"] == prop["rubric_id"]

    figures = {p.name for p in (folder / "figures").glob("*.png")}
    assert FIGURES <= figures
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["status"] == "complete" and manifest["kind"] == "study"
    assert manifest["source_run"] == study["source_run"]
    assert "data/turns/labels.csv" in manifest["input_files"]
    executed = nbformat.read(folder / f"{STUDY}.ipynb", as_version=4)
    assert not [o for c in executed.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert_headline_says_constructed(executed, STUDY)
    page = (folder / f"{STUDY}.html").read_text()
    assert page.count("do not adopt them") >= 6


@pytest.mark.slow
def test_smoke_run_proposals_load_as_rubrics_that_extend_axon_v1(smoke_run):
    out, result = smoke_run
    study = json.loads((result.run_dir / "study.json").read_text())
    assert set(study["proposals"]) == {m for m, w in study["fitted_weights"].items() if w is not None}
    package = Path(str(resources.files("axon_eval")))
    for method, prop in study["proposals"].items():
        path = Path(prop["file"])
        assert path.parent == result.run_dir / "proposals" and path.name == f"{prop['name']}.yaml"
        raw = yaml.safe_load(path.read_text())
        assert raw["extends"] == "axon-v1" and set(raw) == {"extends", "name", "weights"}
        assert DO_NOT_ADOPT in path.read_text()
        rubric = Rubric.from_yaml(path)
        assert rubric.id == prop["rubric_id"] != Rubric.default().id
        assert rubric.weights.as_dict() == prop["weights"]
        assert rubric.caps == Rubric.default().caps and rubric.bands == Rubric.default().bands
        assert not (package / "rubrics" / path.name).exists()
    # two folders in all: the study and its source run (nothing written elsewhere)
    assert len([p for p in out.iterdir() if p.is_dir() and not p.name.startswith(".")]) == 2


@pytest.mark.slow
def test_smoke_run_tables_and_printed_figures_read_for_people(smoke_run):
    """Every table through axon_eval.display.styled, no raw float printed (no study.json dump)."""
    _, result = smoke_run
    assert_numbers_for_people(nbformat.read(result.notebook_path, as_version=4))
