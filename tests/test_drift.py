"""Judge drift: ``axon_eval.stats.drift`` known answers, anchors and the ``anchor``/``drift`` verbs.

* Bland-Altman on a hand-computed case (Bland & Altman 1986: bias, SD with n - 1, limits bias -+ 1.96 SD,
  SE(bias) = s/sqrt(n), SE(limit) = sqrt(3) s/sqrt(n), t quantiles);
* ``judge_drift`` over an in-memory comparison against scipy as the oracle (mean, Wilcoxon, bootstrap per
  dimension with the documented generator) and hand counts (transitions, shares);
* the decision: a table of threshold files against the same measured figures; no thresholds, no decision;
* anchors: marking, refusals, frozen hashes, a deterministic candidate that equals the anchor;
* the CLI: ``anchor`` then ``drift`` with a SIMULATED candidate, exit 0 for both decisions.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from scipy import stats

from axon_eval import runs
from axon_eval.judges import build_judge
from axon_eval.calibration import anchors
from axon_eval.cli import main
from axon_eval.runs.io import results_sha256
from axon_eval.rubric import BANDS, DIMENSIONS
from axon_eval.runs.compare import compare_runs
from axon_eval.runs.load import Run
from axon_eval.runs.manifest import RunManifest
from axon_eval.calibration.drift import drift_json, judge_drift
from axon_eval.stats import drift as D

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "data" / "turns" / "sample_turns.jsonl"
SIM = "simulate(heuristic, sd=1, seed=1)"


# -- thresholds ------------------------------------------------------------------------------------------
def limits(**over: float | None) -> dict:
    base = {"min_n_compared": 3, "max_unjudged_share": 0.0, "max_abs_mean_delta": 2.0, "max_abs_mean_delta_ci": 3.0,
            "min_wilcoxon_p": 0.05, "max_band_change_share": 0.5, "max_abs_dimension_delta": 1.0,
            "max_abs_limit_of_agreement": 10.0}
    return {**base, **over}


def thresholds(**over: float | None) -> D.DriftThresholds:
    return D.parse_thresholds({"name": "test", "confidence": 0.95, "thresholds": limits(**over)})


def test_packaged_thresholds_declare_every_threshold():
    t = D.load_thresholds(D.packaged_thresholds_path())
    assert set(t.limits) == set(D.THRESHOLDS) and all(v is not None for v in t.limits.values())
    assert t.name == "axon-drift-v1" and t.confidence == 0.95 and len(t.sha256) == 64


@pytest.mark.parametrize("mutate, message", [
    (lambda d: d["thresholds"].pop("min_wilcoxon_p"), "missing threshold"),
    (lambda d: d["thresholds"].update(max_everything=1), "unknown threshold"),
    (lambda d: d.pop("confidence"), "missing 'confidence'"),
    (lambda d: d.update(confidence=1.5), "confidence must be"),
    (lambda d: d["thresholds"].update(max_band_change_share=2), "is a share"),
    (lambda d: d["thresholds"].update(max_abs_mean_delta=-1), "number >= 0 or null"),
    (lambda d: d["thresholds"].update(max_abs_mean_delta="two"), "number >= 0 or null"),
    (lambda d: d.update(colour="red"), "unknown key"),
])
def test_bad_thresholds_files_are_refused(tmp_path, mutate, message):
    data = {"name": "t", "confidence": 0.95, "thresholds": limits()}
    mutate(data)
    path = tmp_path / "t.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ValueError, match=message):
        D.load_thresholds(path)


def test_no_thresholds_no_decision():
    with pytest.raises(TypeError, match="no default thresholds"):
        D.decide({}, None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="no default thresholds"):
        judge_drift(None, {"max_abs_mean_delta": 2})  # type: ignore[arg-type]
    with pytest.raises(FileNotFoundError):
        D.load_thresholds("/nonexistent/thresholds.yaml")


# -- Bland-Altman: a hand-computed case ------------------------------------------------------------------
def test_bland_altman_hand_computed():
    a, b = [50, 60, 70, 80], [52, 59, 74, 81]  # d = 2, -1, 4, 1
    ba = D.bland_altman(a, b)
    sd = math.sqrt(13 / 3)  # deviations from 1.5: .5, -2.5, 2.5, -.5 -> squares sum 13, n - 1 = 3
    assert ba.n == 4 and ba.bias == pytest.approx(1.5) and ba.sd == pytest.approx(sd)
    assert (ba.lower, ba.upper) == pytest.approx((1.5 - 1.96 * sd, 1.5 + 1.96 * sd))  # sd 2.081666: -2.580065, 5.580065
    assert ba.lower == pytest.approx(-2.580065, abs=1e-6) and ba.upper == pytest.approx(5.580065, abs=1e-6)
    t = 3.182446305284263  # t_{0.975, 3}
    assert ba.bias_ci == pytest.approx((1.5 - t * sd / 2, 1.5 + t * sd / 2))
    assert ba.lower_ci == pytest.approx((ba.lower - t * math.sqrt(3) * sd / 2, ba.lower + t * math.sqrt(3) * sd / 2))
    assert ba.upper_ci == pytest.approx((ba.upper - t * math.sqrt(3) * sd / 2, ba.upper + t * math.sqrt(3) * sd / 2))
    assert ba.max_abs_limit == pytest.approx(ba.upper)
    fit = stats.linregress([51, 59.5, 72, 80.5], [2, -1, 4, 1])
    assert ba.slope == pytest.approx(fit.slope) and ba.slope_p == pytest.approx(fit.pvalue)
    assert list(ba.points.columns) == ["mean", "difference"] and ba.points["difference"].tolist() == [2, -1, 4, 1]
    assert "Bland" in ba.to_json()["reference"] and "1986" in ba.to_json()["reference"]


def test_bland_altman_small_and_nan():
    assert D.bland_altman([], []).bias is None
    one = D.bland_altman([1.0, np.nan], [3.0, 5.0])
    assert one.n == 1 and one.bias == 2.0 and one.lower is None and one.max_abs_limit is None
    with pytest.raises(ValueError, match="paired"):
        D.bland_altman([1, 2], [1])


# -- judge_drift on an in-memory comparison, scipy as the oracle -----------------------------------------
def results(rows: list[tuple]) -> pd.DataFrame:
    """Results rows (segment_id, intent, sql, relevance, faithfulness, score, band, status)."""
    frame = pd.DataFrame(rows, columns=["segment_id", *DIMENSIONS, "score", "band", "status"])
    frame["sample_index"] = 0
    frame["raw_score"] = frame["score"]
    frame["caps_applied"] = ""
    frame["error"] = None
    frame["judge_id"] = "j"
    return frame


def in_memory_run(name: str, judge: str, frame: pd.DataFrame) -> Run:
    m = RunManifest(run_id=name, status="complete", kind="evaluate", name=name, judge_id=judge, rubric_id="r",
                    started_at="2026-01-01T00:00:00Z", turns_file="t.jsonl", input_files={"t.jsonl": "abc"})
    return Run(run_dir=Path(name), manifest=m, params={}, results=frame)


ANCHOR_ROWS = [("s1", 8, 8, 8, 8, 80.0, "good", "judged"), ("s2", 6, 6, 6, np.nan, 60.0, "partial", "judged"),
               ("s3", 4, 4, 4, 4, 40.0, "poor", "judged"), ("s4", 9, 9, 9, 9, 90.0, "good", "judged"),
               ("s5", 5, 5, 5, 5, 50.0, "partial", "judged"), ("s6", 7, 7, 7, 7, 70.0, "partial", "judged")]
CANDIDATE_ROWS = [("s1", 7, 8, 7, 8, 76.0, "partial", "judged"), ("s2", 7, 6, 6, np.nan, 63.0, "partial", "judged"),
                  ("s3", 4, 5, 4, 4, 42.5, "poor", "judged"), ("s4", 9, 9, 8, 9, 87.5, "good", "judged"),
                  ("s5", 4, 5, 5, 3, 43.0, "poor", "judged"), ("s6", np.nan, np.nan, np.nan, np.nan, np.nan, None,
                                                              "unjudged")]


@pytest.fixture(scope="module")
def known():
    comparison = compare_runs(in_memory_run("A", "anchor-judge", results(ANCHOR_ROWS)),
                              in_memory_run("B", "cand-judge", results(CANDIDATE_ROWS)), n_boot=500, seed=3)
    return comparison, judge_drift(comparison, thresholds(), simulated=True)


def test_judge_drift_known_answers(known):
    comparison, drift = known
    d = np.array([-4.0, 3.0, 2.5, -2.5, -7.0])  # s1..s5 candidate - anchor; s6 unjudged by the candidate
    assert drift.n_compared == 5 and drift.n_anchor == 6 and drift.n_unjudged == 1 and drift.n_unmatched == 0
    assert drift.unjudged_share == pytest.approx(1 / 6)
    assert drift.mean_delta == pytest.approx(d.mean()) == comparison.mean_delta
    assert drift.mean_delta_ci == comparison.mean_delta_ci  # compare_runs' bootstrap, not a second one
    assert drift.wilcoxon_p == pytest.approx(stats.wilcoxon(d).pvalue)
    assert drift.n_band_changes == 2 and drift.band_change_share == pytest.approx(0.4)  # good->partial, partial->poor
    t = drift.transitions
    assert t.loc["good", "partial"] == 1 and t.loc["partial", "poor"] == 1 and int(t.to_numpy().sum()) == 5
    assert list(t.index) == list(BANDS) == list(t.columns)
    assert drift.bland_altman.bias == pytest.approx(d.mean()) and drift.bland_altman.sd == pytest.approx(d.std(ddof=1))
    assert drift.simulated is True and drift.candidate_judge_id == "cand-judge" and drift.anchor_judge_id == "anchor-judge"


def test_dimension_drift_matches_scipy(known):
    _, drift = known
    dims = drift.dimensions.set_index("dimension")
    expected = {"intent_understood": [-1, 1, 0, 0, -1], "sql_quality": [0, 0, 1, 0, 0],
                "result_relevance": [-1, 0, 0, -1, 0], "answer_faithfulness": [0, 0, 0, -2]}  # s2 null
    for k, dim in enumerate(DIMENSIONS):
        x = np.array(expected[dim], dtype=float)
        row = dims.loc[dim]
        assert row["n"] == len(x) and row["mean_delta"] == pytest.approx(x.mean())
        assert row["n_changed"] == int((x != 0).sum())
        nz = x[x != 0]
        assert row["wilcoxon_p"] == pytest.approx(stats.wilcoxon(nz).pvalue)
        boot = stats.bootstrap((x,), np.mean, n_resamples=500, confidence_level=0.95, method="percentile",
                               random_state=np.random.default_rng([3, k]))
        assert (row["ci_low"], row["ci_high"]) == pytest.approx((boot.confidence_interval.low,
                                                                 boot.confidence_interval.high))
    assert drift.measured["max_abs_dimension_delta"] == pytest.approx(0.5)  # faithfulness -2/4


def test_dimension_with_no_change_has_a_point_ci():
    pairs = pd.DataFrame({f"{d}_{s}": [5.0, 6.0] for d in DIMENSIONS for s in "ab"})
    table = D.dimension_drift(pairs).set_index("dimension")
    assert (table["mean_delta"] == 0).all() and (table["ci_low"] == 0).all() and table["wilcoxon_p"].isna().all()


# -- the decision table ------------------------------------------------------------------------------------
MEASURED = {"min_n_compared": 50.0, "max_unjudged_share": 0.0, "max_abs_mean_delta": 1.2, "max_abs_mean_delta_ci": 2.1,
            "min_wilcoxon_p": 0.2, "max_band_change_share": 0.06, "max_abs_dimension_delta": 0.3,
            "max_abs_limit_of_agreement": 7.5}


@pytest.mark.parametrize("over, decision, failed", [
    ({}, "adopt", []),
    ({"max_abs_mean_delta": 1.0}, "hold", ["max_abs_mean_delta"]),
    ({"max_abs_mean_delta": 1.2}, "adopt", []),  # the limit itself holds
    ({"min_wilcoxon_p": 0.25}, "hold", ["min_wilcoxon_p"]),
    ({"max_band_change_share": 0.05, "max_abs_limit_of_agreement": 7.0}, "hold",
     ["max_band_change_share", "max_abs_limit_of_agreement"]),
    ({"min_n_compared": 60}, "hold", ["min_n_compared"]),
    ({"max_abs_dimension_delta": 0.2, "max_abs_mean_delta_ci": 2.0}, "hold",
     ["max_abs_mean_delta_ci", "max_abs_dimension_delta"]),
    ({"max_abs_mean_delta": None, "min_wilcoxon_p": None}, "adopt", []),
    ({"max_abs_mean_delta": 0.5, "max_abs_dimension_delta": None}, "hold", ["max_abs_mean_delta"]),
])
def test_decision_table(over, decision, failed):
    result = D.decide(MEASURED, thresholds(**over))
    assert result.decision == decision and result.failed == failed
    checks = result.checks.set_index("threshold")
    assert list(checks.index) == list(D.THRESHOLDS)
    for name, limit in limits(**over).items():
        assert checks.loc[name, "measured"] == pytest.approx(MEASURED[name])
        if limit is None:
            assert checks.loc[name, "passed"] is None and "switched off" in checks.loc[name, "note"]
        else:
            assert checks.loc[name, "limit"] == limit and checks.loc[name, "passed"] is (name not in failed)
    text = result.format()
    assert text.startswith(f"decision: {decision.upper()}") and all(name in text for name in D.THRESHOLDS)


def test_unmeasurable_figures_fail_unless_vacuous():
    measured = {**MEASURED, "min_wilcoxon_p": None}
    assert D.decide(measured, thresholds()).failed == ["min_wilcoxon_p"]
    vacuous = D.decide(measured, thresholds(), {"min_wilcoxon_p": "every score difference is 0"})
    assert vacuous.decision == "adopt"
    assert vacuous.checks.set_index("threshold").loc["min_wilcoxon_p", "note"].startswith("holds:")


def test_judge_drift_decides_with_the_file(known):
    _, drift = known
    assert drift.decision.decision == "hold"  # one of six unjudged, and |mean| 1.6 with a wide CI
    assert "max_unjudged_share" in drift.decision.failed
    record = drift_json(drift)
    assert record["decision"] == "hold" and record["n"] == 5 and record["simulated"] is True
    assert {c["threshold"] for c in record["decision_detail"]["checks"]} == set(D.THRESHOLDS)
    json.dumps(record)  # JSON-safe


# -- anchors on real runs ----------------------------------------------------------------------------------
@pytest.fixture()
def env(tmp_path, monkeypatch):
    monkeypatch.setenv(runs.RUNS_DIR_ENV, str(tmp_path))
    monkeypatch.setenv(runs.CACHE_ENV, str(tmp_path / "cache.sqlite"))
    return tmp_path


def evaluated(out: Path, limit: int = 12) -> Path:
    return runs.evaluate(SAMPLE, "heuristic", "axon-v1", out_dir=out, name="anchor", limit=limit,
                         progress=False).run_dir


def test_mark_anchor_freezes_hashes_and_is_never_remarked(env):
    run = evaluated(env)
    assert not anchors.is_anchor(run)
    a = anchors.mark_anchor(run, "reference run for the test")
    assert anchors.is_anchor(run) and a.judge_id == build_judge("heuristic").judge_id and a.note == "reference run for the test"
    stored = json.loads((run / "anchor.json").read_text())
    assert stored["verdicts_sha256"] == runs.file_sha256(run / "verdicts.jsonl")
    assert stored["results_sha256"] == results_sha256(run)  # the parts of its results dataset, in order
    assert stored["evidence_sha256"] == runs.file_sha256(SAMPLE) and stored["evidence_file"] == "data/turns/sample_turns.jsonl"
    assert stored["rubric_id"] and stored["marked_at"].endswith("Z") and stored["n_segments"] > 0
    assert anchors.verify_anchor(run).run_id == run.name
    with pytest.raises(anchors.AnchorError, match="already an anchor"):
        anchors.mark_anchor(run, "again")
    assert json.loads((run / "anchor.json").read_text()) == stored


def test_mark_anchor_refusals(env):
    run = evaluated(env, limit=3)
    with pytest.raises(anchors.AnchorError, match="note"):
        anchors.mark_anchor(run, "  ")
    partial = env / "partial"
    shutil.copytree(run, partial)
    m = RunManifest.read(partial)
    m.status = "partial"
    m.write(partial)
    with pytest.raises(anchors.AnchorError, match="only a complete run"):
        anchors.mark_anchor(partial, "x")
    study = env / "study"
    shutil.copytree(run, study)
    m = RunManifest.read(study)
    m.kind = "study"
    m.write(study)
    with pytest.raises(anchors.AnchorError, match="'study' run"):
        anchors.mark_anchor(study, "x")
    bare = env / "bare"
    shutil.copytree(run, bare)
    (bare / "verdicts.jsonl").unlink()
    with pytest.raises(anchors.AnchorError, match="no verdicts.jsonl"):
        anchors.mark_anchor(bare, "x")
    with pytest.raises(anchors.AnchorError, match="not an anchor"):
        anchors.verify_anchor(run)
    assert not any(anchors.is_anchor(p) for p in (run, partial, study, bare))


def test_verify_anchor_detects_changed_verdicts(env):
    run = evaluated(env, limit=3)
    anchors.mark_anchor(run, "x")
    with (run / "verdicts.jsonl").open("a") as fh:
        fh.write("\n")
    with pytest.raises(anchors.AnchorChangedError, match="verdicts.jsonl changed"):
        anchors.verify_anchor(run)
    with pytest.raises(anchors.AnchorChangedError):
        anchors.rejudge_anchor(run, "heuristic", out_dir=env)


def test_the_same_judge_shows_no_drift(env):
    run = evaluated(env)
    anchors.mark_anchor(run, "x")
    drift = anchors.measure_drift(run, "heuristic", D.packaged_thresholds_path(), out_dir=env)
    assert drift.mean_delta == 0 and drift.mean_delta_ci == (0.0, 0.0) and drift.wilcoxon_p is None
    assert drift.n_band_changes == 0 and drift.bland_altman.sd == 0 and drift.simulated is False
    assert drift.decision.decision == "hold"  # 12 turns: fewer segments than the packaged min_n_compared
    assert drift.decision.failed == ["min_n_compared"]
    wil = drift.decision.checks.set_index("threshold").loc["min_wilcoxon_p"]
    assert wil["passed"] is True and "no shift to test" in wil["note"]
    folder = anchors.write_drift_run(drift, env)
    assert {p.name for p in (folder / "figures").iterdir()} == set(anchors.DRIFT_FIGURES)
    m = RunManifest.read(folder)
    assert m.kind == "drift" and m.name == "drift" and m.status == "complete" and not m.warnings


# -- the CLI -----------------------------------------------------------------------------------------------
def test_cli_anchor_then_drift(env, capsys):
    run = evaluated(env, limit=40)
    assert main(["drift", str(run), "--judge", SIM, "--out", str(env)]) == 2
    assert "not an anchor" in capsys.readouterr().err
    assert main(["anchor", str(run), "--note", "cli test"]) == 0
    assert "anchor.json" in capsys.readouterr().out
    assert main(["anchor", str(run), "--note", "again"]) == 2
    assert "already an anchor" in capsys.readouterr().err

    out = env / "drift-out"
    assert main(["drift", str(run), "--judge", SIM, "--out", str(out), "--quiet", "--n-boot", "300"]) == 0
    captured = capsys.readouterr()
    assert "DECISION: " in captured.out and "SIMULATED" in captured.err
    folder = next(p for p in out.iterdir() if "_drift_" in p.name)
    record = json.loads((folder / "drift.json").read_text())
    assert record["simulated"] is True and record["decision"] in ("adopt", "hold")
    assert record["candidate_judge_id"].startswith("simulated(") and record["anchor_judge_id"] == build_judge("heuristic").judge_id
    assert record["decision_detail"]["thresholds"]["path"] == "axon_eval/drift/thresholds.yaml"
    assert f"DECISION: {record['decision']}" in captured.out
    for name in ("decision.csv", "dimensions.csv", "transitions.csv", "deltas.parquet", "drift.html", "manifest.json"):
        assert (folder / name).is_file(), name
    assert {p.name for p in (folder / "figures").iterdir()} == set(anchors.DRIFT_FIGURES)
    page = (folder / "drift.html").read_text()
    assert "SIMULATED candidate judge." in page and "Bland" in page

    # a stricter file of the user's own: the report completes (exit 0) and says hold
    strict = env / "strict.yaml"
    strict.write_text(yaml.safe_dump({"name": "strict", "confidence": 0.9,
                                      "thresholds": limits(max_abs_mean_delta=0.0, max_band_change_share=None)}))
    assert main(["drift", str(run), "--judge", SIM, "--out", str(env / "strict-out"), "--quiet",
                 "--thresholds", str(strict)]) == 0
    assert "DECISION: hold" in capsys.readouterr().out
    strict_folder = next(p for p in (env / "strict-out").iterdir() if "_drift_" in p.name)
    detail = json.loads((strict_folder / "drift.json").read_text())["decision_detail"]
    assert detail["thresholds"]["name"] == "strict" and "max_abs_mean_delta" in detail["failed"]


def test_cli_drift_usage_errors(env, capsys):
    run = evaluated(env, limit=3)
    anchors.mark_anchor(run, "x")
    assert main(["drift", str(run), "--judge", "nonsense(", "--out", str(env)]) == 2
    bad = env / "bad.yaml"
    bad.write_text("name: x\nconfidence: 0.95\nthresholds: {}\n")
    assert main(["drift", str(run), "--judge", "heuristic", "--thresholds", str(bad), "--out", str(env)]) == 2
    assert "missing threshold" in capsys.readouterr().err
    assert not [p for p in env.iterdir() if "_drift_" in p.name]
