"""Notebook runs through papermill: the evaluation notebook on the smoke parameters, parameter checks,
failed executions, and the notebook's own hygiene (no committed outputs, no def/class).

Two real papermill executions in all (the smoke run and a tiny failing notebook); both are offline.
"""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pandas as pd
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from axon_eval import cli
from axon_eval.rubric import Rubric
from axon_eval.runs.notebook import (
    ParameterValueError,
    UnknownParameterError,
    check_parameter_types,
    check_parameters,
    load_params_files,
    notebook_parameters,
    parameter_kind,
    parse_cli_parameters,
    run_notebook,
)
from axon_eval.runs import file_sha256, load_run
from tests.notebook_checks import assert_numbers_for_people, assert_thin_notebook, table_cells_for_people, unfit_for_people

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "notebooks" / "01_evaluate.ipynb"
SMOKE = ROOT / "notebooks" / "params" / "smoke.yaml"
DEFAULT = ROOT / "notebooks" / "params" / "default.yaml"
CANARY = "sk-ant-canary-runner-0123456789abcdef"


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory):
    """One papermill execution of 01_evaluate with the smoke parameters and a dummy API key set."""
    out = tmp_path_factory.mktemp("runs")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ANTHROPIC_API_KEY", CANARY)
        mp.setenv("OPENAI_API_KEY", CANARY + "-openai")
        result = run_notebook(NOTEBOOK, params_files=[SMOKE], out_dir=out)
    return out, result


# -- the evaluation notebook -----------------------------------------------------------------------------
@pytest.mark.slow
def test_smoke_run_of_the_evaluation_notebook(smoke_run):
    out, result = smoke_run
    assert result.status == "complete", result.error
    folder = result.run_dir
    assert folder.parent == out and folder.name.endswith("_smoke_heuristic")
    for name in ("01_evaluate.ipynb", "01_evaluate.html", "params.json", "manifest.json", "results/part-00000.parquet",
                 "verdicts.jsonl", "audit.jsonl", "invalid.jsonl", "report.html"):
        assert (folder / name).is_file(), name
    assert result.html_path == folder / "01_evaluate.html"
    figures = sorted(p.name for p in (folder / "figures").glob("*.png"))
    assert {"score_distribution.png", "dimensions.png", "caps.png", "verdict_vs_band.png",
            "bands_by_region.png", "bands_by_surface.png", "bands_by_client.png"} <= set(figures)

    m = json.loads((folder / "manifest.json").read_text())
    sample = ROOT / "data" / "turns" / "sample_turns.jsonl"
    assert m["status"] == "complete" and m["error"] is None and m["ended_at"]
    assert m["judge_id"].startswith("heuristic") and m["rubric_id"] == Rubric.default().id
    assert m["rubric_name"] == "axon-v1" and m["rubric"]["row_horizon"] == 20
    assert m["counts"]["turns"] == 8 and m["counts"]["invalid"] == 0
    assert m["counts"]["judged"] + m["counts"]["unjudged"] >= m["counts"]["segments"] >= 8
    # every input is hashed (evidence, labels, the notebook), under paths relative to the repository root
    labels = ROOT / "data" / "turns" / "labels.csv"
    notebook = ROOT / "notebooks" / "01_evaluate.ipynb"
    assert m["input_files"] == {"data/turns/sample_turns.jsonl": file_sha256(sample),
                                "data/turns/labels.csv": file_sha256(labels),
                                "notebooks/01_evaluate.ipynb": file_sha256(notebook)}
    assert m["turns_file"] == "data/turns/sample_turns.jsonl"
    assert not any(str(ROOT) in str(v) for v in (m["notebook"]["source"], m["notebook"]["executed"]))
    assert m["params"]["limit"] == 8 and m["params"]["run_name"] == "smoke" and m["seed"] == 0
    assert m["notebook"]["kernel"] in ("axon-eval", "python3")
    assert m["notebook"]["html"] == str(folder / "01_evaluate.html")
    assert m["notebook"]["source_sha256"] == file_sha256(NOTEBOOK)
    assert m["git_commit"] and m["packages"]["papermill"]
    params = json.loads((folder / "params.json").read_text())
    assert params["limit"] == 8

    results = pd.read_parquet(folder / "results")
    assert len(results) == m["counts"]["segments"] and results["judge_id"].nunique() == 1
    assert load_run(folder).manifest.run_id == folder.name

    executed = nbformat.read(folder / "01_evaluate.ipynb", as_version=4)
    code_cells = [c for c in executed.cells if c.cell_type == "code"]
    assert all(c.execution_count for c in code_cells)
    assert not [o for c in code_cells for o in c.outputs if o.output_type == "error"]
    assert any("injected-parameters" in c.metadata.get("tags", []) for c in code_cells)
    page = (folder / "01_evaluate.html").read_text()
    assert "runs.evaluate(" not in page, "code cells must be hidden in the HTML export"
    assert "constructed" in page and "Unjudged segments" in page


@pytest.mark.slow
def test_smoke_run_shows_the_band_kappa_first_and_numbers_for_people(smoke_run):
    _, result = smoke_run
    executed = nbformat.read(result.run_dir / "01_evaluate.ipynb", as_version=4)
    markdown = "\n".join(o.data["text/markdown"] for c in executed.cells if c.cell_type == "code" for o in c.outputs
                         if "text/markdown" in o.get("data", {}))
    band, verdict = "score band vs labels (Cohen's kappa)", "judge verdict vs labels (Cohen's kappa)"
    assert band in markdown and verdict in markdown and markdown.index(band) < markdown.index(verdict)
    cells = table_cells_for_people(executed)
    assert len(cells) > 50 and "64%" not in cells  # shares read as percentages (the smoke run has 9 segments)
    assert any(c.endswith("%") for c in cells)
    assert [c for c in cells if unfit_for_people(c)] == []
    assert_numbers_for_people(executed)  # every table through display.styled, no raw float printed
    page = (result.run_dir / "report.html").read_text()  # the labels the run recorded are compared there too
    assert page.index("score band vs labels (Cohen&#x27;s kappa)") < page.index("judge verdict vs labels (Cohen&#x27;s")


@pytest.mark.slow
def test_smoke_run_shows_every_headline_with_its_interval_and_n(smoke_run):
    """Notebook 01 shows the headline table with 95% intervals (the package's, for people) and the
    sentence of what they cover; the mean score's bounds are those of a plain pandas cluster bootstrap."""
    import re

    import numpy as np

    from axon_eval.display import fmt_estimate, fmt_interval, fmt_number
    from axon_eval.stats.intervals import INTERVAL_COVERS
    from axon_eval.summaries import segment_table

    _, result = smoke_run
    executed = nbformat.read(result.run_dir / "01_evaluate.ipynb", as_version=4)
    pages = [o.data["text/html"] for c in executed.cells if c.cell_type == "code" for o in c.outputs
             if "text/html" in o.get("data", {}) and "95% interval" in o.data["text/html"]]
    assert len(pages) == 1, "one headline table with a 95% interval column"
    markdown = "\n".join(o.data["text/markdown"] for c in executed.cells if c.cell_type == "code" for o in c.outputs
                         if "text/markdown" in o.get("data", {}))
    assert INTERVAL_COVERS in markdown and "2,000 resamples of whole turns, seed 0" in markdown
    rows = {m.group(1): m.groups()[1:] for m in re.finditer(
        r"<td[^>]*>([a-z_ ]+)</td>\s*<td[^>]*>([^<]*)</td>\s*<td[^>]*>([^<]*)</td>\s*<td[^>]*>([^<]*)</td>"
        r"\s*<td[^>]*>([^<]*)</td>", pages[0])}
    assert {"mean score", "share good", "share partial", "share poor", "share capped",
            "mean answer_faithfulness"} <= set(rows)
    seg = segment_table(pd.read_parquet(result.run_dir / "results"))
    seg = seg[seg["status"] == "judged"]
    # the oracle: resample whole turns, one replicate at a time (the clusters' multinomial counts from
    # default_rng(0), in order of first appearance)
    turns = pd.unique(seg["turn_id"])
    sums = seg.groupby("turn_id")["score"].sum().reindex(turns)
    sizes = seg.groupby("turn_id")["score"].size().reindex(turns)
    counts = np.random.default_rng(0).multinomial(len(turns), [1 / len(turns)] * len(turns), size=2000)
    lo, hi = np.quantile([(sums * c).sum() / (sizes * c).sum() for c in counts], [0.025, 0.975])
    # the estimate as the one-line form writes it (its interval's decimals), in its own column
    assert rows["mean score"] == (fmt_estimate(seg["score"].mean(), lo, hi).partition(" (")[0], fmt_interval(lo, hi),
                                  str(len(seg)), str(len(turns)))


@pytest.mark.slow
def test_smoke_run_never_writes_the_api_key(smoke_run):
    _out, result = smoke_run
    scanned = 0
    for path in result.run_dir.rglob("*"):
        if path.is_file():
            scanned += 1
            assert CANARY.encode() not in path.read_bytes(), f"API key written to {path}"
    assert scanned >= 10


def test_committed_notebook_has_no_outputs_and_no_definitions():
    assert_thin_notebook(NOTEBOOK)
    assert set(notebook_parameters(NOTEBOOK)) == {"turns_file", "judge", "rubric", "row_horizon", "limit", "seed",
                                                  "run_name", "labels_file", "batch", "max_cost_usd", "run_dir"}


def test_parameter_files_name_only_notebook_parameters():
    valid = notebook_parameters(NOTEBOOK)
    for f in (DEFAULT, SMOKE):
        params = load_params_files([f])
        check_parameters(NOTEBOOK, params, valid)
        assert params["judge"] == "heuristic"
    assert load_params_files([SMOKE])["limit"] <= 10
    assert notebook_parameters(NOTEBOOK)["limit"] is None and notebook_parameters(NOTEBOOK)["judge"] == "heuristic"


# -- parameters --------------------------------------------------------------------------------------------
def test_cli_parameter_values_are_yaml_scalars():
    parsed = parse_cli_parameters([["limit", "8"], ["row_horizon", "null"], ["judge", "repeat(heuristic, 3)"],
                                   ["seed", "-1"], ["flag", "true"], ["sd", "0.5"], ["name", "x: y: z"]])
    assert parsed == {"limit": 8, "row_horizon": None, "judge": "repeat(heuristic, 3)", "seed": -1,
                      "flag": True, "sd": 0.5, "name": "x: y: z"}


def test_later_parameter_files_win(tmp_path):
    a = tmp_path / "a.yaml"
    b = tmp_path / "b.yaml"
    a.write_text("limit: 3\njudge: heuristic\n")
    b.write_text("limit: 5\n")
    assert load_params_files([a, b]) == {"limit": 5, "judge": "heuristic"}
    bad = tmp_path / "bad.yaml"
    bad.write_text("- 1\n- 2\n")
    with pytest.raises(ValueError, match="mapping"):
        load_params_files([bad])


def test_unknown_parameter_is_an_error_listing_the_valid_ones(tmp_path, capsys):
    with pytest.raises(UnknownParameterError) as err:
        run_notebook(NOTEBOOK, {"limt": 8}, out_dir=tmp_path)
    message = str(err.value)
    assert "'limt'" in message
    for name in ("turns_file", "judge", "rubric", "row_horizon", "limit", "seed", "run_name", "labels_file"):
        assert name in message
    assert not list(tmp_path.iterdir()), "no run folder for a rejected call"
    with pytest.raises(UnknownParameterError, match="run_dir"):
        run_notebook(NOTEBOOK, {"run_dir": "/tmp/x"}, out_dir=tmp_path)
    code = cli.main(["run", str(NOTEBOOK), "-p", "jduge", "heuristic", "--out", str(tmp_path)])
    assert code == 2 and "valid parameters" in capsys.readouterr().err


# -- failures --------------------------------------------------------------------------------------------
def test_failed_notebook_keeps_partial_output_and_marks_the_run_failed(tmp_path, capsys):
    params = new_code_cell("x = 1\nrun_dir = None")
    params.metadata["tags"] = ["parameters"]
    nb = new_notebook(cells=[
        params,
        new_code_cell("print(f'before the failure x={x}')"),
        new_code_cell("raise ValueError(f'planned failure with x={x}')"),
        new_code_cell("print('never printed')"),
    ], metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}})
    source = tmp_path / "broken.ipynb"
    nbformat.write(nb, source)
    out = tmp_path / "runs"
    code = cli.main(["run", str(source), "-p", "x", "41", "--out", str(out), "--quiet"])
    captured = capsys.readouterr()
    assert code == 1 and "FAILED" in captured.err and "planned failure with x=41" in captured.err
    folder = next(out.iterdir())
    assert folder.name.endswith("_broken")
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["status"] == "failed" and "planned failure with x=41" in manifest["error"]
    assert manifest["kind"] == "notebook" and manifest["ended_at"] and manifest["params"]["x"] == 41
    executed = nbformat.read(folder / "broken.ipynb", as_version=4)
    texts = [o.get("text", "") for c in executed.cells if c.cell_type == "code" for o in c.outputs]
    assert any("before the failure x=41" in t for t in texts)
    assert not any("never printed" in t for t in texts)
    assert any(o.output_type == "error" for c in executed.cells if c.cell_type == "code" for o in c.outputs)
    assert (folder / "broken.html").exists() and manifest["notebook"]["html"]
    assert f"html:       {folder / 'broken.html'}" in captured.out


def test_a_default_holding_an_equals_sign_is_a_known_parameter(tmp_path):
    """papermill's own inspection skips ``judge = "simulate(heuristic, sd=1)"``; ours parses the cell."""
    import nbformat

    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell('judge = "simulate(heuristic, sd=1, seed=1)"  # a spec\nlimit: int = 3\n')
    cell.metadata["tags"] = ["parameters"]
    nb.cells = [cell]
    path = tmp_path / "nb.ipynb"
    nbformat.write(nb, path)
    assert notebook_parameters(path) == {"judge": "simulate(heuristic, sd=1, seed=1)", "limit": 3}


# -- checks before the kernel starts: one line, exit 2 (5 for evidence without a valid turn), no folder ----
def _run_cli(tmp_path, capsys, *extra: str) -> tuple[int, str]:
    out = tmp_path / "runs"
    code = cli.main(["run", str(NOTEBOOK), "-f", str(DEFAULT), "--out", str(out), "--quiet", *extra])
    err = capsys.readouterr().err
    assert not out.exists() or not [p for p in out.iterdir() if not p.name.startswith(".")], \
        "a rejected run must write no run folder"
    return code, err


@pytest.mark.parametrize(("extra", "says"), [
    # `make run TURNS=/missing.jsonl` passes exactly these
    (["-p", "turns_file", "/missing.jsonl", "-p", "labels_file", "null", "-p", "run_name", "evaluate-own"],
     "turns_file: file /missing.jsonl does not exist"),
    (["-p", "judge", "nosuch"], "invalid judge spec 'nosuch'"),
    (["-p", "limit", "abc"], "limit of 01_evaluate.ipynb must be an integer or null"),
    (["-p", "limit", "2.5"], "must be an integer or null"),
    (["-p", "seed", "x"], "seed of 01_evaluate.ipynb must be an integer (its default is 0)"),
    (["-p", "batch", "maybe"], "batch of 01_evaluate.ipynb must be true or false"),
    (["-p", "rubric", "no-such-rubric"], "no packaged rubric 'no-such-rubric'"),
    (["-p", "labels_file", "/no/labels.csv"], "labels_file: file /no/labels.csv does not exist"),
    (["-p", "jduge", "heuristic"], "valid parameters"),
])
def test_bad_parameters_and_inputs_are_one_line_usage_errors_before_the_kernel(tmp_path, capsys, extra, says):
    code, err = _run_cli(tmp_path, capsys, *extra)
    assert code == 2, err
    assert says in err
    assert len(err.strip().splitlines()) == 1 and err.startswith("error: "), err


def test_an_empty_evidence_file_exits_5_before_the_kernel(tmp_path, capsys):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    code, err = _run_cli(tmp_path, capsys, "-p", "turns_file", str(empty))
    assert code == 5 and "is empty: nothing to judge" in err and len(err.strip().splitlines()) == 1
    only_bad = tmp_path / "bad.jsonl"
    only_bad.write_text("{not json\n")
    code, err = _run_cli(tmp_path, capsys, "-p", "turns_file", str(only_bad))
    assert code == 5 and "line 1" in err and len(err.strip().splitlines()) == 1


def test_a_study_parameter_naming_no_run_folder_and_a_reference_judge_spec_are_usage_errors(tmp_path, capsys):
    out = tmp_path / "runs"
    study = ROOT / "notebooks" / "02_weight_sensitivity.ipynb"
    assert cli.main(["run", str(study), "-p", "source_run", str(tmp_path), "--out", str(out)]) == 2
    assert "source_run" in capsys.readouterr().err
    # notebook 08 grades reference answers: its judge is a reference judge (heuristic or one anthropic: leaf),
    # not any evaluation judge
    reference = ROOT / "notebooks" / "08_reference_grading.ipynb"
    assert cli.main(["run", str(reference), "-p", "judge", "repeat(heuristic, 2)", "--out", str(out)]) == 2
    assert "unknown reference judge" in capsys.readouterr().err
    assert not out.exists()


def test_parameter_kinds_come_from_the_defaults():
    defaults = notebook_parameters(NOTEBOOK)
    # values as typed after -p: text parameters keep their text, a YAML null is None
    parsed = parse_cli_parameters([["run_name", "2024"], ["rubric", "1.10"], ["labels_file", "null"],
                                   ["limit", "3"], ["max_cost_usd", "2"]], defaults)
    assert parsed == {"run_name": "2024", "rubric": "1.10", "labels_file": None, "limit": 3, "max_cost_usd": 2}
    assert check_parameter_types(NOTEBOOK, {"run_name": 2024, "max_cost_usd": 2, "limit": None}, defaults) == \
        {"run_name": "2024", "max_cost_usd": 2, "limit": None}
    for name, value in (("limit", True), ("limit", "8"), ("max_cost_usd", "cheap"), ("batch", 1), ("seed", None)):
        with pytest.raises(ParameterValueError, match=f"parameter {name} "):
            check_parameter_types(NOTEBOOK, {name: value}, defaults)
    assert parameter_kind("horizons", [0, None]) == ("list", False)
    with pytest.raises(ParameterValueError, match="a list"):
        check_parameter_types("nb.ipynb", {"horizons": 20}, {"horizons": [0, 20]})


def test_a_manifest_the_notebook_leaves_unreadable_is_a_warning_not_silence(tmp_path):
    params = new_code_cell("run_dir = None")
    params.metadata["tags"] = ["parameters"]
    nb = new_notebook(cells=[params, new_code_cell(
        "from pathlib import Path\nPath(run_dir, 'manifest.json').write_text('{broken')")],
        metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}})
    source = tmp_path / "breaks_manifest.ipynb"
    nbformat.write(nb, source)
    result = run_notebook(source, out_dir=tmp_path / "runs", export_html=False)
    manifest = json.loads((result.run_dir / "manifest.json").read_text())
    assert manifest["status"] == "complete" and manifest["kind"] == "notebook"
    assert any("manifest.json the notebook left could not be read" in w for w in manifest["warnings"])


# -- rerun: notebook runs are executed again -------------------------------------------------------------
@pytest.mark.slow
def test_rerun_of_a_notebook_run_executes_the_notebook_again_and_no_cache_judges_again(smoke_run, tmp_path, capsys):
    _out, first = smoke_run
    again = tmp_path / "again"
    code = cli.main(["rerun", str(first.run_dir), "--out", str(again), "--no-cache", "--quiet"])
    text = capsys.readouterr().out
    assert code == 0, text
    (folder,) = [p for p in again.iterdir() if not p.name.startswith(".")]
    # the notebook ran again (an executed copy and its HTML), not a headless evaluate of its evidence
    assert (folder / "01_evaluate.ipynb").is_file() and (folder / "01_evaluate.html").is_file()
    m = load_run(folder).manifest
    assert m.notebook["source"] == "notebooks/01_evaluate.ipynb" and m.name == first.manifest.name
    assert json.loads((folder / "params.json").read_text())["limit"] == 8
    # --no-cache: nothing was served from a cache, every segment judged again
    assert m.cache_hits == 0 and m.cache_misses == m.counts.samples == first.manifest.counts.samples
    assert "verdict cache: 0 hit(s)" in text and "IDENTICAL" in text and "NOT identical" not in text


def _tiny_study(tmp_path: Path) -> Path:
    params = new_code_cell("seed = 1\nrun_dir = None")
    params.metadata["tags"] = ["parameters"]
    nb = new_notebook(cells=[params, new_code_cell(
        "import random\nfrom axon_eval.runs.study import write_study\n"
        "write_study(run_dir, {'headline': seed + 1, 'made_in': str(run_dir), 'draw': random.random()},\n"
        "            study='tiny', simulated=False)")],
        metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}})
    path = tmp_path / "tiny_study.ipynb"
    nbformat.write(nb, path)
    return path


@pytest.mark.slow
def test_rerun_of_a_study_run_executes_it_again_and_names_the_figures_that_differ(tmp_path, capsys, monkeypatch):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'scratch'\n")  # tmp_path is the repository
    monkeypatch.chdir(tmp_path)
    study = run_notebook(_tiny_study(tmp_path), {"seed": 4}, out_dir="runs", export_html=False)
    assert study.status == "complete" and study.manifest.kind == "study"
    # recorded paths are relative to the repository root
    assert json.loads((study.run_dir / "params.json").read_text())["run_dir"] == f"runs/{study.run_dir.name}"
    assert study.manifest.notebook["source"] == "tiny_study.ipynb"
    code = cli.main(["rerun", str(study.run_dir), "--quiet"])
    captured = capsys.readouterr()
    text = captured.out
    assert code == 7, captured.err  # the unseeded draw differs; the run folder it names does not count
    assert "study.json differs in 1 figure(s):" in text and "  draw: " in text
    assert "made_in" not in text and "headline" not in text
    (new,) = [p for p in (tmp_path / "runs").iterdir() if p != study.run_dir]
    assert json.loads((new / "study.json").read_text())["headline"] == 5  # params.json (seed 4) was used
