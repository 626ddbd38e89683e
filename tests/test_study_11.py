"""Study 11 (label budgets): the committed notebook (hygiene, parameters) and a real papermill smoke run.

Oracles written here: the bundled population's truth (the mean of the constructed labels' midpoint
raters, recomputed from the labels file and the run), the signal descriptions, the half-width ordering
labels only > PPI that the judge's correlation with the labels implies, and the study.json keys.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from axon_eval.runs.notebook import check_parameters, load_params_files, notebook_parameters
from tests.notebook_checks import (
    assert_thin_notebook,
    markdown_text,
    run_smoke,
    table_cells_for_people,
    unfit_for_people,
)

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "notebooks" / "11_label_budget.ipynb"
SMOKE = ROOT / "notebooks" / "params" / "11_smoke.yaml"
STUDY = "11_label_budget"
PARAMETERS = {"source_run": None, "labels": "data/turns/labels.csv", "budgets": [10, 20, 30, 40, 50, 60],
              "signal": "model", "signal_correlations": [0.0, 0.3, 0.6, 0.9], "target_half_width": 2.0,
              "n_replications": 1000, "seed": 0, "run_dir": None}
#: The keys the issue names, then the details the notebook adds.
ISSUE_KEYS = {"study", "simulated", "source_run", "labels", "designs", "labels_saved", "plan", "signal"}
DETAIL_KEYS = {"goals", "seed", "n_replications", "target_half_width", "budgets", "labels_sha256", "labels_constructed",
               "plan_basis", "n_segments_bundled", "segments_left_out", "constants", "notes"}
FIGURES = {"bundled_curves.png", "simulated_curves.png", "labels_saved.png"}
DESIGNS = {"labels only", "uniform", "stratified", "active"}


def test_notebook_is_thin_with_the_issue_parameters():
    nb = assert_thin_notebook(NOTEBOOK)
    assert notebook_parameters(NOTEBOOK) == PARAMETERS
    text = markdown_text(nb)
    for needed in ("SIMULATED", "CONSTRUCTED labels", "## 1. Population (a)", "## 2. Population (b)",
                   "## 3. Labels saved, and the goals", "## 4. The planner against the simulated outcome",
                   "## study.json", "30% fewer labels", "10% wider", "93-97%"):
        assert needed in text, needed


def test_smoke_parameters_are_notebook_parameters():
    params = load_params_files([SMOKE])
    check_parameters(NOTEBOOK, params, notebook_parameters(NOTEBOOK))
    assert params["n_replications"] <= 50 and params["source_run"] is None


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("runs")
    (result,) = run_smoke(NOTEBOOK, SMOKE, out, cache=tmp_path_factory.mktemp("cache") / "verdicts.sqlite")
    return out, result


@pytest.mark.slow
def test_smoke_run_writes_the_study(smoke_run):
    import nbformat
    import numpy as np
    import pandas as pd

    from axon_eval import runs
    from axon_eval.labels import load_labels
    from axon_eval.rubric import DIMENSIONS, Rubric
    from axon_eval.scoring import score_turn

    _out, result = smoke_run
    assert result.status == "complete", result.error
    folder = result.run_dir
    study = json.loads((folder / "study.json").read_text())
    assert ISSUE_KEYS <= set(study) and set(study) <= ISSUE_KEYS | DETAIL_KEYS
    assert study["study"] == STUDY and study["simulated"] is True and study["labels_constructed"] is True
    params = load_params_files([SMOKE])
    assert study["seed"] == params["seed"] and study["n_replications"] == params["n_replications"]
    source = Path(study["source_run"])
    source = source if source.is_absolute() else ROOT / source
    assert source.is_dir()

    # designs: per population, every design at every budget, with a half-width, a coverage in [0, 1] and its n
    assert set(study["designs"]) == {"bundled", "simulated"}
    for population, rows in study["designs"].items():
        assert {r["design"] for r in rows} == DESIGNS, population
        assert {r["n"] for r in rows} == set(params["budgets"])
        for r in rows:
            assert r["half_width"] > 0 and 0 <= r["coverage"] <= 1 and r["replications"] == params["n_replications"]
        # labels alone are wider than PPI at every n (the judge correlates with the labels)
        by = {(r["design"], r["n"]): r["half_width"] for r in rows if r["signal"] is None}
        assert all(by[("labels only", n)] > by[("uniform", n)] for n in params["budgets"])
    signals = {r["signal"] for r in study["designs"]["bundled"] if r["design"] == "active"}
    assert signals == {"model", "perfect"}
    sim_signals = {r["signal"] for r in study["designs"]["simulated"] if r["design"] == "active"}
    assert sim_signals == {f"rho={c:g}" for c in params["signal_correlations"]}

    # labels saved per correlation; the plan per design; the goals recorded
    assert set(study["labels_saved"]) == {f"{c:g}" for c in params["signal_correlations"]}
    for v in study["labels_saved"].values():
        assert v["labels_saved"] == pytest.approx(v["n_uniform"] - v["n_active"])
    assert set(study["plan"]) == DESIGNS
    for v in study["plan"].values():
        assert v["planned_n"] >= 2 and 0 <= v["share_reaching_target"] <= 1
    assert set(study["goals"]) == {"active_saves_labels", "useless_signal_costs_little", "coverage"}
    assert all(isinstance(g.get("met", True), bool) for g in study["goals"].values())
    assert study["signal"]["mix_uniform"] == 0.5 and study["signal"]["bundled"]["signals"] == ["model", "perfect"]

    # the bundled population's truth: the constructed labels' raters scored by the rubric, recomputed here
    run = runs.load_run(source)
    res = run.results.set_index("segment_id")
    lab = load_labels(ROOT / params["labels"]).set_index("segment_id")
    from axon_eval.calibration.labelling import labels_from_constructed

    raters = labels_from_constructed(lab.reset_index(), seed=params["seed"])
    scores = []
    for sid, g in raters.groupby("segment_id"):
        facts = {f: bool(res.at[sid, f]) for f in ("all_sql_failed", "ended_on_failure", "no_tools")}
        per = [score_turn({d: (None if pd.isna(r[d]) else float(r[d])) for d in DIMENSIONS}, facts,
                          Rubric.default()).score for _, r in g.iterrows()]
        scores.append(np.mean(per))
    assert study["n_segments_bundled"] == len(scores) == 97
    assert [r["truth"] for r in study["designs"]["bundled"]] == pytest.approx([float(np.mean(scores))] * len(
        study["designs"]["bundled"]), abs=1e-9)
    assert {r["truth"] for r in study["designs"]["simulated"]} == {70.0 - 2.0}  # JUDGE_MEAN - JUDGE_BIAS

    figures = {p.name for p in (folder / "figures").glob("*.png")}
    assert FIGURES <= figures
    from PIL import Image as PILImage

    for name in FIGURES:
        assert PILImage.open(folder / "figures" / name).info.get("Title", "").startswith("SIMULATED: "), name
    executed = nbformat.read(str(folder / f"{STUDY}.ipynb"), as_version=4)
    bad = [c for c in table_cells_for_people(executed) if unfit_for_people(c)]
    assert not bad, bad[:10]
    page = (folder / f"{STUDY}.html").read_text()
    assert page.count("SIMULATED") >= 5 and "CONSTRUCTED" in page
