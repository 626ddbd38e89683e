"""What `gate` and `compare --fail-on-regression` refuse to decide (exit 2, "broken", nothing written), and
what a human-corrected gate says beside its verdict.

Each case is a real run of the bundled sample judged by the offline judge, changed the way a user meets
the fault: an interrupted run, a failed calibration, a share given in percent, a run too small to gate,
too few labels. Two estimator laws are checked by seeded SIMULATED populations with a known truth.
"""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from axon_eval import runs
from axon_eval.cli import main
from axon_eval.cli.compare import EXIT_GATE_FAILED
from axon_eval.stats.calibration_record import CalibrationRecord
from axon_eval.stats.difference import corrected_differences
from axon_eval.stats.ppi import SMALL_SAMPLE_LABELLED, kish_effective_n, ppi_rule

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "data/turns/sample_turns.jsonl"
LABELS = ROOT / "data/turns/labels.csv"


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    out = tmp_path_factory.mktemp("gate-decisions")
    base = runs.evaluate(SAMPLE, "heuristic", "axon-v1", out_dir=out, name="base", progress=False, seed=0).run_dir
    harsher = runs.rescore(base, "axon-v1-faithcap", out_dir=out, name="harsher").run_dir
    return {"base": Path(base), "harsher": Path(harsher), "out": out}


def with_status(run_dir: Path, dest: Path, status: str, judged: int | None = None) -> Path:
    """A copy of a run whose manifest says ``status`` (as a killed or partial run's does)."""
    copy = dest / f"{run_dir.name}-{status}"
    shutil.copytree(run_dir, copy)
    m = json.loads((copy / "manifest.json").read_text())
    m["status"] = status
    if judged is not None:
        m["counts"]["unjudged"] = m["counts"]["segments"] - judged
        m["counts"]["judged"] = judged
    (copy / "manifest.json").write_text(json.dumps(m))
    return copy


def folders(parent: Path) -> set[str]:
    return {p.name for p in parent.iterdir()}


@pytest.mark.parametrize("status", ["interrupted", "running", "failed"])
def test_a_run_that_did_not_finish_is_never_gated(sample, tmp_path, capsys, status):
    broken = with_status(sample["base"], tmp_path, status, judged=24)
    assert main(["gate", str(broken), "--min-mean-score", "1", "--max-share-poor", "0.9"]) == 2
    err = capsys.readouterr().err
    assert status in err and "evaluate --resume" in err and "24 of 97 segments judged" in err
    before = folders(tmp_path)
    assert main(["compare", str(sample["base"]), str(broken), "--fail-on-regression", "--margin", "50",
                 "--out", str(tmp_path)]) == 2
    assert "evaluate --resume" in capsys.readouterr().err and folders(tmp_path) == before  # nothing written


def test_a_partial_run_is_gated_and_says_so_loudly(sample, tmp_path, capsys):
    partial = with_status(sample["base"], tmp_path, "partial", judged=90)
    assert main(["gate", str(partial), "--min-mean-score", "1"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("PARTIAL RUN") and "90 of 97 segments judged" in out


def test_a_run_too_small_to_gate_is_refused_with_the_reason(tmp_path, capsys):
    turns = [json.loads(line) for line in SAMPLE.read_text().splitlines() if line.strip()]
    small = tmp_path / "two.jsonl"
    small.write_text("".join(json.dumps(t) + "\n" for t in turns[:2]))
    run = runs.evaluate(small, "heuristic", out_dir=tmp_path / "runs", name="two", progress=False, cache=False)
    lowest = float(run.results["score"].min())
    # a percentile interval of two scores is [min, max]: the old gate passed --min-mean-score <lowest>
    assert main(["gate", str(run.run_dir), "--min-mean-score", f"{lowest}"]) == 2
    err = capsys.readouterr().err
    assert "holds 2 turn(s)" in err and "mean score 50" in err and "gate_error" in err


def test_a_mean_needs_more_turns_than_a_share(tmp_path, capsys):
    """30 turns: a share threshold decides (Clopper-Pearson holds at every n), a mean threshold or a mean
    among the gated figures is refused, naming the figure and its minimum."""
    from axon_eval.stats.gate_intervals import MIN_GATE_TURNS, MIN_MEAN_GATE_TURNS, least_turns

    assert least_turns("share poor") == MIN_GATE_TURNS < 30 < MIN_MEAN_GATE_TURNS == least_turns("mean score")
    assert least_turns("mean sql_quality") == MIN_MEAN_GATE_TURNS and least_turns("share poor", paired=True) == 30
    turns = [json.loads(line) for line in SAMPLE.read_text().splitlines() if line.strip()]
    thirty = tmp_path / "thirty.jsonl"
    thirty.write_text("".join(json.dumps(t) + "\n" for t in turns[:30]))
    run = runs.evaluate(thirty, "heuristic", out_dir=tmp_path / "runs", name="thirty", progress=False, cache=False)
    assert main(["gate", str(run.run_dir), "--max-share-poor", "0.99"]) == 0
    capsys.readouterr()
    for argv in (["--min-mean-score", "1"], ["--max-share-poor", "0.99", "--min", "mean sql_quality=1"]):
        assert main(["gate", str(run.run_dir), *argv]) == 2
        err = capsys.readouterr().err
        assert "holds 30 turn(s)" in err and f" {MIN_MEAN_GATE_TURNS}" in err and "share poor" not in err


@pytest.mark.parametrize("argv, message", [
    (["--margin-share-poor", "3"], "0.03 means 3 percentage points"),
    (["--margin", "-2"], "points >= 0"),
    (["--margin-share-good", "1.5"], "not a fraction in [0, 1]"),
])
def test_margins_are_checked_before_anything_runs_or_is_written(sample, tmp_path, capsys, argv, message):
    before = folders(tmp_path)
    code = main(["compare", str(sample["base"]), str(sample["harsher"]), "--fail-on-regression", *argv,
                 "--out", str(tmp_path)])
    out, err = capsys.readouterr()
    assert code == 2 and message in err
    assert out == "" and folders(tmp_path) == before


def calibration_for(run_dir: Path, path: Path, *, passed: bool) -> Path:
    m = runs.load_run(run_dir).manifest
    record = CalibrationRecord(judge_id=m.judge_id, judge_model=m.judge_model, judge_endpoint=m.judge_endpoint,
                               prompt_version=m.prompt_version, rubric_id=m.rubric_id, evidence={}, labels={},
                               labels_constructed=False, n=60, kappa=0.604, kappa_lo=0.437, kappa_hi=0.751,
                               confidence=0.95, threshold=0.7, gate_passed=passed,
                               gate_message="kappa 0.604 (0.437 to 0.751): lower bound below 0.7, not passed"
                               if not passed else "kappa lower bound at least 0.7: passed")
    path.write_text(json.dumps(record.to_json()))
    return path


def test_a_failed_calibration_is_refused_unless_allowed_and_then_said(sample, tmp_path, capsys):
    base = str(sample["base"])
    failed = calibration_for(sample["base"], tmp_path / "calibration.json", passed=False)
    args = ["gate", base, "--min-mean-score", "1", "--corrected", "--labels", str(LABELS), "--calibration", str(failed)]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "did not pass" in err and "--allow-uncalibrated" in err
    assert main([*args, "--allow-uncalibrated"]) == 0
    assert "UNCALIBRATED" in capsys.readouterr().out
    assert main(["gate", base, "--min-mean-score", "1", "--allow-uncalibrated"]) == 2  # read by --corrected only
    capsys.readouterr()
    passed = calibration_for(sample["base"], tmp_path / "ok.json", passed=True)
    assert main(["gate", base, "--min-mean-score", "1", "--corrected", "--labels", str(LABELS),
                 "--calibration", str(passed)]) == 0


def test_the_corrected_gate_names_its_interval_and_carries_its_simulated_coverage_everywhere(sample, tmp_path, capsys):
    twenty = tmp_path / "twenty.csv"
    twenty.write_text("".join(LABELS.read_text().splitlines(keepends=True)[:21]))  # the header and 20 labels
    xml_path = tmp_path / "gate.xml"
    code = main(["gate", str(sample["base"]), "--min-mean-score", "1", "--corrected", "--labels", str(twenty),
                 "--junit-xml", str(xml_path)])
    text = capsys.readouterr().out
    assert code == 0
    line = next(li for li in text.splitlines() if "PASS  mean score" in li)
    # fewer than 50 effective labels: a Student-t interval, named as such, with its SIMULATED coverage
    assert "Student-t, 19 df" in line and "normal" not in line and "SIMULATED coverage" in line
    case = ET.parse(xml_path).getroot().find("testsuite").find("testcase")
    assert "SIMULATED coverage" in case.find("system-out").text
    assert main(["gate", str(sample["base"]), "--min-mean-score", "1", "--corrected", "--labels", str(twenty),
                 "--format", "markdown"]) == 0
    md = capsys.readouterr().out
    assert "Student-t" in md and "mean score: SIMULATED coverage" in md
    # from 50 labels on the interval is the normal one, and says so
    assert main(["gate", str(sample["base"]), "--min-mean-score", "1", "--corrected", "--labels", str(LABELS)]) == 0
    line = next(li for li in capsys.readouterr().out.splitlines() if "PASS  mean score" in li)
    assert "normal" in line and "Student-t" not in line and "SIMULATED coverage" in line


def test_a_corrected_gate_on_a_handful_of_labels_is_not_informative(sample, tmp_path, capsys):
    few = tmp_path / "few.csv"
    few.write_text("".join(LABELS.read_text().splitlines(keepends=True)[:4]))  # the header and 3 labels
    assert main(["gate", str(sample["base"]), "--min-mean-score", "1", "--corrected", "--labels", str(few)]) == 2
    assert "not informative" in capsys.readouterr().err
    twelve = tmp_path / "twelve.csv"
    twelve.write_text("".join(LABELS.read_text().splitlines(keepends=True)[:13]))
    assert main(["gate", str(sample["base"]), "--max-share-poor", "0.9", "--corrected", "--labels", str(twelve)]) == 2
    assert "SIMULATED coverage" in capsys.readouterr().err


def test_an_identical_run_cannot_show_more_than_its_pairs_allow(sample, tmp_path, capsys):
    again = runs.evaluate(SAMPLE, "heuristic", "axon-v1", out_dir=tmp_path, name="again", progress=False, seed=0)
    args = ["compare", str(sample["base"]), str(again.run_dir), "--no-write", "--fail-on-regression"]
    assert main([*args, "--margin", "2"]) == EXIT_GATE_FAILED  # 97 equal pairs leave room for a 3.7% collapse
    assert main([*args, "--margin", "5", "--margin-share-poor", "0.05"]) == 0
    capsys.readouterr()


# -- estimators ------------------------------------------------------------------------------------------
def test_the_small_sample_rule_counts_effective_labels():
    w = np.r_[np.full(30, 1.0), np.full(30, 6.0)]  # 60 labels, unequal design weights
    assert kish_effective_n(w) < SMALL_SAMPLE_LABELLED <= len(w)
    assert ppi_rule(len(w), w).df is not None  # Student-t: 60 labels worth about 40
    assert ppi_rule(60).df is None  # 60 equal-weight labels: the normal interval


def two_pack_population(rng: np.random.Generator, n: int = 2000):
    """SIMULATED: paired questions whose inclusion probability depends on the question (an active design
    run on each agent with the same signal); the human difference grows where labelling is dense."""
    pi = np.where(np.arange(n) < n // 2, 0.45, 0.12)
    difference = np.where(pi > 0.3, -10.0, -2.0) + rng.normal(0, 4, n)
    human_a = rng.normal(70, 10, n)
    human_b = human_a + difference
    judge_a, judge_b = human_a + rng.normal(0, 3, n), human_b + 1.5 + rng.normal(0, 3, n)
    return pi, human_a, human_b, judge_a, judge_b


def frames(ids, judge, human, labelled):
    band = lambda s: np.where(s >= 80, "good", np.where(s >= 50, "partial", "poor"))  # noqa: E731
    j = pd.DataFrame({"segment_id": ids, "score": judge, "band": band(judge)})
    h = pd.DataFrame({"segment_id": ids[labelled], "score": human[labelled], "band": band(human[labelled])})
    return j, h


def test_two_independent_packs_weight_a_pair_by_both_inclusion_probabilities():
    rng = np.random.default_rng(7)
    pi, ha, hb, ja, jb = two_pack_population(rng)
    ids = np.array([f"q{i:04d}" for i in range(len(pi))])
    truth = float(np.mean(hb - ha))
    estimates, covered = [], 0
    reps = 60
    for _ in range(reps):
        la, lb = rng.random(len(pi)) < pi, rng.random(len(pi)) < pi  # each run's pack drawn on its own
        (fa, ha_f), (fb, hb_f) = frames(ids, ja, ha, la), frames(ids, jb, hb, lb)
        w = pd.Series(1 / pi, index=ids)
        row = corrected_differences(fa, fb, ha_f, hb_f, figures=("mean score",), weights_a=w, weights_b=w,
                                    same_pack=False).iloc[0]
        estimates.append(row["estimate"])
        covered += row["lo"] <= truth <= row["hi"]
    assert abs(np.mean(estimates) - truth) < 0.4  # equal numbers taken for one pack were 1 point off
    assert covered / reps >= 0.85
    # the pairs' weights must be said: equal numbers do not tell one pack from two
    with pytest.raises(ValueError, match="same_pack"):
        corrected_differences(fa, fb, ha_f, hb_f, figures=("mean score",), weights_a=w, weights_b=w)


def test_a_corrected_figure_on_fewer_than_five_labels_prints_not_informative(sample, tmp_path, capsys):
    few = tmp_path / "few.csv"
    few.write_text("".join(LABELS.read_text().splitlines(keepends=True)[:4]))
    base, harsher = str(sample["base"]), str(sample["harsher"])
    assert main(["compare", base, harsher, "--no-write", "--labels", str(few)]) == 0
    out = capsys.readouterr().out
    line = next(li for li in out.splitlines() if li.strip().startswith("mean score B - A, human-corrected"))
    assert "not informative (3 labelled, fewer than 5)" in line
    assert main(["compare", base, harsher, "--labels", str(few), "--fail-on-regression", "--corrected",
                 "--margin", "20", "--out", str(tmp_path / "cmp")]) == 2
    assert "not informative" in capsys.readouterr().err and not (tmp_path / "cmp").exists()
