"""``python -m axon_eval run NOTEBOOK`` prints the headline after the run folder: for an evaluation the
mean score with its interval and n and the band shares with theirs; for a study the headline figures its
``study.json`` records (:data:`axon_eval.runs.study.STUDY_HEADLINES`), each with its interval and n.

Through the production path (``main(["run", ...])`` with the smoke parameters); the oracles are the
run's own results (a plain mean, value counts, a cluster bootstrap written out here) and its
``study.json``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from axon_eval import runs
from axon_eval.cli import main
from axon_eval.runs.study import STUDY_HEADLINES, study_headlines

ROOT = Path(__file__).resolve().parents[1]
NUMBER = r"-?[0-9][0-9,]*(?:\.[0-9]+)?"


def run_cli(args: list[str], tmp_path: Path, monkeypatch, capsys) -> tuple[str, Path]:
    for var in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv(runs.RUNS_DIR_ENV, str(tmp_path))
    assert main(["run", *args, "--out", str(tmp_path), "--no-html", "--quiet"]) == 0
    out = capsys.readouterr().out
    folder = Path(re.search(r"^run folder: (.+)$", out, re.MULTILINE).group(1))
    return out, folder


def lines_after_run_folder(out: str) -> list[str]:
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("run folder: "))
    return lines[start + 1:]


@pytest.mark.slow
def test_run_prints_the_evaluation_headline(tmp_path, monkeypatch, capsys):
    out, folder = run_cli([str(ROOT / "notebooks" / "01_evaluate.ipynb"), "-f",
                           str(ROOT / "notebooks" / "params" / "smoke.yaml")], tmp_path, monkeypatch, capsys)
    first, second, *_ = lines_after_run_folder(out)
    results = pd.read_parquet(folder / "results")
    judged = results[results["status"] == "judged"]
    m = re.fullmatch(rf"headline:   mean score ({NUMBER}) \(({NUMBER}) to ({NUMBER})\), n = (\d+) segments"
                     rf"(?: in (\d+) turns)? \(95% intervals; turns resampled, seed 0, 2,000 resamples\)", first)
    assert m, first
    mean, lo, hi = (float(m.group(i)) for i in (1, 2, 3))
    assert int(m.group(4)) == len(judged) and mean == pytest.approx(judged["score"].mean(), abs=0.05)
    # the oracle: resample whole turns (multinomial counts from default_rng(0), turns in order of appearance)
    turns = pd.unique(judged["turn_id"])
    sums = judged.groupby("turn_id")["score"].sum().reindex(turns)
    sizes = judged.groupby("turn_id")["score"].size().reindex(turns)
    counts = np.random.default_rng(0).multinomial(len(turns), [1 / len(turns)] * len(turns), size=2000)
    want_lo, want_hi = np.quantile([(sums * c).sum() / (sizes * c).sum() for c in counts], [0.025, 0.975])
    assert lo == pytest.approx(want_lo, abs=0.051) and hi == pytest.approx(want_hi, abs=0.051)
    assert second.startswith(" " * 12 + "bands: good ")
    shares = judged["band"].value_counts(normalize=True)
    for band in ("good", "partial", "poor"):
        got = re.search(rf"{band} ([0-9.]+)% \(([0-9.]+)% to ([0-9.]+)%\)", second)
        assert got, (band, second)
        assert float(got.group(1)) == pytest.approx(100 * shares.get(band, 0.0), abs=0.51)
        assert float(got.group(2)) <= float(got.group(1)) <= float(got.group(3))


@pytest.mark.slow
def test_run_prints_a_study_headline(tmp_path, monkeypatch, capsys):
    out, folder = run_cli([str(ROOT / "notebooks" / "05_calibration.ipynb"), "-f",
                           str(ROOT / "notebooks" / "params" / "05_smoke.yaml")], tmp_path, monkeypatch, capsys)
    study = json.loads((folder / "study.json").read_text())
    kappa, gate = lines_after_run_folder(out)[:2]
    lo, hi = study["kappa_ci"]
    decimals = 3  # three significant digits on a kappa below 1
    assert study["constructed"] is True  # the smoke run's labels are the bundled constructed ones: said first
    assert kappa == (f"headline:   CONSTRUCTED Cohen's kappa, band vs labels: {study['kappa']:.{decimals}f} "
                     f"({lo:.{decimals}f} to {hi:.{decimals}f}), n = {study['n']} segments")
    assert gate == f"{'':12}CONSTRUCTED gate passed (kappa's lower bound >= 0.7): " \
                   f"{'yes' if study['gate_passed'] else 'no'}, n = {study['n']} segments"


def test_every_study_notebook_has_a_headline_and_each_reads_its_record():
    studies = sorted(p.stem for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb") if not p.stem.startswith("01"))
    missing = sorted(set(studies) - set(STUDY_HEADLINES))
    assert missing == [], f"study notebooks without a headline: add them to axon_eval.runs.study.STUDY_HEADLINES: {missing}"
    assert set(STUDY_HEADLINES) <= set(studies)
    assert all(1 <= len(h) <= 2 for h in STUDY_HEADLINES.values())
    record = {"study": "06_judge_drift", "simulated": True, "n": 40, "mean_delta": -0.5,
              "mean_delta_ci": [-1.25, 0.25], "decision": "hold"}
    assert study_headlines(record) == [
        "SIMULATED mean score difference, candidate - anchor, points: -0.50 (-1.25 to 0.25), n = 40 segments",
        "SIMULATED decision: hold, n = 40 segments"]
    assert study_headlines({"study": "08_reference_grading", "false_pass": {"heldout": 0, "overall": 2},
                            "n_responses": {"heldout": 8, "overall": 32}}) == [
        "false passes, held-out split: 0 of 8 responses", "false passes, all responses: 2 of 32 responses"]
    assert study_headlines({"study": "02_weight_sensitivity", "n_segments": 9,
                            "worst_case_abs_delta": {"0.01": 1.0, "0.05": 5.5}}) == [
        "largest |score change| within d = 0.05 of the nominal weights, points: 5.5 (exact, in-sample), n = 9 segments",
        "mean score change under the candidate rubric, points: not recorded"]
