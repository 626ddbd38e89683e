"""Study 04 (the row-sample horizon): the notebook's hygiene and parameters, its figures, and two real
papermill runs on the smoke parameters sharing one verdict cache (the second judges nothing).

Everything is offline (heuristic judge); run folders and the verdict cache live under ``tmp_path``.
"""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pandas as pd
import pytest
from matplotlib.figure import Figure

from axon_eval import reporting as plots
from axon_eval.runs.notebook import check_parameters, load_params_files, notebook_parameters
from axon_eval.runs import file_sha256
from axon_eval.stats.horizon import BY_HORIZON_KEYS, STUDY_NAME
from tests.notebook_checks import assert_numbers_for_people, assert_thin_notebook, run_smoke, table_cells_for_people, unfit_for_people
from axon_eval.judges import build_judge

#: The offline judge's id (the fitted judge, named by its coefficient file's hash).
DEFAULT_JUDGE_ID = build_judge("heuristic").judge_id

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "notebooks" / "04_row_horizon.ipynb"
SMOKE = ROOT / "notebooks" / "params" / "04_smoke.yaml"
PARAMETERS = {
    "turns_file": "data/turns/horizon_turns.jsonl",
    "labels_file": "data/turns/horizon_labels.csv",
    "judge": "heuristic",
    "horizons": [0, 5, 10, 20, 50, 200, None],
    "samplers": ["head", "evidence"],
    "row_budget": 20,
    "limit": None,
    "seed": 0,
    "run_dir": None,
}
#: The stable keys of study 04's study.json, plus what every study's study.json carries.
STUDY_KEYS = {"study", "judge_id", "n_segments", "by_horizon", "goal_met", "simulated", "source_run"}
FIGURES = {"horizon_curves.png", "horizon_prompt_size.png", "horizon_delta_vs_size.png"}


# -- the committed notebook ----------------------------------------------------------------------------------
def test_notebook_has_one_parameters_cell_no_outputs_and_no_definitions():
    nb = assert_thin_notebook(NOTEBOOK)
    assert any(c.cell_type == "markdown" for c in nb.cells)


def test_notebook_parameters_are_exactly_the_listed_ones_with_their_defaults():
    assert notebook_parameters(NOTEBOOK) == PARAMETERS


def test_smoke_parameters_are_tiny_offline_and_known_to_the_notebook():
    params = load_params_files([SMOKE])
    check_parameters(NOTEBOOK, params, notebook_parameters(NOTEBOOK))
    assert params["judge"] == "heuristic" and params["limit"] <= 10
    assert None in params["horizons"] and params["row_budget"] in params["horizons"]
    assert set(params["samplers"]) == {"head", "evidence"}


# -- the figures (plots.py, section "study 04") ------------------------------------------------------------
def _summary() -> pd.DataFrame:
    rows = []
    for sampler, caught in (("head", [2, 1, 0]), ("evidence", [2, 3, 0])):
        for h, c, chars in zip([0, 20, None], caught, [900.0, 2000.0, 50_000.0]):
            rows.append({"sampler": sampler, "horizon": h, "horizon_label": "all" if h is None else str(h),
                         "n_segments": 8, "band_agreement": 1.0 if h is None else 0.5,
                         "mean_abs_score_delta": 0.0 if h is None else 10.0, "defects_beyond": 0 if h is None else 4,
                         "defects_caught": c, "correct_penalised": 1 if sampler == "head" else 0,
                         "mean_chars": chars * (1.05 if sampler == "evidence" else 1.0),
                         "mean_input_tokens": chars / 4, "input_tokens_estimated": True})
    frame = pd.DataFrame(rows)
    frame["horizon"] = pd.array(frame["horizon"].tolist(), dtype="Int64")
    return frame


def test_horizon_figures_plot_every_sampler_with_all_rows_as_all():
    summary = _summary()
    curves = plots.horizon_curves(summary)
    assert isinstance(curves, Figure) and len(curves.axes) == 3
    for ax in curves.axes:
        assert [t.get_text() for t in ax.get_xticklabels()] == ["0", "20", "all"]
        labels = {line.get_label() for line in ax.get_lines()}
        assert {"head", "evidence"} <= labels
    size = plots.horizon_prompt_size(summary)
    assert len(size.axes) == 2 and "ESTIMATED" in size.axes[1].get_title()
    delta = plots.horizon_delta_vs_size(summary, simulated=True)
    assert delta.axes[0].get_title().startswith(plots.SIMULATED_PREFIX)
    assert "all" in {t.get_text() for t in delta.axes[0].texts}


# -- two papermill runs on the smoke parameters, one cache --------------------------------------------------
@pytest.fixture(scope="module")
def smoke_runs(tmp_path_factory):
    """Two executions of 04_row_horizon with the smoke parameters, runs and verdict cache under tmp."""
    base = tmp_path_factory.mktemp("study04")
    out = base / "runs"
    first, second = run_smoke(NOTEBOOK, SMOKE, out, cache=base / "cache" / "verdicts.sqlite", times=2)
    return base, first, second


@pytest.mark.slow
def test_smoke_run_writes_the_study_folder(smoke_runs):
    base, first, _second = smoke_runs
    assert first.status == "complete", first.error
    folder = first.run_dir
    assert folder.parent == base / "runs" and folder.name.endswith("_heuristic")
    assert (base / "cache" / "verdicts.sqlite").is_file()
    for name in ("04_row_horizon.ipynb", "04_row_horizon.html", "params.json", "manifest.json", "study.json",
                 "horizon_results.parquet", "horizon_summary.csv", "head_vs_evidence.csv", "changed_bands.csv"):
        assert (folder / name).is_file(), name
    assert FIGURES <= {p.name for p in (folder / "figures").glob("*.png")}

    executed = nbformat.read(folder / "04_row_horizon.ipynb", as_version=4)
    assert not [o for c in executed.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    page = (folder / "04_row_horizon.html").read_text()
    assert "evaluate_horizons(" not in page, "code cells must be hidden in the HTML export"
    assert "constructed" in page

    m = json.loads((folder / "manifest.json").read_text())
    assert m["status"] == "complete" and m["kind"] == "study" and m["judge_id"] == DEFAULT_JUDGE_ID
    for rel in ("data/turns/horizon_turns.jsonl", "data/turns/horizon_labels.csv"):
        assert m["input_files"][rel] == file_sha256(ROOT / rel)

    smoke = load_params_files([SMOKE])
    results = pd.read_parquet(folder / "horizon_results.parquet")
    assert results["segment_id"].nunique() == smoke["limit"]
    assert len(results) == smoke["limit"] * len(smoke["horizons"]) * len(smoke["samplers"])
    assert (results["status"] == "judged").all()


@pytest.mark.slow
def test_smoke_tables_count_unjudged_items_and_show_numbers_for_people(smoke_runs):
    _base, first, _second = smoke_runs
    executed = nbformat.read(first.run_dir / "04_row_horizon.ipynb", as_version=4)
    html = "".join(o.data.get("text/html", "") for c in executed.cells if c.cell_type == "code" for o in c.outputs
                   if "data" in o)
    assert ">defects_unjudged<" in html and ">correct_unjudged<" in html
    cells = table_cells_for_people(executed)
    assert len(cells) > 50 and any(c.endswith("%") for c in cells)
    assert [c for c in cells if unfit_for_people(c)] == []


@pytest.mark.slow
def test_smoke_study_json_holds_the_issue_keys_for_every_sampler_and_horizon(smoke_runs):
    _base, first, _second = smoke_runs
    study = json.loads((first.run_dir / "study.json").read_text())
    assert STUDY_KEYS <= set(study)
    assert study["study"] == STUDY_NAME and study["simulated"] is False and study["source_run"] is None
    assert study["judge_id"] == DEFAULT_JUDGE_ID and study["n_segments"] == 8 and isinstance(study["goal_met"], bool)
    smoke = load_params_files([SMOKE])
    entries = {(e["sampler"], e["horizon"]): e for e in study["by_horizon"]}
    assert set(entries) == {(s, h) for s in smoke["samplers"] for h in smoke["horizons"]}
    for (_sampler, horizon), entry in entries.items():
        assert set(BY_HORIZON_KEYS) <= set(entry)
        assert entry["input_tokens_estimated"] is True  # the heuristic reports no tokens
        if horizon is None:
            assert entry["band_agreement"] == 1.0 and entry["defects_missed"] == 0
    assert study["goal"]["budget"] == smoke["row_budget"]
    assert study["cache_hits"] + study["judged_now"] == study["n_views"] > 0


@pytest.mark.slow
def test_second_run_with_the_same_cache_judges_nothing(smoke_runs):
    _base, first, second = smoke_runs
    assert second.status == "complete", second.error
    assert second.run_dir != first.run_dir
    one = json.loads((first.run_dir / "study.json").read_text())
    two = json.loads((second.run_dir / "study.json").read_text())
    assert one["judged_now"] == one["n_views"]
    assert two["judged_now"] == 0 and two["cache_hits"] == two["n_views"] == one["n_views"]
    assert two["by_horizon"] == one["by_horizon"] and two["goal"] == one["goal"]
    cached = pd.read_parquet(second.run_dir / "horizon_results.parquet")
    assert cached["cached"].all()


@pytest.mark.slow
def test_smoke_run_tables_and_printed_figures_read_for_people(smoke_runs):
    """Every table through axon_eval.display.styled, no raw float printed (no study.json dump)."""
    _, result, _ = smoke_runs
    assert_numbers_for_people(nbformat.read(result.notebook_path, as_version=4))
