"""bench/set_figures.py: the figures of the heuristic on a labelled set for any commit's judge code,
checked against scikit-learn's kappa and AUC and the package's own in-range figure (independent code)."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score, roc_auc_score

from axon_eval.bench.heuristic import measure
from axon_eval.bench.set_figures import set_figures
from axon_eval.evidence import load_turns
from axon_eval.judges.heuristic import HeuristicJudge
from axon_eval.rubric import Rubric
from axon_eval.view import build_views

ROOT = Path(__file__).resolve().parents[1]
TURNS, LABELS = ROOT / "data/turns/library_turns.jsonl", ROOT / "data/turns/library_labels.csv"


def test_figures_agree_with_sklearn_and_the_package():
    figs = set_figures(TURNS, LABELS)
    turns, _ = load_turns(TURNS)
    recs = {r.segment_id: r for r in (HeuristicJudge().judge(v) for v in build_views(turns, Rubric.default()))}
    with open(LABELS, encoding="utf-8") as fh:
        labels = list(csv.DictReader(fh))
    lv = [r["verdict"] for r in labels]
    jv = [recs[r["segment_id"]].verdict.verdict for r in labels]
    bd = [recs[r["segment_id"]].extra["heuristic"]["band"] for r in labels]
    assert figs["verdict_kappa"] == pytest.approx(round(cohen_kappa_score(lv, jv), 3))
    assert figs["band_kappa"] == pytest.approx(round(cohen_kappa_score(lv, bd), 3))
    y = np.array([v == "good" for v in lv], dtype=int)
    scores = np.array([recs[r["segment_id"]].extra["heuristic"]["score"] for r in labels], dtype=float)
    assert figs["auc_score"] == pytest.approx(round(roc_auc_score(y, scores), 3))
    assert figs["in_range"] == pytest.approx(round(measure(TURNS, LABELS)["in_range"], 3))
    assert figs["n"] == 45 and figs["defects"] + figs["correct"] == 45
    assert sum(c[2] for c in figs["by_class"].values()) == 45


def test_run_as_a_file_and_a_checkout_without_the_package_is_named(tmp_path):
    script = ROOT / "axon_eval" / "bench" / "set_figures.py"
    ok = subprocess.run([sys.executable, str(script), str(TURNS), str(LABELS), "--judge-from", str(ROOT)],
                        capture_output=True, text=True, cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["n"] == 45
    bad = subprocess.run([sys.executable, str(script), str(TURNS), str(LABELS), "--judge-from", str(tmp_path)],
                         capture_output=True, text=True, cwd=tmp_path)
    assert bad.returncode == 2 and f"{tmp_path}/axon_eval" in bad.stderr
