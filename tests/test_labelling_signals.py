"""The fitted offline judge's P(not good) as a labelling signal, on the bundled sample.

Oracles written here: the probabilities read straight from the run's ``verdicts.jsonl`` with :mod:`json`;
the binary entropy ``-p log2 p - (1 - p) log2 (1 - p)`` with :mod:`math`; the active design's inclusion
probabilities written out from their formula (floor at a tenth of the mean signal, half the budget spread
uniformly) for a budget small enough that none is capped at 1.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from axon_eval import runs
from axon_eval.calibration import labelling
from axon_eval.cli import main

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "data" / "turns" / "sample_turns.jsonl"


@pytest.fixture(scope="module")
def fitted_run(tmp_path_factory):
    return runs.evaluate(SAMPLE, "heuristic", "axon-v1", out_dir=tmp_path_factory.mktemp("runs"), name="fitted",
                         progress=False, cache=False)


@pytest.fixture(scope="module")
def rules_run(tmp_path_factory):
    return runs.evaluate(SAMPLE, "heuristic-rules", "axon-v1", out_dir=tmp_path_factory.mktemp("runs"), name="rules",
                         progress=False, cache=False)


def _p_from_verdicts(run) -> dict[str, float]:
    out = {}
    with (run.run_dir / "verdicts.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            record = json.loads(line)
            if record["verdict"] is not None:
                out[record["segment_id"]] = record["extra"]["heuristic_fitted"]["p_not_good"]
    return out


def test_p_not_good_and_its_entropy_are_signals(fitted_run, rules_run):
    expected = _p_from_verdicts(fitted_run)
    judged = labelling.judged_segments(fitted_run)["segment_id"]
    assert set(expected) == set(judged) and len(expected) == 97
    sig = labelling.load_signal("p_not_good", fitted_run)
    assert sig.values.reindex(judged).to_dict() == pytest.approx({s: expected[s] for s in judged}, rel=1e-12)
    assert "P(not good)" in sig.description and fitted_run.manifest.judge_id in sig.description
    ent = labelling.load_signal("p_not_good_entropy", fitted_run)
    for sid in judged:
        p = expected[sid]
        h = 0.0 if p in (0.0, 1.0) else -(p * math.log2(p) + (1 - p) * math.log2(1 - p))
        assert ent.values[sid] == pytest.approx(h, abs=1e-12)
    assert ent.values.max() <= 1.0 and ent.values.min() >= 0.0
    assert labelling.binary_entropy([0.0, 0.5, 1.0, np.nan]).tolist()[:3] == [0.0, 1.0, 0.0]
    # a run of another judge carries no P(not good); a companion run of the fitted judge does
    with pytest.raises(ValueError, match="heuristic-fitted"):
        labelling.load_signal("p_not_good", rules_run)
    companion = labelling.load_signal(f"p_not_good:{fitted_run.run_dir}", rules_run)
    assert companion.values.to_dict() == pytest.approx(sig.values.to_dict(), rel=1e-12)
    assert f"run {fitted_run.run_dir.name}" in companion.description
    with pytest.raises(ValueError, match="p_not_good"):
        labelling.load_signal("p_not_bad", fitted_run)


def test_active_design_and_plan_labels_take_p_not_good(fitted_run, rules_run, tmp_path, capsys):
    pack = tmp_path / "pack"
    assert main(["sample-for-labelling", str(rules_run.run_dir), "--design", "active", "--budget", "12", "--signal",
                 f"p_not_good:{fitted_run.run_dir}", "--seed", "3", "--out", str(pack)]) == 0
    design = json.loads((pack / "design.json").read_text())
    assert design["batches"][0]["signal"] == f"p_not_good:{fitted_run.run_dir}"
    assert "P(not good)" in design["batches"][0]["signal_note"]
    probs = pd.read_csv(pack / "probabilities.csv").set_index("segment_id")["inclusion_probability"]
    p = _p_from_verdicts(fitted_run)
    ids = sorted(p)
    s = np.array([p[i] for i in ids])
    floored = np.maximum(s, 0.1 * s.mean())
    pi = 12 * (0.5 / len(s) + 0.5 * floored / floored.sum())
    assert pi.max() < 1  # nothing capped: the formula as written is the design
    assert np.allclose(probs.reindex(ids).to_numpy(), pi, rtol=1e-12)
    # the sheet stays blind to the signal
    assert (pack / "sheet.csv").read_text().splitlines()[0] == ",".join(labelling.SHEET_COLUMNS)

    capsys.readouterr()
    assert main(["plan-labels", str(fitted_run.run_dir), "--figure", "mean_score", "--half-width", "6",
                 "--correlation", "0.8", "--signal", "p_not_good_entropy"]) == 0
    out = capsys.readouterr().out
    assert "active" in out and "binary entropy of P(not good)" in out
    assert main(["plan-labels", str(rules_run.run_dir), "--half-width", "6", "--correlation", "0.8", "--signal",
                 "p_not_good"]) == 2
    assert "heuristic-fitted" in capsys.readouterr().err
