"""Study 02 (weight sensitivity): the notebook's hygiene and two real papermill executions.

* the committed notebook: one ``parameters`` cell with exactly the issue's parameters, no outputs, no
  ``def``/``class``/``lambda``; the smoke parameter file names only notebook parameters and is tiny;
* the smoke run (``source_run = None``): the notebook evaluates the bundled sample with the heuristic judge,
  rescores it under ``axon-v1-faithcap`` and compares; every folder it makes lands under ``tmp_path``
  (``out_dir`` for the study, ``$AXON_EVAL_RUNS_DIR`` for the source, rescored and comparison runs);
* an explicit ``source_run`` made here by ``runs.evaluate`` on six turns with a scripted judge behind a
  zero-noise ``NoiseJudge`` (so the run is labelled SIMULATED) whose subscores build the known pair of
  ``test_sensitivity``: good (10, 10, 10, 0) = 80 and poor (0, 0, 10, 10) = 45 reorder at d = 0.15
  (weights (.15, .10, .40, .35): 65.0 against 75.0) and cannot at d = 0.05 (the bound: 10 + 10 < 30).

Both executions are offline (about 20-30 s each on two cores).
"""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pandas as pd
import pytest

from axon_eval import runs
from axon_eval.judges.base import Judge, JudgeRecord, Verdict
from axon_eval.judges.wrappers import NoiseJudge
from axon_eval.rubric import DIMENSIONS, Rubric
from axon_eval.runs.notebook import check_parameters, load_params_files, notebook_parameters, run_notebook
from tests.notebook_checks import assert_numbers_for_people, assert_thin_notebook, run_smoke

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "notebooks" / "02_weight_sensitivity.ipynb"
SMOKE = ROOT / "notebooks" / "params" / "02_smoke.yaml"
SAMPLE = ROOT / "data" / "turns" / "sample_turns.jsonl"
STUDY = "02_weight_sensitivity"

PARAMETERS = {"source_run": None, "deltas": [0.01, 0.02, 0.03, 0.04, 0.05], "n_samples": 1000, "seed": 0,
              "candidate_rubric": "axon-v1-faithcap", "run_dir": None}
ISSUE_KEYS = {"study", "simulated", "source_run", "rubric_id", "n_segments", "worst_case_abs_delta",
              "oat_max_abs_delta", "band_flip_rate", "good_below_poor", "sobol"}
CANDIDATE_KEYS = {"rubric_id", "rubric_name", "n_compared", "n_band_changes", "mean_delta", "mean_delta_ci95",
                  "rescored_run", "comparison"}
FIGURES = {"oat_max_abs_delta.png", "worst_case_score_ranges.png", "band_flip_rate.png",
           "flips_by_band_edge_distance.png", "sobol_indices.png"}


# -- the committed notebook --------------------------------------------------------------------------------
def test_notebook_has_one_parameters_cell_no_outputs_and_no_definitions():
    nb = assert_thin_notebook(NOTEBOOK)
    assert notebook_parameters(NOTEBOOK) == PARAMETERS
    text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    for needed in ("claim being tested", "in-sample", "SIMULATED", "axon-v1-faithcap", "study.json"):
        assert needed.lower() in text.lower(), needed


def test_smoke_parameters_are_notebook_parameters_and_tiny():
    params = load_params_files([SMOKE])
    check_parameters(NOTEBOOK, params, notebook_parameters(NOTEBOOK))
    assert params["n_samples"] <= 64 and len(params["deltas"]) == 1 and params["source_run"] is None


# -- shared checks -------------------------------------------------------------------------------------------
def check_study(folder: Path, *, deltas: list[float], candidate: bool) -> dict:
    """study.json of a finished study folder: exactly the issue's keys, sane values, figures present."""
    study = json.loads((folder / "study.json").read_text())
    assert set(study) == ISSUE_KEYS | ({"candidate"} if candidate else set())
    assert study["study"] == STUDY and isinstance(study["simulated"], bool)
    keys = {f"{d:g}" for d in deltas}
    for name in ("worst_case_abs_delta", "oat_max_abs_delta", "band_flip_rate", "good_below_poor"):
        assert set(study[name]) == keys, name
    for d in keys:
        worst, oat, rate = study["worst_case_abs_delta"][d], study["oat_max_abs_delta"][d], study["band_flip_rate"][d]
        assert 0 <= oat <= worst + 1e-9 <= 100, (d, oat, worst)  # one-at-a-time vectors lie inside the box
        assert 0 <= rate <= 1
        pairs = study["good_below_poor"][d]
        assert pairs["n_pairs"] >= 0 and (pairs["example"] is None) == (pairs["n_pairs"] == 0)
        if pairs["impossible_by_bound"]:
            assert pairs["n_pairs"] == 0
    assert set(study["sobol"]) == set(DIMENSIONS)
    for per_output in study["sobol"].values():
        assert set(per_output) == {"mean_score", "share_good"}
        assert all(set(v) == {"S1", "ST"} for v in per_output.values())
    assert study["n_segments"] > 0 and study["rubric_id"]
    figures = {p.name for p in (folder / "figures").glob("*.png")}
    assert FIGURES <= figures
    assert ("candidate_band_transitions.png" in figures) == candidate
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["status"] == "complete" and manifest["kind"] == "study"
    assert manifest["source_run"] == study["source_run"]
    executed = nbformat.read(folder / f"{STUDY}.ipynb", as_version=4)
    assert not [o for c in executed.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    return study


# -- the smoke run: the notebook evaluates the sample itself ------------------------------------------------
@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("runs")
    (result,) = run_smoke(NOTEBOOK, SMOKE, out)  # the source, rescored and comparison runs land in out too
    return out, result


@pytest.mark.slow
def test_smoke_run_writes_the_study(smoke_run):
    out, result = smoke_run
    assert result.status == "complete", result.error
    assert result.run_dir.parent.resolve() == out.resolve()
    study = check_study(result.run_dir, deltas=[0.05], candidate=True)
    assert study["simulated"] is False
    # the source run was evaluated here, under tmp, with the heuristic judge on the whole sample
    source = Path(study["source_run"])
    assert source.is_dir() and source.parent.resolve() == out.resolve()
    m = runs.load_run(source).manifest
    assert m.judge_id.startswith("heuristic") and m.turns_file == "data/turns/sample_turns.jsonl"
    assert study["n_segments"] == m.counts.judged and study["rubric_id"] == Rubric.default().id
    assert (source / "report.html").is_file()
    # +-0.05 on axon-v1: the bound makes a good/poor reorder impossible, for any run
    pairs = study["good_below_poor"]["0.05"]
    assert pairs["impossible_by_bound"] is True and pairs["n_pairs"] == 0 and pairs["example"] is None
    assert study["worst_case_abs_delta"]["0.05"] <= 10.0  # the bound's largest rise / fall at d = 0.05


@pytest.mark.slow
def test_smoke_run_compares_with_the_faithfulness_cap(smoke_run):
    out, result = smoke_run
    study = json.loads((result.run_dir / "study.json").read_text())
    cand = study["candidate"]
    assert set(cand) == CANDIDATE_KEYS
    faithcap = Rubric.resolve("axon-v1-faithcap")
    assert cand["rubric_id"] == faithcap.id and cand["rubric_name"] == "axon-v1-faithcap"
    assert cand["n_band_changes"] > 0 and cand["mean_delta"] < 0  # the cap only ever lowers scores
    comparison = Path(cand["comparison"])
    rescored = Path(cand["rescored_run"])
    assert comparison.parent.resolve() == out.resolve() and rescored.parent.resolve() == out.resolve()
    for name in ("comparison.json", "deltas.parquet", "transitions.csv", "compare.html", "manifest.json"):
        assert (comparison / name).is_file(), name
    recorded = json.loads((comparison / "comparison.json").read_text())
    assert recorded["n_band_changes"] == cand["n_band_changes"] and recorded["rubric_b"] == faithcap.id
    moved, order = recorded["transitions"], ["good", "partial", "poor"]
    # the cap sends faithfulness failures to poor and never moves a band up
    assert moved["good"]["poor"] + moved["partial"]["poor"] > 0 and recorded["same_evidence"] is True
    assert all(moved[a].get(b, 0) == 0 for a in order for b in order if order.index(b) < order.index(a))
    assert runs.load_run(rescored).manifest.rubric_id == faithcap.id
    # four folders in all: study, source, rescored, comparison (nothing written elsewhere)
    assert len([p for p in out.iterdir() if p.is_dir() and not p.name.startswith(".")]) == 4
    page = (result.run_dir / f"{STUDY}.html").read_text()
    assert "In-sample" in page and "heuristic" in page and "SIMULATED judge." not in page


# -- an explicit source run: a scripted (simulated) judge with a known reordering pair ------------------------
GOOD, POOR = "us-0001", "eu-0001"  # neither trajectory triggers a cap


class PairJudge(Judge):
    """Good (10, 10, 10, 0) for GOOD, poor (0, 0, 10, 10) for POOR, 5s elsewhere (null faithfulness kept)."""

    judge_id = "scripted-pair/v1"
    model = "scripted"
    prompt_version = "judge_v1"

    async def ajudge(self, view, sample_index: int = 0) -> JudgeRecord:
        scores = {GOOD: (10, 10, 10, 0), POOR: (0, 0, 10, 10)}.get(view.segment_id, (5, 5, 5, 5))
        values = dict(zip(DIMENSIONS, scores, strict=True))
        if view.answer is None:
            values["answer_faithfulness"] = None
        return JudgeRecord(segment_id=view.segment_id, judge_id=self.judge_id, model=self.model,
                           prompt_version=self.prompt_version, sample_index=sample_index,
                           verdict=Verdict(**values, verdict="partial", explanation="scripted for study 02"))


@pytest.mark.slow
def test_explicit_source_run_with_a_reordering_pair(tmp_path, monkeypatch):
    monkeypatch.setenv(runs.RUNS_DIR_ENV, str(tmp_path))
    monkeypatch.delenv(runs.CACHE_ENV, raising=False)
    source = runs.evaluate(SAMPLE, NoiseJudge(PairJudge(), sd=0.0), "axon-v1", out_dir=tmp_path / "sources",
                           name="pair", limit=6, progress=False)
    scores = source.results.set_index("segment_id")["score"]
    assert (scores[GOOD], scores[POOR]) == (80.0, 45.0)
    candidate = tmp_path / "intent-up.yaml"
    candidate.write_text("extends: axon-v1\nname: intent-up\nweights:\n  intent_understood: 0.35\n"
                         "  answer_faithfulness: 0.15\n")
    result = run_notebook(NOTEBOOK, {"source_run": str(source.run_dir), "deltas": [0.05, 0.15], "n_samples": 64,
                                     "candidate_rubric": str(candidate)}, out_dir=tmp_path)
    assert result.status == "complete", result.error
    study = check_study(result.run_dir, deltas=[0.05, 0.15], candidate=True)
    assert study["simulated"] is True  # the judge id holds "noise("
    assert Path(study["source_run"]).resolve() == source.run_dir.resolve()
    assert study["n_segments"] == len(source.results)
    assert "SIMULATED" in json.loads((result.run_dir / "manifest.json").read_text())["warnings"][-1]

    safe = study["good_below_poor"]["0.05"]
    assert safe["impossible_by_bound"] is True and safe["n_pairs"] == 0
    flip = study["good_below_poor"]["0.15"]
    assert flip["impossible_by_bound"] is False and flip["n_pairs"] == 1
    ex = flip["example"]
    assert (ex["good_segment_id"], ex["poor_segment_id"]) == (GOOD, POOR)
    assert (ex["good_score"], ex["poor_score"]) == pytest.approx((65.0, 75.0))
    assert [ex["weights"][d] for d in DIMENSIONS] == pytest.approx([0.15, 0.10, 0.40, 0.35])
    assert study["worst_case_abs_delta"]["0.15"] >= study["worst_case_abs_delta"]["0.05"]

    # the counterexample is shown in full: both segments' arithmetic, nominal and reordering weights
    page = (result.run_dir / f"{STUDY}.html").read_text()
    assert "SIMULATED judge." in page and "1 (good, poor) pair(s) can reorder" in page
    assert page.count("nominally good segment us-0001") == 2 and page.count("nominally poor segment eu-0001") == 2

    # the candidate YAML: intent +0.05, faithfulness -0.05; the given source run was not written to
    cand = study["candidate"]
    assert cand["rubric_name"] == "intent-up" and cand["n_compared"] == len(source.results)
    assert cand["mean_delta"] is not None and Path(cand["comparison"]).is_dir()
    assert not (source.run_dir / "report.html").exists()
    deltas = pd.read_parquet(Path(cand["comparison"]) / "deltas.parquet").set_index("segment_id")["delta"]
    assert deltas[GOOD] == pytest.approx(10 * (0.35 * 10 + 0.25 * 10 + 0.25 * 10 + 0.15 * 0) - 80.0)  # 80 -> 85
    assert deltas[POOR] == pytest.approx(10 * (0.35 * 0 + 0.25 * 0 + 0.25 * 10 + 0.15 * 10) - 45.0)  # 45 -> 40
    assert cand["n_band_changes"] == 0 and cand["mean_delta"] == pytest.approx(0.0)  # +5 and -5; 5s stay 50


@pytest.mark.slow
def test_smoke_run_tables_and_printed_figures_read_for_people(smoke_run):
    """Every table through axon_eval.display.styled, no raw float printed (no study.json dump)."""
    _, result = smoke_run
    assert_numbers_for_people(nbformat.read(result.notebook_path, as_version=4))
