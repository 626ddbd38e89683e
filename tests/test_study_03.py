"""Study 03 (judge noise): the notebook's hygiene, its package helpers and figures, one offline SIMULATED
papermill run on the smoke parameters, and one run against the local fake Anthropic server.

Two real papermill executions in all; both are offline and write only under tmp_path.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import nbformat
import pandas as pd
import pytest
from PIL import Image

from axon_eval import reporting as plots
from axon_eval.bench.noise import simulated_samples_table
from axon_eval.judges import build_judge
from axon_eval.judges.fake_server import FakeJudgeServer
from axon_eval.rubric import DIMENSIONS, Rubric
from axon_eval.runs.notebook import check_parameters, load_params_files, notebook_parameters, run_notebook
from axon_eval.runs import CACHE_ENV, RUNS_DIR_ENV
from axon_eval.stats.noise import (
    NOISE_COLUMNS,
    NOISE_STUDY_MODEL,
    SAMPLE_COLUMNS,
    borderline_sd,
    default_noise_judge,
    judge_noise_summary,
    noise_study_judge,
    samples_from_results,
)
from tests.notebook_checks import assert_numbers_for_people, assert_thin_notebook, run_smoke

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "notebooks" / "03_judge_noise.ipynb"
SMOKE = ROOT / "notebooks" / "params" / "03_smoke.yaml"
PARAMETERS = {"judge": None, "n_samples": 5, "turns_file": "data/turns/sample_turns.jsonl", "limit": None, "seed": 0,
              "flip_target": 0.05, "max_cost_usd": 5.0, "compare_free_text": False, "run_dir": None}
ISSUE_KEYS = {"judge_id", "simulated", "n_segments", "n_samples", "sd", "icc1", "band_flip_rate", "ensemble",
              "recommended_k"}
STUDY_JSON_KEYS = ISSUE_KEYS | {"study", "source_run"}
NOISE_FIGURES = ("sd_icc.png", "flip_curve.png", "decision_study.png", "ensemble.png")


# -- the notebook's hygiene ------------------------------------------------------------------------------
def test_notebook_has_one_parameters_cell_no_definitions_and_no_outputs():
    assert_thin_notebook(NOTEBOOK)
    assert notebook_parameters(NOTEBOOK) == PARAMETERS


def test_smoke_parameters_are_tiny_and_name_only_notebook_parameters():
    params = load_params_files([SMOKE])
    check_parameters(NOTEBOOK, params, notebook_parameters(NOTEBOOK))
    assert params["limit"] <= 10 and 2 <= params["n_samples"] <= 3
    assert "judge" not in params, "the smoke run uses the default judge (always the SIMULATED one)"


# -- package helpers ------------------------------------------------------------------------------------
def test_default_judge_is_the_simulation_even_with_a_key_in_the_environment(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-fake-key-for-a-test")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake-key-for-a-test")
    assert default_noise_judge() == "simulate(heuristic, sd=1, difficulty=0.5, seed=0)"
    assert default_noise_judge(seed=7).endswith("seed=7)")
    offline = noise_study_judge(None, 5)
    assert offline.spec == "repeat(simulate(heuristic, sd=1, difficulty=0.5, seed=0), 5)"
    assert not offline.batch and offline.free_text_spec is None and "SIMULATED" in offline.note
    assert f"anthropic:{NOISE_STUDY_MODEL}" in offline.note, "the note says how to ask for a paid judge"
    assert "cannot be measured offline" in offline.free_text_note
    judge = build_judge(offline.spec)
    assert judge.judge_id.startswith("repeat(n=5)[simulated(sd=1,difficulty=0.5")
    named = noise_study_judge(f"anthropic:{NOISE_STUDY_MODEL}", 3)
    assert named.spec == f"repeat(anthropic:{NOISE_STUDY_MODEL}, 3)" and named.batch
    assert named.free_text_spec == f"repeat(anthropic:{NOISE_STUDY_MODEL}#free_text, 3)"


def test_no_notebook_reads_the_environment_for_a_default():
    """A notebook's defaults never depend on the environment: no code cell reads os.environ or getenv
    or names a provider variable (a paid judge runs only when passed as a parameter)."""
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
        for needle in ("environ", "getenv", "ANTHROPIC_", "OPENAI_", "api_key"):
            assert needle not in code, f"{path.name} reads {needle!r} in a code cell"


def test_named_judges_batch_only_for_anthropic_and_free_text_only_for_llm_leaves():
    local = noise_study_judge("anthropic:claude-haiku-4-5@http://127.0.0.1:9#structured", 2)
    assert local.batch and local.spec == "repeat(anthropic:claude-haiku-4-5@http://127.0.0.1:9#structured, 2)"
    assert local.free_text_spec == "repeat(anthropic:claude-haiku-4-5@http://127.0.0.1:9#free_text, 2)"
    openai = noise_study_judge("openai:m@http://127.0.0.1:9/v1", 2)
    assert not openai.batch and openai.free_text_spec == "repeat(openai:m@http://127.0.0.1:9/v1#free_text, 2)"
    ensemble = noise_study_judge("ensemble(heuristic, heuristic)", 2)
    assert not ensemble.batch and ensemble.free_text_spec is None and ensemble.free_text_note
    with pytest.raises(ValueError, match="n_samples"):
        noise_study_judge(None, 1)
    with pytest.raises(ValueError, match="not a repeat"):
        noise_study_judge("repeat(heuristic, 3)", 3)
    with pytest.raises(ValueError, match="spec string"):
        noise_study_judge(3, 3)


def test_samples_from_results_keeps_one_row_per_sample_with_the_records_tokens():
    rows = []
    for seg in ("b", "a"):
        for s in (1, 0):
            rows.append({"segment_id": seg, "sample_index": s, "turn_id": seg, **{d: 8.0 for d in DIMENSIONS},
                         "score": 80.0, "band": "good", "judge_id": "j", "rubric_id": "r", "status": "judged",
                         "error": None, "cost_usd": 0.001, "cached": False, "all_sql_failed": False,
                         "ended_on_failure": False, "no_tools": False, "question": "ignored"})
    results = pd.DataFrame(rows)
    records = [{"segment_id": "a", "sample_index": 0, "input_tokens": 900, "output_tokens": 80,
                "cache_read_tokens": None},
               {"segment_id": "b", "sample_index": 1, "input_tokens": 901, "output_tokens": 81,
                "cache_read_tokens": 1200}]
    samples = samples_from_results(results, records)
    assert list(samples.columns) == list(SAMPLE_COLUMNS)
    assert list(zip(samples["segment_id"], samples["sample_index"])) == [("a", 0), ("a", 1), ("b", 0), ("b", 1)]
    assert samples["input_tokens"].tolist()[0] == 900 and samples["input_tokens"].tolist()[3] == 901
    assert samples["input_tokens"].isna().sum() == 2 and samples["cache_read_tokens"].isna().sum() == 3
    assert samples_from_results(results)["output_tokens"].isna().all()
    with pytest.raises(ValueError, match="score"):
        samples_from_results(results.drop(columns="score"))


def test_borderline_sd_splits_by_distance_and_its_all_row_is_the_pooled_sd():
    table = simulated_samples_table(300, 4, seed=3)  # a null dimension is null on all of a segment's samples
    summary = judge_noise_summary(table, Rubric.default(), seed=0, n_boot=20)
    split = borderline_sd(summary.segments, within=5.0).set_index("group")
    everyone = split.loc["all"]
    for column in NOISE_COLUMNS:
        assert everyone[f"sd_{column}"] == pytest.approx(summary.sd[column], rel=1e-9)
    near, far = split.iloc[0], split.iloc[1]
    assert near["n_segments"] + far["n_segments"] == everyone["n_segments"] == summary.n_segments
    assert near["n_segments"] == int((summary.segments["distance_to_edge"] <= 5.0).sum())
    with pytest.raises(ValueError, match="within"):
        borderline_sd(summary.segments, within=-1)


def _summary(zero: bool = False):
    table = simulated_samples_table(60, 3, seed=1, sd=0.0 if zero else 1.0)
    return judge_noise_summary(table, Rubric.default(), seed=0, n_boot=20)


@pytest.mark.parametrize("zero", [False, True])
def test_noise_figures_say_simulated_first_and_survive_zero_variance(zero, tmp_path):
    summary = _summary(zero)
    for simulated in (True, False):
        figures = {
            "sd_icc": plots.noise_sd_icc(summary.sd, summary.icc, simulated=simulated),
            "flip_curve": plots.noise_flip_curve(summary.flip, simulated=simulated),
            "decision_study": plots.noise_decision_study(summary.decision, summary.variance, target=0.9,
                                                         simulated=simulated),
            "ensemble": plots.noise_ensemble(summary.ensemble.table, 0.05, simulated=simulated),
        }
        for name, fig in figures.items():
            title = plots.figure_title(fig)
            assert title.startswith("SIMULATED: ") == simulated, (name, title)
            assert ("SIMULATED" in title) == simulated
            if simulated:  # the PNG carries the title (one save per figure is enough)
                path = plots.save_titled_figure(fig, tmp_path / f"{name}.png")
                assert Image.open(path).text["Title"] == title


# -- the offline SIMULATED smoke run ---------------------------------------------------------------------
@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory):
    """The smoke run on the default judge with a (fake) Anthropic key in the environment and the SDK's base
    URL pointing at a local fake server that counts what it is asked: the default must stay offline."""
    out = tmp_path_factory.mktemp("runs")
    with FakeJudgeServer(lifetime_s=600) as server:
        (result,) = run_smoke(NOTEBOOK, SMOKE, out, cache=out / "cache.sqlite",
                              env={"ANTHROPIC_API_KEY": "sk-ant-fake-key-for-a-test", "ANTHROPIC_BASE_URL": server.url})
        requests = server.requests
    return out, result, requests


def _outputs(notebook_path: Path) -> str:
    nb = nbformat.read(notebook_path, as_version=4)
    texts = []
    for cell in nb.cells:
        for o in cell.get("outputs", []):
            assert o.output_type != "error", f"{o.get('ename')}: {o.get('evalue')}"
            if o.output_type == "stream":
                texts.append(o.text)
            elif o.output_type in ("display_data", "execute_result"):
                texts.append(str(o.data.get("text/markdown", o.data.get("text/plain", ""))))
    return "\n".join(texts)


@pytest.mark.slow
def test_smoke_run_is_simulated_counts_segments_and_says_so_everywhere(smoke_run):
    out, result, requests = smoke_run
    assert result.status == "complete", result.error
    assert requests == 0, "ANTHROPIC_API_KEY was set, yet the default judge must not call a model"
    folder = result.run_dir
    assert folder.parent == out and "03-judge-noise" in folder.name
    assert not list((ROOT / "runs").glob(f"{folder.name}*")), "the run must land under tmp_path only"
    for name in ("03_judge_noise.ipynb", "03_judge_noise.html", "params.json", "manifest.json", "results/part-00000.parquet",
                 "verdicts.jsonl", "audit.jsonl", "samples.parquet", "study.json"):
        assert (folder / name).is_file(), name

    study = json.loads((folder / "study.json").read_text())
    assert set(study) == STUDY_JSON_KEYS
    assert study["study"] == "03_judge_noise" and study["source_run"] is None and study["simulated"] is True
    assert study["judge_id"].startswith("simulated(sd=1,difficulty=0.5") and study["n_samples"] == 3
    manifest = json.loads((folder / "manifest.json").read_text())
    samples = pd.read_parquet(folder / "samples.parquet")
    results = pd.read_parquet(folder / "results")
    assert study["n_segments"] == manifest["counts"]["segments"] == samples["segment_id"].nunique()
    assert len(samples) == len(results) == 3 * study["n_segments"] != study["n_segments"]
    assert set(samples.groupby("segment_id")["sample_index"].nunique()) == {3}
    assert manifest["kind"] == "study" and manifest["status"] == "complete"
    assert "data/turns/sample_turns.jsonl" in manifest["input_files"]
    assert any("SIMULATED" in w for w in manifest["warnings"])
    assert set(study["sd"]) == set(study["icc1"]) == set(NOISE_COLUMNS)
    assert all(set(v) == {"value", "ci_low", "ci_high"} for v in study["icc1"].values())
    assert {row["k"] for row in study["ensemble"]} == {1, 2, 3}
    assert all(row["cost_usd"] == 0.0 for row in study["ensemble"]), "the heuristic inside the simulation is free"
    assert 0.0 <= study["band_flip_rate"] <= 1.0 and study["recommended_k"]["flip_target"] == 0.05

    page = (folder / "03_judge_noise.html").read_text()
    assert "SIMULATED" in page and "runs.evaluate(" not in page
    text = _outputs(folder / "03_judge_noise.ipynb")
    assert "estimated cost: $0.0000" in text and "Skipped: `compare_free_text` is False" in text
    assert "SIMULATED headline" in text and "SIMULATED recommendation" in text
    for name in NOISE_FIGURES:
        title = Image.open(folder / "figures" / name).text["Title"]
        assert title.startswith("SIMULATED: "), (name, title)
    assert "SIMULATED" in Image.open(folder / "figures" / "score_spread.png").text["Title"]


# -- against the local fake Anthropic server ----------------------------------------------------------------
@pytest.mark.slow
def test_a_claude_judge_runs_through_message_batches_with_the_cost_printed_first(tmp_path, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    monkeypatch.setenv(RUNS_DIR_ENV, str(tmp_path / "runs"))
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache.sqlite"))
    with FakeJudgeServer(lifetime_s=600) as server:
        result = run_notebook(NOTEBOOK, {"judge": f"anthropic:claude-haiku-4-5@{server.url}", "n_samples": 2,
                                         "limit": 3, "compare_free_text": True})
        paths = list(server.paths)
    assert result.status == "complete", result.error
    assert "/v1/messages/batches" in paths and "/v1/messages" not in paths, "anthropic judges go through batches"
    assert paths.count("/v1/messages/batches") == 2, "one batch for the structured run, one for free text"
    folder = result.run_dir
    study = json.loads((folder / "study.json").read_text())
    assert set(study) == STUDY_JSON_KEYS and study["simulated"] is False
    assert study["n_samples"] == 2 and study["n_segments"] == json.loads(
        (folder / "manifest.json").read_text())["counts"]["segments"]
    # the fake server answers the same verdict every time: zero noise, undefined ICC as null, not a crash
    assert all(v == 0.0 for v in study["sd"].values()) and study["band_flip_rate"] == 0.0
    assert all(study["icc1"][d]["value"] is None for d in DIMENSIONS)
    assert all(row["cost_usd"] > 0 for row in study["ensemble"])
    assert study["recommended_k"]["k"] == 1
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["batch"]["submitted"] and manifest["judge_local"] is True
    text = _outputs(folder / "03_judge_noise.ipynb")
    assert "estimated cost: $" in text and "through Message Batches" in text
    assert text.index("estimated cost: $") < text.index("status: complete")
    assert "ICC undefined" in text and "SIMULATED headline" not in text and "**headline:**" in text
    assert (folder / "free_text" / "results").is_dir() and (folder / "free_text" / "samples.parquet").is_file()
    assert "structured against free text" in text and "Neither mode varied" in text
    for name in NOISE_FIGURES:
        assert not Image.open(folder / "figures" / name).text["Title"].startswith("SIMULATED")
    assert not math.isnan(pd.read_parquet(folder / "samples.parquet")["input_tokens"].sum())


@pytest.mark.slow
def test_smoke_run_tables_and_printed_figures_read_for_people(smoke_run):
    """Every table through axon_eval.display.styled, no raw float printed (no study.json dump)."""
    _, result, _ = smoke_run
    assert_numbers_for_people(nbformat.read(result.notebook_path, as_version=4))
