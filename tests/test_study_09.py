"""Study 09 (corrected estimates): the notebook's hygiene and a real papermill execution.

The smoke run first executes study 05 (which writes ``calibration.json``) and then study 09 into the same
``$AXON_EVAL_RUNS_DIR``; 09 evaluates the bundled sample with the heuristic judge, keeps 30 CONSTRUCTED
labels of a seeded stratified sample and reads 05's record (about 40 s on two cores, offline). Every value
of ``study.json`` is checked against a computation written out here: plain means of the run's rows,
numpy's weighted mean, ppi_py's point estimate, and the width ratio that defines the effective labels.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import nbformat
import pytest

from axon_eval import runs
from axon_eval.calibration import labelling
from axon_eval.runs.notebook import check_parameters, load_params_files, notebook_parameters
from axon_eval.stats import agreement
from tests.notebook_checks import (
    assert_headline_says_constructed,
    assert_numbers_for_people,
    assert_thin_notebook,
    markdown_text,
    run_smoke,
)

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "notebooks" / "09_corrected_estimates.ipynb"
SMOKE = ROOT / "notebooks" / "params" / "09_smoke.yaml"
NB05, SMOKE05 = ROOT / "notebooks" / "05_calibration.ipynb", ROOT / "notebooks" / "params" / "05_smoke.yaml"
STUDY = "09_corrected_estimates"
PARAMETERS = {"source_run": None, "labels": "data/turns/labels.csv", "n_labelled": 30, "confidence": 0.95,
              "seed": 0, "n_boot": None, "calibration": None, "trend_runs": None, "run_dir": None}
ISSUE_KEYS = {"study", "simulated", "source_run", "labels", "n_labelled", "n_unlabelled", "naive", "labels_only",
              "ppi", "effective_labels", "calibration", "claims_allowed"}
CORRECTED = ["mean score", "share good", "share partial", "share poor", "mean intent_understood",
             "mean sql_quality", "mean result_relevance", "mean answer_faithfulness"]


def test_notebook_has_one_parameters_cell_no_outputs_and_no_definitions():
    nb = assert_thin_notebook(NOTEBOOK)
    assert notebook_parameters(NOTEBOOK) == PARAMETERS
    text = markdown_text(nb).lower()
    for needed in ("constructed labels, not human", "lower bound", "ppi++", "effective labels", "stale",
                   "duckdb", "study.json", "0.7", "not judge error"):
        assert needed in text, needed


def test_smoke_parameters_are_notebook_parameters_and_small():
    params = load_params_files([SMOKE])
    check_parameters(NOTEBOOK, params, notebook_parameters(NOTEBOOK))
    # no n_boot: the headline intervals take the package's one default, the report's (the same interval everywhere)
    assert "n_boot" not in params and params["source_run"] is None and params["n_labelled"] == 30


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("runs")
    (r05,) = run_smoke(NB05, SMOKE05, out)
    assert r05.status == "complete", r05.error
    (result,) = run_smoke(NOTEBOOK, SMOKE, out)
    return out, r05, result


@pytest.mark.slow
def test_study_05_writes_the_calibration_record(smoke_run):
    _, r05, _ = smoke_run
    study05 = json.loads((r05.run_dir / "study.json").read_text())
    record = json.loads((r05.run_dir / "calibration.json").read_text())
    assert record["judge_id"] == study05["judge_id"] and record["n"] == study05["n"]
    assert record["kappa"] == pytest.approx(study05["kappa"]) and record["kappa_ci"] == pytest.approx(study05["kappa_ci"])
    assert record["gate_passed"] == (study05["kappa_ci"][0] >= 0.7) and record["threshold"] == 0.7
    source = runs.load_run(ROOT / study05["source_run"] if not Path(study05["source_run"]).is_absolute()
                           else study05["source_run"])
    assert record["rubric_id"] == source.manifest.rubric_id and record["prompt_version"] == source.manifest.prompt_version
    assert record["evidence"] == source.manifest.input_files and record["labels_constructed"] is True
    assert list(record["labels"]) == ["data/turns/labels.csv"]


@pytest.mark.slow
def test_smoke_run_writes_the_study(smoke_run):
    out, r05, result = smoke_run
    assert result.status == "complete", result.error
    folder = result.run_dir
    study = json.loads((folder / "study.json").read_text())
    assert ISSUE_KEYS <= set(study)
    assert study["study"] == STUDY and study["simulated"] is False and study["labels"] == "data/turns/labels.csv"
    assert study["constructed"] is True  # the headline says CONSTRUCTED, as a SIMULATED study's says SIMULATED
    assert_headline_says_constructed(nbformat.read(result.notebook_path, as_version=4), STUDY)
    source = runs.load_run(study["source_run"] if Path(study["source_run"]).is_absolute() else ROOT / study["source_run"])
    assert Path(source.run_dir).parent.resolve() == out.resolve()
    res = source.results[source.results["status"] == "judged"]

    # naive: plain means over the judged segments, intervals around them
    assert study["naive"]["mean score"]["estimate"] == pytest.approx(res["score"].mean(), abs=1e-9)
    for band in ("good", "partial", "poor"):
        assert study["naive"][f"share {band}"]["estimate"] == pytest.approx((res["band"] == band).mean(), abs=1e-9)
    for figure, v in study["naive"].items():
        lo, hi = v["interval"]
        assert lo <= v["estimate"] <= hi, figure
    assert study["naive"]["mean score"]["n"] == len(res) == 97

    # the labelled subset: proportional allocation by the judge's band, written out here
    n_h = res["band"].value_counts()
    alloc = np.minimum(n_h, np.maximum(1, (n_h * 30 / len(res)).round().astype(int)))
    assert study["n_labelled"] == int(alloc.sum()) == len(study["labelled_segments"])
    assert study["n_unlabelled"] == len(res) - study["n_labelled"]

    # human values of the labelled segments (two constructed raters scored by the rubric, averaged)
    lab = labelling.labels_from_constructed(ROOT / "data/turns/labels.csv", seed=0)
    scored = agreement.score_human_labels(lab, source.results)
    human_score = scored.groupby("segment_id")["human_score"].mean()
    ids = study["labelled_segments"]
    band_of = res.set_index("segment_id")["band"]
    w = np.array([n_h[band_of[s]] / alloc[band_of[s]] for s in ids])
    y = human_score.loc[ids].to_numpy()
    assert study["labels_only"]["mean score"]["estimate"] == pytest.approx(np.average(y, weights=w), abs=1e-9)
    from ppi_py import ppi_mean_pointestimate

    yhat = res.set_index("segment_id")["score"].loc[ids].to_numpy()
    # about 10 labels per band stratum, fewer than 50: lam is not tuned on them (plain PPI, lam = 1)
    expected = ppi_mean_pointestimate(y, yhat, res["score"].to_numpy(), w=w, lam=1.0)
    assert study["lam"]["mean score"] == 1.0
    assert study["ppi"]["mean score"]["estimate"] == pytest.approx(float(np.ravel(expected)[0]), abs=1e-6)
    # every corrected figure quotes the SIMULATED coverage at the nearest simulated n (stratified: n = 20 or 60)
    quoted = study["simulated_coverage"]["mean score"]
    assert quoted["note"].startswith("SIMULATED coverage of the 95% intervals at n = 20, 10 per stratum")
    assert quoted["method"].startswith("PPI (lam = 1), Student-t") and set(study["simulated_coverage"]) == set(CORRECTED)
    assert study["full_labels"]["mean score"] == pytest.approx(human_score.mean(), abs=1e-9)

    # effective labels: n * (labels-only width / PPI width)^2 (both normal intervals at the same level)
    for figure in CORRECTED:
        (llo, lhi), (plo, phi) = study["labels_only"][figure]["interval"], study["ppi"][figure]["interval"]
        n = 25 if figure == "mean answer_faithfulness" else study["n_labelled"]
        if figure != "mean answer_faithfulness":
            assert study["effective_labels"][figure] == pytest.approx(n * ((lhi - llo) / (phi - plo)) ** 2, rel=1e-6)
        assert plo <= study["ppi"][figure]["estimate"] <= phi
    assert "share capped" not in study["ppi"]

    # the calibration record of study 05 applies (same judge and rubric) and gates the claims
    record = json.loads((r05.run_dir / "calibration.json").read_text())
    assert study["calibration"]["stale"] is False and study["calibration"]["reasons"] == []
    assert study["calibration"]["record"]["kappa_ci"] == pytest.approx(record["kappa_ci"])
    assert study["claims_allowed"] is False  # CONSTRUCTED labels never allow a claim, whatever the gate says
    assert "NOT allowed" in study["claims"]

    # the trend: the source run alone, equal to the naive figures
    rows = pd.DataFrame(study["trend"]["rows"])
    assert rows.set_index("figure").loc["mean score", "estimate"] == pytest.approx(res["score"].mean())
    assert {"corrected_estimates.png", "trend.png"} <= {p.name for p in (folder / "figures").glob("*.png")}
    page = (folder / f"{STUDY}.html").read_text()
    assert page.count("CONSTRUCTED") >= 3


@pytest.mark.slow
def test_smoke_run_tables_and_printed_figures_read_for_people(smoke_run):
    """Every table through axon_eval.display.styled, no raw float printed (no study.json dump)."""
    _, r05, result = smoke_run
    assert_numbers_for_people(nbformat.read(r05.notebook_path, as_version=4))
    assert_numbers_for_people(nbformat.read(result.notebook_path, as_version=4))
