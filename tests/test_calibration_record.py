"""The calibration record: the gate on kappa's lower bound, staleness against a run's
manifest, the claim verdict, calibration.json round trip, and study 09's glue withholding corrected figures
when the record is stale."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest

from axon_eval.runs.calibration import latest_calibration, read_calibration, write_calibration
from axon_eval.stats.agreement import Estimate
from axon_eval.stats.calibration_record import (
    NO_RECORD_REASON,
    UNCHECKED_REASON,
    calibration_record,
    calibration_status,
    claims_verdict,
    staleness,
)

MANIFEST = {"judge_id": "anthropic:claude-x", "judge_model": "claude-x", "judge_endpoint": "https://api.example.com",
            "prompt_version": "judge-v3+abc", "rubric_id": "2d23bbec81d5",
            "input_files": {"data/turns/week1.jsonl": "a" * 64}}


def fake_calibration(value: float, lo: float, hi: float, n: int = 80, constructed: bool = False) -> SimpleNamespace:
    kappa = Estimate(name="kappa", value=value, ci=(lo, hi), method="BCa", n=n, n_boot=2000, seed=0, confidence=0.95)
    return SimpleNamespace(kappa=kappa, n=n, constructed=constructed, judge_id=None)


def test_gate_is_on_the_lower_bound_not_the_point_value():
    assert not calibration_record(fake_calibration(0.82, 0.69, 0.91), MANIFEST).gate_passed
    assert calibration_record(fake_calibration(0.82, 0.70, 0.91), MANIFEST).gate_passed
    assert not calibration_record(fake_calibration(float("nan"), float("nan"), float("nan")), MANIFEST).gate_passed


def test_record_names_the_judge_rubric_and_evidence():
    rec = calibration_record(fake_calibration(0.8, 0.72, 0.88), MANIFEST, labels={"labels.csv": "b" * 64})
    assert rec.judge_endpoint == "https://api.example.com" and rec.prompt_version == "judge-v3+abc"
    assert rec.rubric_id == "2d23bbec81d5" and rec.evidence == MANIFEST["input_files"]
    assert rec.labels == {"labels.csv": "b" * 64} and rec.n == 80 and rec.to_json()["kappa_ci"] == [0.72, 0.88]


def test_staleness_names_every_difference_and_nothing_else():
    rec = calibration_record(fake_calibration(0.8, 0.72, 0.88), MANIFEST)
    assert staleness(rec, MANIFEST) == []
    assert staleness(rec, {**MANIFEST, "input_files": {"other.jsonl": "c" * 64}}) == []  # new evidence is fine
    moved = {**MANIFEST, "judge_endpoint": "http://localhost:8000", "rubric_id": "ffffffffffff"}
    assert staleness(rec, moved) == [
        "calibration stale: judge endpoint differs (record https://api.example.com, run http://localhost:8000)",
        "calibration stale: rubric id differs (record 2d23bbec81d5, run ffffffffffff)"]
    assert staleness(rec, {**MANIFEST, "prompt_version": "judge-v4"})[0].startswith("calibration stale: judge prompt")


def test_claims_need_a_current_passed_record_on_human_labels():
    passed = calibration_record(fake_calibration(0.8, 0.72, 0.88), MANIFEST)
    assert claims_verdict(passed, [])[0] is True
    assert claims_verdict(passed, ["calibration stale: x"]) == (False, "comparative claims NOT allowed: calibration stale: x")
    assert claims_verdict(None, [])[0] is False
    assert claims_verdict(replace(passed, labels_constructed=True), [])[0] is False
    failed = calibration_record(fake_calibration(0.8, 0.6, 0.88), MANIFEST)
    allowed, text = claims_verdict(failed, [])
    assert not allowed and "lower bound 0.600" in text


def test_calibration_status_allows_only_a_current_passed_record_on_human_labels():
    """The helper a gate calls: every reason is listed, and allowed is true exactly when none is."""
    passed = calibration_record(fake_calibration(0.8, 0.72, 0.88), MANIFEST)
    assert calibration_status(passed, MANIFEST) == (True, [])
    assert calibration_status(passed.to_json(), MANIFEST) == (True, [])  # calibration.json's mapping
    assert calibration_status(None, MANIFEST) == (False, [NO_RECORD_REASON])
    assert calibration_status(passed, None) == (False, [UNCHECKED_REASON])
    other = {**MANIFEST, "judge_id": "openai:gpt-x", "rubric_id": "ffffffffffff"}
    allowed, reasons = calibration_status(passed, other)
    assert not allowed and reasons == staleness(passed, other) and len(reasons) == 2
    failed = calibration_record(fake_calibration(0.8, 0.6, 0.88, constructed=True), MANIFEST)
    allowed, reasons = calibration_status(failed, other)
    assert not allowed and reasons[:2] == staleness(failed, other) and "lower bound 0.600" in reasons[2]
    constructed = replace(passed, labels_constructed=True)
    allowed, reasons = calibration_status(constructed, MANIFEST)
    assert not allowed and len(reasons) == 1 and "not people's" in reasons[0]


def test_calibration_json_round_trip_and_latest(tmp_path: Path):
    rec = calibration_record(fake_calibration(0.8, 0.72, 0.88), MANIFEST, source_run="runs/x")
    older = tmp_path / "2026-01-01T000000Z_05-calibration"
    newer = tmp_path / "2026-02-01T000000Z_05-calibration"
    other = tmp_path / "2026-03-01T000000Z_09-corrected-estimates"
    for folder in (older, newer, other):
        folder.mkdir()
    write_calibration(older, replace(rec, n=10))
    path = write_calibration(newer, rec)
    write_calibration(other, replace(rec, n=99))  # not a study-05 folder: ignored
    assert latest_calibration(tmp_path) == path
    assert read_calibration(newer) == rec
    assert latest_calibration(tmp_path / "missing") is None
    (older / "calibration.json").write_text('{"judge_id": "x"}')
    with pytest.raises(ValueError, match="not a calibration record"):
        read_calibration(older)


@pytest.fixture(scope="module")
def sample_run(tmp_path_factory):
    from axon_eval import runs

    root = Path(__file__).resolve().parents[1]
    made = runs.evaluate(root / "data/turns/sample_turns.jsonl", "heuristic", "axon-v1",
                         out_dir=tmp_path_factory.mktemp("runs"), name="t", progress=False, seed=0)
    return runs.load_run(made.run_dir), root


def test_stale_record_withholds_corrected_figures(sample_run):
    from axon_eval.calibration import labelling
    from axon_eval.stats.estimates import corrected_study

    run, root = sample_run
    labels = labelling.labels_from_constructed(root / "data/turns/labels.csv", seed=0)
    manifest = run.manifest.model_dump()
    rec = calibration_record(fake_calibration(0.8, 0.72, 0.88), manifest)
    ids = sorted(run.results["segment_id"])[:40]
    fresh = corrected_study(run.results, labels, labelled_ids=ids, calibration=rec, manifest=manifest, n_boot=50)
    assert fresh.corrected is not None and fresh.claims_allowed and fresh.to_json()["calibration"]["stale"] is False
    assert fresh.n_labelled == 40 and fresh.n_unlabelled == len(run.results) - 40
    stale = corrected_study(run.results, labels, labelled_ids=ids, calibration=replace(rec, rubric_id="other"),
                            manifest=manifest, n_boot=50)
    j = stale.to_json()
    assert stale.corrected is None and j["ppi"] == {} and j["labels_only"] == {} and not j["claims_allowed"]
    assert j["calibration"]["stale"] is True and j["corrected_withheld"].startswith("no corrected figures: calibration stale: rubric id")
    assert j["naive"]["mean score"]["estimate"] == pytest.approx(run.results["score"].mean())


def test_a_record_without_a_manifest_allows_no_claim_and_says_why(sample_run):
    """A record for another judge and rubric, given without the run's manifest, cannot be checked: no
    comparative claim, and the sentence says the record was not checked."""
    from axon_eval.calibration import labelling
    from axon_eval.stats.estimates import corrected_study

    run, root = sample_run
    labels = labelling.labels_from_constructed(root / "data/turns/labels.csv", seed=0)
    elsewhere = {**MANIFEST, "judge_id": "openai:other-judge", "rubric_id": "000000000000"}
    rec = calibration_record(fake_calibration(0.9, 0.8, 0.95), elsewhere)  # gate passed, human labels
    ids = sorted(run.results["segment_id"])[:40]
    study = corrected_study(run.results, labels, labelled_ids=ids, calibration=rec, manifest=None, n_boot=50)
    j = study.to_json()
    assert study.claims_allowed is False and j["claims_allowed"] is False
    assert study.claims_text == f"comparative claims NOT allowed: {UNCHECKED_REASON}"
    assert any("could not be checked" in n for n in study.notes)
    # against the run's own manifest the same record is stale, and says what differs
    checked = corrected_study(run.results, labels, labelled_ids=ids, calibration=rec,
                              manifest=run.manifest.model_dump(), n_boot=50)
    assert not checked.claims_allowed and "calibration stale: judge id differs" in checked.claims_text
