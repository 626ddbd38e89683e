"""Study 05 (calibration): the notebook's hygiene and a real papermill execution on the smoke parameters.

The smoke run evaluates the bundled sample with the heuristic judge (into ``$AXON_EVAL_RUNS_DIR`` under
``tmp_path``) and calibrates it against the CONSTRUCTED labels (about 20 s on two cores, offline).
"""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest

from axon_eval import runs
from axon_eval.runs.notebook import check_parameters, load_params_files, notebook_parameters
from tests.notebook_checks import (
    assert_headline_says_constructed,
    assert_numbers_for_people,
    assert_thin_notebook,
    run_smoke,
)

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "notebooks" / "05_calibration.ipynb"
SMOKE = ROOT / "notebooks" / "params" / "05_smoke.yaml"
STUDY = "05_calibration"
PARAMETERS = {"source_run": None, "labels_file": "data/turns/labels.csv", "seed": 0, "n_boot": 2000, "run_dir": None}
ISSUE_KEYS = {"study", "judge_id", "n", "kappa", "kappa_ci", "rho", "rho_ci", "gate_passed"}
FIGURES = {"agreement_gate.png", "confusion.png", "scores_judge_vs_human.png", "agreement_by_stratum.png"}


def test_notebook_has_one_parameters_cell_no_outputs_and_no_definitions():
    nb = assert_thin_notebook(NOTEBOOK)
    assert notebook_parameters(NOTEBOOK) == PARAMETERS
    text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    for needed in ("CONSTRUCTED labels, not human", "lower bound", "Krippendorff", "Fisher z", "design",
                   "study.json", "0.7"):
        assert needed.lower() in text.lower(), needed


def test_smoke_parameters_are_notebook_parameters_and_small():
    params = load_params_files([SMOKE])
    check_parameters(NOTEBOOK, params, notebook_parameters(NOTEBOOK))
    assert params["n_boot"] <= 300 and params["source_run"] is None


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("runs")
    (result,) = run_smoke(NOTEBOOK, SMOKE, out)
    return out, result


@pytest.mark.slow
def test_smoke_run_writes_the_study(smoke_run):
    out, result = smoke_run
    assert result.status == "complete", result.error
    folder = result.run_dir
    assert folder.parent.resolve() == out.resolve()
    study = json.loads((folder / "study.json").read_text())
    assert ISSUE_KEYS <= set(study)
    assert study["study"] == STUDY and study["simulated"] is False and study["judge_id"].startswith("heuristic")
    source = Path(study["source_run"])
    assert source.is_dir() and source.parent.resolve() == out.resolve()
    m = runs.load_run(source).manifest
    assert study["n"] == m.counts.judged > 0
    for key in ("kappa", "rho"):
        lo, hi = study[f"{key}_ci"]
        assert -1 <= lo <= study[key] <= hi <= 1, key
    assert study["gate_passed"] == (study["kappa_ci"][0] >= 0.7)
    record = json.loads((folder / "calibration.json").read_text())  # read by study 09
    assert record["kappa_ci"] == pytest.approx(study["kappa_ci"]) and record["gate_passed"] == study["gate_passed"]
    assert record["judge_id"] == study["judge_id"] and record["n"] == study["n"]
    assert study["gate"]["n"] == study["n"] and f"n = {study['n']}" in study["gate"]["message"]
    assert study["labels_constructed"] is True and "CONSTRUCTED" in study["labels_note"]
    assert study["constructed"] is True  # the headline says CONSTRUCTED, as a SIMULATED study's says SIMULATED
    assert study["n_boot"] == 200 and study["labels_file"] == "data/turns/labels.csv"
    assert sum(sum(r.values()) for r in study["confusion"].values()) == study["n"]
    assert study["sample_size_plan"] and study["alpha_raters"]["verdict"]["n_raters"] == 2
    assert FIGURES <= {p.name for p in (folder / "figures").glob("*.png")}
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["status"] == "complete" and manifest["kind"] == "study"
    assert any(k.endswith("labels.csv") for k in manifest["input_files"])
    executed = nbformat.read(folder / f"{STUDY}.ipynb", as_version=4)
    assert not [o for c in executed.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert_headline_says_constructed(executed, STUDY)
    page = (folder / f"{STUDY}.html").read_text()
    assert page.count("CONSTRUCTED") >= 5


@pytest.mark.slow
def test_smoke_run_tables_and_printed_figures_read_for_people(smoke_run):
    """Every table through axon_eval.display.styled, no raw float printed (no study.json dump)."""
    _, result = smoke_run
    assert_numbers_for_people(nbformat.read(result.notebook_path, as_version=4))
