"""Study 10 (judge panel design): the run-folder loader, the cost gate, the figures, the bench
and the notebook (hygiene and a real papermill smoke run).

Oracles written here: the reducers (numpy / scipy.stats.trim_mean), the scorer's band through
``scoring.score_turn`` row by row, Cohen's kappa (``sklearn.metrics.cohen_kappa_score``), the cost
``1000 * s * sum(cost per call) * segments / turns``, the panel count by enumeration, the WCAG luminance
formula, and Pareto dominance by brute force.
"""

from __future__ import annotations

import itertools
import json
import math
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import nbformat
import pytest
from scipy.stats import trim_mean
from sklearn.metrics import cohen_kappa_score

from axon_eval import runs
from axon_eval.judges.prices import price_table
from axon_eval.labels import load_labels
from axon_eval.rubric import BANDS, CAP_FACTS, DIMENSIONS, Rubric
from axon_eval.runs.notebook import check_parameters, load_params_files, notebook_parameters
from axon_eval.runs.budget import BudgetExceeded
from axon_eval.runs.manifest import RunManifest
from axon_eval.runs.members import estimate_member_runs, members_from_runs
from axon_eval.scoring import score_turn
from axon_eval.stats.panels import prepare_members, simulated_members
from tests.notebook_checks import assert_numbers_for_people, assert_thin_notebook, markdown_text, run_smoke

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "notebooks" / "10_panel_design.ipynb"
SMOKE = ROOT / "notebooks" / "params" / "10_smoke.yaml"
SAMPLE = ROOT / "data" / "turns" / "sample_turns.jsonl"
LABELS = ROOT / "data" / "turns" / "labels.csv"
STUDY = "10_panel_design"

PARAMETERS = {"member_runs": None, "member_judges": None, "member_costs": None, "labels": "data/turns/labels.csv",
              "max_panel_size": 4, "reducers": ["mean", "median", "majority", "trimmed", "min_faithfulness"],
              "target_kappa": 0.7, "budget_usd_per_1k": None, "escalation_thresholds": [1, 2, 3, 4, 5, 6, 8, None],
              "seed": 0, "max_cost_usd": 1.0, "run_dir": None}
ISSUE_KEYS = {"study", "simulated", "source_run", "members", "n_panels", "panels", "recommended", "escalation",
              "escalation_panel", "n_segments", "n_labelled", "n_turns", "notes", "labels_note", "parameters",
              "labels_file", "labels_constructed", "member_runs", "declared_cost_usd_per_call",
              "declared_costs_are_assumptions", "estimated_cost_usd", "seed", "target_kappa", "budget_usd_per_1k"}
FIGURES = {"frontier.png", "error_correlation.png", "escalation.png"}


# -- a heuristic run folder to copy and alter ---------------------------------------------------------------
@pytest.fixture(scope="module")
def heuristic_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("member_runs")
    made = runs.evaluate(SAMPLE, "heuristic", "axon-v1", out_dir=out, name="member", progress=False,
                         limit=20, cache=False)
    return made.run_dir


def _copy(run_dir: Path, tmp_path: Path, name: str) -> Path:
    dest = tmp_path / name
    shutil.copytree(run_dir, dest)
    return dest


def _alter(folder: Path, *, results=None, **manifest_fields) -> None:
    if results is not None:
        df = pd.read_parquet(folder / "results")
        results(df)
        df.to_parquet(folder / "results" / "part-00000.parquet")
    if manifest_fields:
        m = RunManifest.read(folder)
        for k, v in manifest_fields.items():
            setattr(m, k, v)
        m.write(folder)


# -- members_from_runs ----------------------------------------------------------------------------------------
def test_members_from_runs_renames_and_keeps_failed_rows_null(heuristic_run, tmp_path):
    folder = _copy(heuristic_run, tmp_path, "a")
    raw = pd.read_parquet(folder / "results")
    failed_seg = raw["segment_id"].iloc[3]

    def fail_one(df):
        df.loc[df["segment_id"] == failed_seg, "status"] = "unjudged"

    _alter(folder, results=fail_one)
    m = members_from_runs([folder], names=["h"])
    assert len(m) == len(raw) and set(m["member"]) == {"h"}
    assert m.attrs["runs"] == {"h": str(folder)} and m.attrs["cost_source"] == {"h": "recorded cost_usd"}
    row = m[m["segment_id"] == failed_seg].iloc[0]
    assert row["verdict"] is None and all(math.isnan(row[d]) for d in DIMENSIONS)
    ok = m[m["segment_id"] != failed_seg].set_index("segment_id")
    ref = raw.set_index("segment_id").loc[ok.index]
    assert (ok["verdict"] == ref["judge_verdict"]).all()
    assert np.allclose(ok["latency_s"], ref["latency_ms"] / 1000.0)
    assert (ok["sample"] == ref["sample_index"]).all() and not m["simulated"].any()
    # the panels module counts the failed row as a failure of the member, not a missing segment
    ms = prepare_members(m)
    assert ms.summary().loc[0, "n_failed"] == 1 and ms.cost_per_call[0] == 0.0
    # default member id: the run's judge id
    assert set(members_from_runs([heuristic_run])["member"]) == {runs.load_run(heuristic_run).manifest.judge_id}


def test_a_run_without_costs_or_tokens_needs_a_declared_cost(heuristic_run, tmp_path):
    folder = _copy(heuristic_run, tmp_path, "nocost")
    _alter(folder, results=lambda df: df.__setitem__("cost_usd", np.nan), cost_usd=None, input_tokens=None,
           output_tokens=None)
    with pytest.raises(ValueError, match=r"nocost.*declared cost is required.*declared_cost=\{'x': <USD per call>\}"):
        members_from_runs([folder], names=["x"])
    m = members_from_runs([folder], names=["x"], declared_cost={"x": 0.003})
    assert m.attrs["declared_cost"] == {"x": 0.003} and m.attrs["cost_source"] == {"x": "declared"}
    ms = prepare_members(m, declared_cost=m.attrs["declared_cost"])
    assert ms.cost_per_call[0] == pytest.approx(0.003)
    with pytest.raises(ValueError, match="declared_cost names member"):
        members_from_runs([folder], names=["x"], declared_cost={"x": 0.003, "nobody": 1.0})


def test_manifest_tokens_are_spread_over_calls_and_priced(heuristic_run, tmp_path):
    folder = _copy(heuristic_run, tmp_path, "tokens")
    n = len(pd.read_parquet(folder / "results"))

    def unpriced_rows(df):
        df["cost_usd"] = np.nan
        df["model"] = "claude-haiku-4-5"

    _alter(folder, results=unpriced_rows, cost_usd=None, input_tokens=2000 * n, output_tokens=300 * n)
    m = members_from_runs([folder], names=["haiku"])
    rates = price_table().rates("claude-haiku-4-5")
    expected = (2000 * rates["input"] + 300 * rates["output"]) / 1_000_000  # USD per call, per-million prices
    assert prepare_members(m).cost_per_call[0] == pytest.approx(expected, rel=1e-6)
    assert "manifest tokens" in m.attrs["cost_source"]["haiku"]
    # a total cost in the manifest and no tokens: the total over the judged calls
    folder2 = _copy(heuristic_run, tmp_path, "total")
    _alter(folder2, results=lambda df: df.__setitem__("cost_usd", np.nan), cost_usd=0.5, input_tokens=None,
           output_tokens=None)
    assert prepare_members(members_from_runs([folder2], names=["t"])).cost_per_call[0] == pytest.approx(0.5 / n)


def test_members_from_runs_names_what_is_wrong(heuristic_run, tmp_path):
    with pytest.raises(ValueError, match="used by run .* pass names"):
        members_from_runs([heuristic_run, heuristic_run])
    with pytest.raises(ValueError, match="names has 1 entries for 2 run folders"):
        members_from_runs([heuristic_run, heuristic_run], names=["a"])
    with pytest.raises(ValueError, match="is not a folder"):
        members_from_runs([tmp_path / "missing"])
    with pytest.raises(ValueError, match="at least one run folder"):
        members_from_runs([])
    both = members_from_runs([heuristic_run, heuristic_run], names=["a", None])
    assert set(both["member"]) == {"a", runs.load_run(heuristic_run).manifest.judge_id}


def test_simulated_judge_runs_are_flagged(tmp_path):
    made = runs.evaluate(SAMPLE, "simulate(heuristic, sd=1, seed=1)", "axon-v1", out_dir=tmp_path, name="sim",
                         progress=False, limit=5, cache=False)
    m = members_from_runs([made.run_dir])
    assert m["simulated"].all() and m.attrs["simulated"] is True
    assert prepare_members(m).simulated.all()


# -- the cost gate ---------------------------------------------------------------------------------------------
def test_estimate_member_runs_refuses_over_budget(monkeypatch):
    from axon_eval.evidence import load_turns
    from axon_eval.judges import build_judge
    from axon_eval.view import build_views

    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key-never-sent")  # building the judge sends nothing
    turns, _invalid = load_turns(SAMPLE)
    views = build_views(turns[:5], Rubric.default())
    free = estimate_member_runs({"heuristic": build_judge("heuristic")}, views, max_cost_usd=0.0)
    assert free.attrs["total_usd"] == 0.0 and free["estimated_usd"].tolist() == [0.0]
    judges = {"heuristic": build_judge("heuristic"), "anthropic:claude-haiku-4-5": build_judge("anthropic:claude-haiku-4-5")}
    table = estimate_member_runs(judges, views, max_cost_usd=None)
    paid = float(table.loc[table["spec"] == "anthropic:claude-haiku-4-5", "estimated_usd"].iloc[0])
    assert paid > 0 and table.attrs["total_usd"] == pytest.approx(paid)
    with pytest.raises(BudgetExceeded, match="Nothing was sent"):
        estimate_member_runs(judges, views, max_cost_usd=paid / 2)


# -- the figures ---------------------------------------------------------------------------------------------
def _wcag_luminance(rgb) -> float:
    lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb[:3]]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def test_heatmap_text_reads_on_every_cell_and_titles_say_simulated():
    from matplotlib.colors import to_rgb

    from axon_eval.reporting import panels as panel_plots

    members = ["heuristic", "simulated:a", "simulated:b", "x"]
    values = np.array([[1, 0.95, -0.9, 0.0], [0.95, 1, 0.1, np.nan], [-0.9, 0.1, 1, 0.5], [0.0, np.nan, 0.5, 1]])
    fig = panel_plots.error_correlation_heatmap(pd.DataFrame(values, index=members, columns=members), simulated=True)
    ax = fig.axes[0]
    image = ax.images[0]
    texts = list(ax.texts)
    assert len(texts) == 16
    for t in texts:
        j, i = (round(v) for v in t.get_position())
        v = values[i, j]
        bg = image.cmap(image.norm(v)) if math.isfinite(v) else to_rgb("#e0e0e0")
        lb = _wcag_luminance(bg)
        contrast = {c: (max(lb, _wcag_luminance(to_rgb(c))) + 0.05) / (min(lb, _wcag_luminance(to_rgb(c))) + 0.05)
                    for c in ("black", "white")}
        assert t.get_color() == max(contrast, key=contrast.get), (t.get_text(), bg)  # the better of the two
        assert t.get_text() == ("n/a" if not math.isfinite(v) else f"{v:.2f}")
    assert ax.get_title().startswith("SIMULATED: ")
    plain = panel_plots.error_correlation_heatmap(pd.DataFrame(np.eye(2), index=["a", "b"], columns=["a", "b"]))
    assert "SIMULATED" not in plain.axes[0].get_title()


# -- the bench -----------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_panels_bench_quick_rows():
    from axon_eval.bench.suite import STUDY_BENCHES
    from axon_eval.bench.panels import bench_panels

    assert ("axon_eval.bench.panels", "bench_panels") in STUDY_BENCHES
    rows = bench_panels(quick=True)
    assert len(rows) == 4 and all(r["section"] == "studies" for r in rows)
    timed = [r for r in rows if r["unit"] == "s"]
    # 5 members, panels of up to 3, one sample: C(5,1) singles + C(5,2) x 3 reducers + C(5,3) x 4 reducers
    assert all(r["n_panels"] == 5 + 10 * 3 + 10 * 4 for r in timed)
    assert all(r["value"] > 0 for r in rows)


# -- the committed notebook --------------------------------------------------------------------------------------
def test_notebook_has_one_parameters_cell_no_outputs_and_no_definitions():
    nb = assert_thin_notebook(NOTEBOOK)
    assert notebook_parameters(NOTEBOOK) == PARAMETERS
    sections = [c.source.lstrip() for c in nb.cells if c.cell_type == "markdown" and c.source.lstrip().startswith("## ")]
    for needed in ("## Set-up", "## 1. The members and their own agreement", "## 2. The error-correlation matrix and n_eff",
                   "## 3. The panel table and the frontier", "## 4. The recommendation", "## 5. The escalation curve",
                   "## study.json"):
        assert any(s.startswith(needed) for s in sections), needed
    text = markdown_text(nb)
    assert "SIMULATED" in nb.cells[0].source and "assumptions" in text.lower()


def test_smoke_parameters_are_notebook_parameters():
    params = load_params_files([SMOKE])
    check_parameters(NOTEBOOK, params, notebook_parameters(NOTEBOOK))
    assert params["member_runs"] is None and params["member_judges"] is None


# -- the smoke run ----------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("runs")
    (result,) = run_smoke(NOTEBOOK, SMOKE, out, cache=tmp_path_factory.mktemp("cache") / "verdicts.sqlite")
    return out, result


def _reduce(votes: np.ndarray, reducer: str) -> np.ndarray:
    """(V, 4) votes of one segment -> (4,) reduced, written out independently of stats.panels."""
    out = []
    for j in range(votes.shape[1]):
        col = votes[:, j][~np.isnan(votes[:, j])]
        if not len(col):
            out.append(np.nan)
        elif reducer in ("mean", "single") or (reducer == "min_faithfulness" and j < 3):
            out.append(col.mean())
        elif reducer == "min_faithfulness":
            out.append(col.min())
        elif reducer == "median":
            out.append(float(np.median(col)))
        elif reducer == "trimmed":
            out.append(float(trim_mean(col, 0.25)))
        elif reducer == "majority":
            vals, counts = np.unique(col, return_counts=True)
            out.append(vals[counts == counts.max()].min())
    return np.round(np.array(out, dtype=float), 6)


@pytest.mark.slow
def test_smoke_run_writes_the_study(smoke_run):
    out, result = smoke_run
    assert result.status == "complete", result.error
    folder = result.run_dir
    study = json.loads((folder / "study.json").read_text())
    assert set(study) == ISSUE_KEYS
    assert study["study"] == STUDY and study["simulated"] is True and study["declared_costs_are_assumptions"] is True
    params = load_params_files([SMOKE])

    # the members: the heuristic (made here, under tmp) and five SIMULATED ones with declared costs
    source = Path(study["source_run"])
    assert source.is_dir() and source.parent.resolve() == out.resolve()
    ids = [m["id"] for m in study["members"]]
    assert ids[0] == "heuristic" and len(ids) == 6 and all(i.startswith("simulated:") for i in ids[1:])
    declared = study["declared_cost_usd_per_call"]
    assert set(declared) == set(ids[1:])

    heur = members_from_runs([source], names=["heuristic"])
    labels = load_labels(LABELS)
    members = pd.concat([heur, simulated_members(heur, labels, seed=params["seed"], n_samples=3)], ignore_index=True)
    n_seg = heur["segment_id"].nunique()
    n_turn = heur["turn_id"].nunique()
    assert (study["n_segments"], study["n_turns"]) == (n_seg, n_turn)

    # the heuristic's own band kappa, from the run's bands, by sklearn
    lab = labels.set_index("segment_id")["verdict"]
    res = runs.load_run(source).results.set_index("segment_id")
    k_heur = cohen_kappa_score(res["band"], lab.loc[res.index], labels=list(BANDS))
    assert study["members"][0]["band_kappa"] == pytest.approx(k_heur, abs=1e-6)
    lo, hi = study["members"][0]["band_kappa_ci"]
    assert lo < k_heur < hi

    # the number of panels, enumerated: subsets of up to max_panel_size x samples held x applicable reducers
    held = {"heuristic": 1, **{i: 3 for i in ids[1:]}}
    count = 0
    for k in range(1, params["max_panel_size"] + 1):
        for subset in itertools.combinations(ids, k):
            for s in range(1, min(held[m] for m in subset) + 1):
                v = k * s
                count += 1 if v == 1 else 3 + (v >= 3) + (v >= 4)  # mean, majority, min_faithfulness (+median, +trimmed)
    assert study["n_panels"] == count

    # the recommended panel: its bands recomputed from the votes and the scorer, kappa by sklearn
    rec = study["recommended"]
    assert rec["panel_id"] is not None and rec["band_kappa_ci"][0] >= params["target_kappa"]
    votes = {m: g.set_index(["segment_id", "sample"]) for m, g in members.groupby("member")}
    facts = heur.set_index("segment_id")[list(CAP_FACTS)]
    bands = {}
    for seg in heur["segment_id"]:
        v = np.array([votes[m].loc[(seg, j), list(DIMENSIONS)].to_numpy(dtype=float)
                      for m in rec["members"] for j in range(rec["samples"])])
        red = _reduce(v, rec["reducer"])
        scored = score_turn({d: (None if math.isnan(x) else float(x)) for d, x in zip(DIMENSIONS, red, strict=True)},
                            {f: bool(facts.at[seg, f]) for f in CAP_FACTS}, Rubric.default())
        bands[seg] = scored.band
    segs = list(bands)
    k_rec = cohen_kappa_score([bands[s] for s in segs], lab.loc[segs], labels=list(BANDS))
    assert rec["band_kappa"] == pytest.approx(k_rec, abs=1e-6)
    bad = [s for s in segs if lab[s] != "good"]
    assert rec["false_pass_rate"] == pytest.approx(sum(bands[s] == "good" for s in bad) / len(bad), abs=1e-6)
    # its cost: 1000 x samples x the members' declared costs per call x segments per turn
    per_call = sum(declared.get(m, 0.0) for m in rec["members"])
    assert rec["cost_per_1k_turns"] == pytest.approx(1000 * rec["samples"] * per_call * n_seg / n_turn, rel=1e-6)
    assert rec["confirmation"][rec["panel_id"]]["method"] == "cluster bootstrap percentile"

    # the frontier rows: cheapest first, none dominated by another panel on the frontier
    front = study["panels"]
    costs = [p["cost_per_1k_turns"] for p in front]
    assert costs == sorted(costs) and rec["panel_id"] in {p["panel_id"] for p in front} | {None}
    for a, b in itertools.permutations(front, 2):
        dominated = (b["cost_per_1k_turns"] <= a["cost_per_1k_turns"] and b["band_kappa_ci"][0] >= a["band_kappa_ci"][0]
                     and (b["cost_per_1k_turns"] < a["cost_per_1k_turns"] or b["band_kappa_ci"][0] > a["band_kappa_ci"][0]))
        assert not dominated, (a["panel_id"], b["panel_id"])

    # escalation of the shown panel: the grid of the smoke file; 'verdicts only' = null t, escalates least
    esc = study["escalation"]
    assert [e["t"] for e in esc] == [2.0, 4.0, 6.0, None]
    shares = [e["share_escalated"] for e in esc]
    assert shares == sorted(shares, reverse=True) and all(0 <= s <= 1 for s in shares)
    if rec["samples"] * len(rec["members"]) >= 2:  # a panel of two or more votes: it is the one shown
        assert study["escalation_panel"] == rec["panel_id"]
    else:  # one vote has nothing to disagree about: the curve is the runner-up's, a panel of several votes
        assert study["escalation_panel"] == rec["runner_up"]["panel_id"] and study["escalation_panel"].endswith(("x2", "x3"))

    figures = {p.name for p in (folder / "figures").glob("*.png")}
    assert FIGURES <= figures
    from PIL import Image as PILImage

    for name in FIGURES:
        assert PILImage.open(folder / "figures" / name).info.get("Title", "").startswith("SIMULATED: "), name
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["status"] == "complete" and manifest["kind"] == "study"
    page = (folder / f"{STUDY}.html").read_text()
    assert page.count("SIMULATED") >= 5
    assert ">nan<" not in page and ">None<" not in page  # tables read for people


@pytest.mark.slow
def test_smoke_run_tables_and_printed_figures_read_for_people(smoke_run):
    """Every table through axon_eval.display.styled, no raw float printed (no study.json dump)."""
    _, result = smoke_run
    assert_numbers_for_people(nbformat.read(result.notebook_path, as_version=4))
