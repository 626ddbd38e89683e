"""Gates a CI job can wait on: ``gate`` (thresholds) and ``compare --fail-on-regression``
(non-inferiority), decided on interval bounds, with distinct exit codes and CI outputs.

Known answers are written out by hand: which bound each rule reads, and the decision it implies. The
CLI is exercised on real runs of the bundled sample with the offline heuristic judge, and the example
GitHub Actions workflow's commands are run as written, with the heuristic judge in place of the paid one.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pandas as pd
import pytest
import yaml

from axon_eval import runs
from axon_eval.cli import main
from axon_eval.cli.compare import EXIT_GATE_FAILED
from axon_eval.stats.calibration_record import CalibrationRecord
from axon_eval.stats.gate import non_inferiority_gate, one_sided_level, threshold_gate
from axon_eval.stats.gate_intervals import gate_table

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "data/turns/sample_turns.jsonl"
LABELS = ROOT / "data/turns/labels.csv"


def intervals(**rows: tuple[float, float, float]) -> pd.DataFrame:
    return pd.DataFrame([{"figure": f, "estimate": e, "lo": lo, "hi": hi, "method": "test", "n": 100}
                         for f, (e, lo, hi) in rows.items()])


def test_a_minimum_reads_the_lower_bound_and_a_maximum_the_upper_bound():
    table = intervals(**{"mean score": (78.0, 74.0, 82.0), "share poor": (0.08, 0.05, 0.12)})
    # the point 78 clears 75, but the lower bound 74 does not: fail
    d = threshold_gate(table, minimums={"mean score": 75}, maximums={"share poor": 0.15})
    assert [(c.figure, c.bound, c.passed) for c in d.checks] == [("mean score", "lower", False),
                                                                 ("share poor", "upper", True)]
    assert not d.passed and d.failed[0].figure == "mean score"
    # the point 0.08 is under 0.10, but the upper bound 0.12 is not: fail
    d = threshold_gate(table, minimums={"mean score": 74}, maximums={"share poor": 0.10})
    assert [c.passed for c in d.checks] == [True, False]
    assert threshold_gate(table, minimums={"mean score": 74}, maximums={"share poor": 0.12}).passed
    assert one_sided_level(0.95) == pytest.approx(0.975) and d.one_sided == pytest.approx(0.975)
    with pytest.raises(ValueError, match="no figure 'mean bogus'"):
        threshold_gate(table, minimums={"mean bogus": 1})
    assert not threshold_gate(table).passed  # nothing asked: nothing passed


def test_an_interval_that_cannot_be_computed_fails_its_check():
    table = intervals(**{"mean score": (78.0, float("nan"), float("nan"))})
    d = threshold_gate(table, minimums={"mean score": 10})
    assert not d.passed and "no interval" in d.checks[0].reason


def test_non_inferiority_reads_the_bound_on_the_worse_side():
    diff = intervals(**{"mean score": (-0.5, -2.4, 1.4), "share poor": (0.01, -0.02, 0.035),
                        "share good": (0.0, -0.04, 0.04)})
    d = non_inferiority_gate(diff, {"mean score": 2, "share poor": 0.03, "share good": 0.05})
    by = {c.figure: c for c in d.checks}
    assert by["mean score"].bound == "lower" and not by["mean score"].passed  # -2.4 < -2
    assert by["share poor"].bound == "upper" and not by["share poor"].passed  # +0.035 > +0.03
    assert by["share good"].bound == "lower" and by["share good"].passed  # -0.04 >= -0.05
    assert non_inferiority_gate(diff, {"mean score": 2.5}).passed
    with pytest.raises(ValueError, match="margin"):
        non_inferiority_gate(diff, {"mean score": -1})


@pytest.fixture(scope="module")
def sample_runs(tmp_path_factory):
    out = tmp_path_factory.mktemp("gate-runs")
    base = runs.evaluate(SAMPLE, "heuristic", "axon-v1", out_dir=out, name="base", progress=False, seed=0).run_dir
    again = runs.evaluate(SAMPLE, "heuristic", "axon-v1", out_dir=out, name="again", progress=False, seed=0).run_dir
    harsher = runs.rescore(base, "axon-v1-faithcap", out_dir=out, name="harsher").run_dir
    noisy = runs.evaluate(SAMPLE, "noise(heuristic, sd=1, seed=0)", "axon-v1", out_dir=out, name="noisy",
                          progress=False, seed=0).run_dir
    return {"base": base, "again": again, "harsher": harsher, "noisy": noisy, "out": out}


def test_gate_prints_each_figure_with_its_interval_and_bound_and_exits_by_the_decision(sample_runs, capsys):
    base = sample_runs["base"]
    table = gate_table(runs.load_run(base).results).set_index("figure")
    lo, hi_poor = table.loc["mean score", "lo"], table.loc["share poor", "hi"]
    assert main(["gate", str(base), "--min-mean-score", f"{lo - 0.5:.2f}", "--max-share-poor", f"{hi_poor + 0.01:.3f}",
                 "--n-boot", "500"]) == 0
    out = capsys.readouterr().out
    from axon_eval.display import fmt_number

    assert "gate PASSED" in out and f"lower 97.5% bound {fmt_number(lo)} >= " in out and "one-sided 97.5% test" in out
    assert "intersection-union" in out
    # a threshold between the lower bound and the point estimate fails: the point is never enough
    between = (lo + table.loc["mean score", "estimate"]) / 2
    assert main(["gate", str(base), "--min-mean-score", f"{between:.2f}", "--n-boot", "500"]) == EXIT_GATE_FAILED
    assert "FAIL  mean score" in capsys.readouterr().out


def test_gate_usage_errors_are_not_gate_failures(sample_runs, capsys):
    base = str(sample_runs["base"])
    assert main(["gate", base]) == 2  # nothing to gate
    assert "nothing to gate" in capsys.readouterr().err
    assert main(["gate", base, "--max-share-poor", "10"]) == 2  # 10 is not a fraction
    assert "not a fraction" in capsys.readouterr().err
    assert main(["gate", str(sample_runs["out"] / "no-such-run"), "--min-mean-score", "1"]) == 2
    assert main(["gate", base, "--min-mean-score", "1", "--corrected"]) == 2
    assert "--corrected needs --labels" in capsys.readouterr().err


def test_gate_markdown_and_junit_xml_carry_one_case_per_figure(sample_runs, tmp_path, capsys):
    xml_path = tmp_path / "ci" / "gate.xml"
    code = main(["gate", str(sample_runs["base"]), "--min-mean-score", "99", "--max-share-poor", "0.9",
                 "--min", "mean intent_understood=1", "--format", "markdown", "--junit-xml", str(xml_path),
                 "--n-boot", "300"])
    assert code == EXIT_GATE_FAILED
    md = capsys.readouterr().out
    assert md.startswith("### :x: gate FAILED") and "| figure | estimate (interval) |" in md
    assert md.count("| 97 |") == 3  # every gated figure carries its n (the sample's 97 segments)
    assert sum(line.startswith("| ") for line in md.splitlines()) == 1 + 3  # the header row and three figures
    suite = ET.parse(xml_path).getroot().find("testsuite")
    cases = suite.findall("testcase")
    assert suite.get("tests") == "3" and suite.get("failures") == "1"
    assert sorted(c.get("name") for c in cases) == ["max share poor", "min mean intent_understood", "min mean score"]
    assert [c.get("name") for c in cases if c.find("failure") is not None] == ["min mean score"]


def test_a_simulated_judge_is_refused_unless_allowed_and_then_said(sample_runs, capsys):
    noisy = str(sample_runs["noisy"])
    assert main(["gate", noisy, "--min-mean-score", "1", "--n-boot", "200"]) == 2
    assert "SIMULATED" in capsys.readouterr().err
    assert main(["gate", noisy, "--min-mean-score", "1", "--n-boot", "200", "--allow-simulated"]) == 0
    assert capsys.readouterr().out.startswith("SIMULATED -- judge noise(")
    assert main(["compare", str(sample_runs["base"]), noisy, "--no-write", "--n-boot", "200",
                 "--fail-on-regression", "--margin", "50"]) == 2
    capsys.readouterr()
    # a plain comparison is never refused, but says SIMULATED on its first line and in compare.html
    assert main(["compare", str(sample_runs["base"]), noisy, "--n-boot", "200", "--out", str(sample_runs["out"])]) == 0
    out = capsys.readouterr().out
    assert out.startswith("B: SIMULATED -- judge noise(")
    folder = Path(out.strip().splitlines()[-1].split("comparison folder: ")[1].split(" (")[0])
    assert "SIMULATED" in (folder / "compare.html").read_text()
    assert json.loads((folder / "comparison.json").read_text())["simulated"] is True


def test_compare_fails_on_a_regression_beyond_the_margin_and_passes_an_identical_run(sample_runs, capsys):
    base, again, harsher = (str(sample_runs[k]) for k in ("base", "again", "harsher"))
    args = ["--no-write", "--n-boot", "500", "--fail-on-regression"]
    # an identical run: every pair equal, so only the score's range bounds the difference; 97 pairs
    # cannot exclude a 3.7% chance of a 100-point collapse (a 2-point margin), but can exclude 4 points
    assert main(["compare", base, again, *args, "--margin", "2"]) == EXIT_GATE_FAILED
    assert "every value is 0" in capsys.readouterr().out
    assert main(["compare", base, again, *args, "--margin", "5", "--margin-share-poor", "0.05"]) == 0
    out = capsys.readouterr().out
    assert "gate PASSED" in out and "the difference B - A over paired units" in out
    # the stricter rubric drops the mean by about 10 points: beyond a 2-point margin
    assert main(["compare", base, harsher, *args, "--margin", "2"]) == EXIT_GATE_FAILED
    assert "FAIL  mean score (B - A)" in capsys.readouterr().out
    assert main(["compare", base, harsher, "--no-write", "--margin", "2"]) == 2  # a margin without the gate
    assert main(["compare", base, harsher, "--no-write", "--fail-on-regression"]) == 2  # a gate without a margin


def test_compare_with_labels_reports_the_corrected_difference_and_can_gate_on_it(sample_runs, capsys):
    base, harsher = str(sample_runs["base"]), str(sample_runs["harsher"])
    code = main(["compare", base, harsher, "--no-write", "--n-boot", "300", "--labels", str(LABELS),
                 "--fail-on-regression", "--corrected", "--margin", "20"])
    out = capsys.readouterr().out
    assert code == 0 and "human-corrected differences (PPI++)" in out and "CONSTRUCTED" in out
    assert "human-corrected (PPI++, paired) difference B - A" in out


def stale_record(run_dir: Path, path: Path) -> Path:
    m = runs.load_run(run_dir).manifest
    record = CalibrationRecord(judge_id="anthropic:claude-sonnet-4-5@judge_v1,t=0", judge_model="claude-sonnet-4-5",
                               judge_endpoint=None, prompt_version="judge_v1", rubric_id=m.rubric_id, evidence={},
                               labels={}, labels_constructed=False, n=60, kappa=0.8, kappa_lo=0.72, kappa_hi=0.88,
                               confidence=0.95, threshold=0.7, gate_passed=True, gate_message="gate PASSED")
    path.write_text(json.dumps(record.to_json()))
    return path


def test_a_corrected_gate_refuses_a_stale_calibration(sample_runs, tmp_path, capsys):
    base = sample_runs["base"]
    calibration = stale_record(base, tmp_path / "calibration.json")
    code = main(["gate", str(base), "--min-mean-score", "1", "--corrected", "--labels", str(LABELS),
                 "--calibration", str(calibration), "--n-boot", "200"])
    assert code == 2 and "calibration stale" in capsys.readouterr().err
    assert main(["gate", str(base), "--min-mean-score", "1", "--corrected", "--labels", str(LABELS),
                 "--n-boot", "200"]) == 0
    assert "human-corrected (PPI++)" in capsys.readouterr().out


def test_the_example_workflow_runs_offline_with_the_heuristic_judge(tmp_path):
    """The `run:` steps of docs/examples/github-actions-gate.yml, as written, with the paid judge
    swapped for the heuristic one (the install step is what this checkout already did)."""
    workflow = yaml.safe_load((ROOT / "docs/examples/github-actions-gate.yml").read_text())
    job = workflow["jobs"]["gate"]
    steps = [s for s in job["steps"] if "run" in s and s.get("name") != "install"]
    assert len(steps) == 2
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "python"  # `python` on PATH is this environment's interpreter
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    shim.chmod(0o755)
    work = tmp_path / "checkout"
    (work / "data" / "turns").mkdir(parents=True)
    shutil.copy(SAMPLE, work / "data" / "turns" / SAMPLE.name)
    summary = tmp_path / "summary.md"
    env = {**os.environ, **{k: str(v) for k, v in job["env"].items() if "secrets" not in str(v)},
           "AXON_JUDGE": "heuristic", "GITHUB_STEP_SUMMARY": str(summary),
           "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    env.pop("ANTHROPIC_API_KEY", None)
    for step in steps:
        done = subprocess.run(["bash", "-eo", "pipefail", "-c", step["run"]], cwd=work, env=env,
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, (step["name"], done.stdout[-2000:], done.stderr[-2000:])
    assert summary.read_text().startswith("### :white_check_mark: gate PASSED")
    assert ET.parse(work / "gate-results.xml").getroot().find("testsuite").get("failures") == "0"


def test_two_agent_versions_are_paired_by_the_question_they_answered(tmp_path, capsys):
    """Version B answered the same questions in other turns (other ids, another evidence file): paired by
    ``question`` they compare; by segment id they are refused, with the way out named."""
    turns = [json.loads(line) for line in SAMPLE.read_text().splitlines() if line.strip()]
    seen, kept = set(), []
    for t in turns:
        if t["question"] not in seen and "?" in t["question"] and t["question"].count("?") == 1:
            seen.add(t["question"])
            kept.append(t)
    a_file, b_file = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a_file.write_text("".join(json.dumps(t) + "\n" for t in kept))
    b_file.write_text("".join(json.dumps({**t, "turn_id": t["turn_id"] + "-v2"}) + "\n" for t in reversed(kept)))
    a = runs.evaluate(a_file, "heuristic", out_dir=tmp_path / "runs", name="a", progress=False, cache=False)
    b = runs.evaluate(b_file, "heuristic", out_dir=tmp_path / "runs", name="b", progress=False, cache=False)
    single = a.results.groupby("turn_id")["segment_id"].transform("count") == 1
    assert single.all(), "the kept turns are unbundled: one question, one segment"
    assert main(["compare", str(a.run_dir), str(b.run_dir), "--no-write", "--n-boot", "200"]) == 2
    assert "--pair-by question" in capsys.readouterr().err
    assert main(["compare", str(a.run_dir), str(b.run_dir), "--no-write", "--n-boot", "200",
                 "--pair-by", "question"]) == 0
    out = capsys.readouterr().out
    assert f"({len(kept)} paired segments, paired by question)" in out
    assert "no difference detected" in out and "mean score: 0 (0 to 0)" in out


def test_a_regression_gate_on_runs_sharing_fewer_than_two_segments_is_a_usage_error(sample_runs, tmp_path, capsys):
    one = runs.evaluate(SAMPLE, "heuristic", out_dir=tmp_path, name="one", progress=False, cache=False, limit=1)
    assert main(["compare", str(sample_runs["base"]), str(one.run_dir), "--no-write", "--fail-on-regression",
                 "--margin", "2"]) == 2
    assert "needs paired segments" in capsys.readouterr().err
