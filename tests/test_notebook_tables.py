"""Numbers for people: one display rule everywhere.

* ``axon_eval.display.styled``, the Styler every notebook table goes through, checked on a constructed
  frame whose expected text is written out here (the long floats, NaN columns and intervals of the issue);
* every notebook shows its tables through ``styled``: no ``display(df)``, no bare DataFrame at the end of a
  cell, no ``.round(n)``, no ``json.dumps`` of a ``study.json`` (read statically from the committed
  notebooks; the executed notebooks are checked by each notebook's smoke test with
  ``tests.notebook_checks.assert_numbers_for_people``);
* the same headline gets one interval everywhere: the mean score's interval of the bundled sample's
  heuristic run is the same in the report, notebook 01's output, ``trend`` and study 09's ``study.json``,
  and equals a cluster bootstrap written out here.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import nbformat
import numpy as np
import pandas as pd
import pytest

from axon_eval import display, runs
from axon_eval.cli import main
from axon_eval.runs.notebook import run_notebook

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
SHOWN_AS_IS = {"Markdown", "HTML", "Image"}


# -- the Styler ---------------------------------------------------------------------------------------------
def cells(styler) -> list[list[str]]:
    html = styler.to_html()
    return [re.findall(r"<td[^>]*>([^<]*)</td>", row) for row in re.findall(r"<tr>(.*?)</tr>", html, re.S)
            if "<td" in row]


def test_styled_reads_every_number_as_people_do():
    frame = pd.DataFrame({
        "figure": ["mean score", "share good", "mean sql_quality"],
        "kind": ["mean", "share", "mean"],
        "estimate": [72.0, 0.639175, 7.98969],
        "lo": [72.0, 0.54, 7.456],
        "hi": [82.4, 0.73, 8.573],
        "n": [97, 97, 97],
        "tokens": [np.nan, np.nan, np.nan],             # a NaN column: left out and named
        "mean_chars": [658.053789, 0.586796, np.nan],   # raw floats and one missing value
        "band_agreement": [0.0309, 0.9995, 1.0],         # a share by its name
    })
    shown = display.styled(frame)
    assert list(shown.data.columns) == ["figure", "kind", "estimate (interval)", "n", "mean_chars", "band_agreement"]
    assert cells(shown) == [
        ["mean score", "mean", "72.0 (72.0 to 82.4)", "97", "658", "3.1%"],
        ["share good", "share", "64% (54% to 73%)", "97", "0.587", ">99.9%"],
        ["mean sql_quality", "mean", "7.99 (7.46 to 8.57)", "97", "–", "100%"],
    ]
    caption = re.search(r"<caption>(.*?)</caption>", shown.to_html()).group(1)
    assert "no value in tokens (left out)" in caption and "–: no value (missing, not zero)" in caption


def test_styled_merges_named_bounds_and_pairs_and_formats_labels():
    frame = pd.DataFrame({"icc1": [0.935167], "icc1_ci_low": [0.836943], "icc1_ci_high": [0.980272],
                          "kappa": [0.5], "kappa_ci": [[0.5, 0.74]], "flag": [True]}, index=[0.05])
    shown = display.styled(frame)
    assert cells(shown) == [["0.935 (0.837 to 0.980)", "0.50 (0.50 to 0.74)", "yes"]]
    assert ">0.05<" in shown.to_html()  # the numeric row label is formatted and shown
    assert display.fmt_interval(0.5, 0.74) == "0.50 to 0.74" and display.fmt_interval(72.0, 82.4) == "72.0 to 82.4"
    assert display.fmt_estimate(-10.2165, -13.1423, -7.0657) == "-10.2 (-13.1 to -7.1)"


def test_the_gate_message_reads_its_interval_the_same_way():
    from axon_eval.stats.agreement import Estimate, calibration_gate

    gate = calibration_gate(Estimate("kappa", 0.616348, (0.485523, 0.739028), 97, "BCa", 0.95, 2000, 0))
    assert "kappa = 0.616, 95% CI 0.486 to 0.739 (BCa), n = 97 segments" in gate.message


# -- every notebook shows its tables through styled ---------------------------------------------------------
def _called(node: ast.AST) -> str:
    func = node.func if isinstance(node, ast.Call) else None
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_notebook_table_goes_through_styled(path):
    nb = nbformat.read(str(path), as_version=4)
    problems = []
    for k, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        tree = ast.parse(cell.source)
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            name = _called(node)
            if name == "round" and isinstance(node.func, ast.Attribute):
                problems.append(f"cell {k}: .round() of a table (use display.styled)")
            if name == "dumps":
                problems.append(f"cell {k}: json.dumps printed (use runs.study.format_study)")
            if name in ("people_table", "people_series"):
                problems.append(f"cell {k}: {name} (use display.styled)")
            if name == "display" and node.args and not (
                    isinstance(node.args[0], ast.Call) and _called(node.args[0]) in SHOWN_AS_IS | {"styled"}):
                problems.append(f"cell {k}: display({ast.unparse(node.args[0])[:60]}) without display.styled")
        last = tree.body[-1] if tree.body else None
        if isinstance(last, ast.Expr) and isinstance(last.value, ast.Call | ast.Name | ast.Attribute | ast.Subscript) \
                and _called(last.value) not in ("print", "display", "styled"):
            problems.append(f"cell {k}: ends in a bare {ast.unparse(last.value)[:60]}")
    assert problems == []


# -- one interval everywhere ------------------------------------------------------------------------------
@pytest.mark.slow
def test_the_mean_score_interval_is_the_same_in_report_notebook_trend_and_study_09(tmp_path, monkeypatch, capsys):
    for var in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv(runs.RUNS_DIR_ENV, str(tmp_path))
    sample = ROOT / "data" / "turns" / "sample_turns.jsonl"
    assert main(["evaluate", "--turns", str(sample), "--judge", "heuristic", "--out", str(tmp_path), "--quiet"]) == 0
    (run_dir,) = [p for p in tmp_path.iterdir() if p.is_dir() and not p.name.startswith(".")]
    capsys.readouterr()

    # the oracle: the judged segments' mean score, whole turns resampled (default_rng(0), 2,000 replicates)
    results = pd.read_parquet(run_dir / "results")
    judged = results[results["status"] == "judged"]
    turns = pd.unique(judged["turn_id"])
    sums, sizes = (judged.groupby("turn_id")["score"].agg(f).reindex(turns) for f in ("sum", "size"))
    counts = np.random.default_rng(0).multinomial(len(turns), [1 / len(turns)] * len(turns), size=2000)
    lo, hi = np.quantile([(sums * c).sum() / (sizes * c).sum() for c in counts], [0.025, 0.975])
    expected = display.fmt_estimate(judged["score"].mean(), lo, hi)
    bounds = display.fmt_interval(lo, hi)
    assert bounds in expected

    # the report: the headline table's interval column
    page = (run_dir / "report.html").read_text()
    row = re.search(r'<tr><td>mean score</td><td class="num">([^<]*)</td><td class="num">([^<]*)</td>', page)
    head = expected.partition(" (")[0]  # the estimate as the one-line form writes it, in its own column
    assert row.groups() == (head, bounds)

    # trend over the run
    assert main(["trend", str(run_dir)]) == 0
    assert expected in capsys.readouterr().out

    # notebook 01 on the whole sample (its own run of the same evidence, judge and rubric)
    nb01 = run_notebook(ROOT / "notebooks" / "01_evaluate.ipynb", params_files=[ROOT / "notebooks" / "params" /
                                                                                 "default.yaml"], out_dir=tmp_path,
                        export_html=False)
    assert nb01.status == "complete", nb01.error
    executed = nbformat.read(str(nb01.notebook_path), as_version=4)
    html = "".join(o.data["text/html"] for c in executed.cells if c.cell_type == "code" for o in c.outputs
                   if "text/html" in o.get("data", {}) and "interval" in o.data["text/html"])
    table = re.search(r">mean score</td>\s*<td[^>]*>([^<]*)</td>\s*<td[^>]*>([^<]*)</td>", html)
    assert table and table.groups() == (head, bounds)

    # study 09 on its smoke parameters: it reuses a complete heuristic run of the sample; study.json keeps
    # the mean score's naive interval as numbers
    nb09 = run_notebook(ROOT / "notebooks" / "09_corrected_estimates.ipynb",
                        params_files=[ROOT / "notebooks" / "params" / "09_smoke.yaml"], out_dir=tmp_path,
                        export_html=False)
    assert nb09.status == "complete", nb09.error
    naive = json.loads((nb09.run_dir / "study.json").read_text())["naive"]["mean score"]
    assert display.fmt_estimate(naive["estimate"], *naive["interval"]) == expected
    assert naive["interval"] == pytest.approx([lo, hi], abs=1e-9)
