"""A study's headline says CONSTRUCTED on constructed labels, as a simulated study's says SIMULATED.

The record is written by :func:`axon_eval.runs.study.write_study` and read back through
:func:`~axon_eval.runs.study.study_headlines` and :func:`~axon_eval.runs.study.format_study` (what notebooks
05, 07 and 09 print as their headline, and what ``python -m axon_eval run`` prints after a study's folder).
"""

from __future__ import annotations

import json

import pytest

from axon_eval.runs.study import disclosure_markers, format_study, study_headlines, write_study

CALIBRATION = {"judge_id": "heuristic", "n": 97, "kappa": 0.41, "kappa_ci": [0.28, 0.55], "gate_passed": False}


@pytest.mark.parametrize(("simulated", "constructed", "markers"), [
    (False, False, []), (True, False, ["SIMULATED"]), (False, True, ["CONSTRUCTED"]),
    (True, True, ["SIMULATED", "CONSTRUCTED"])])
def test_every_headline_line_carries_the_markers_of_its_record(tmp_path, simulated, constructed, markers):
    path = write_study(tmp_path, CALIBRATION, study="05_calibration", simulated=simulated, constructed=constructed)
    record = json.loads(path.read_text())
    assert record["constructed"] is constructed and record["simulated"] is simulated
    assert list(record)[:4] == ["study", "simulated", "constructed", "source_run"]
    assert disclosure_markers(record) == markers
    lines = study_headlines(record)
    assert len(lines) == 2
    prefix = "".join(f"{m} " for m in markers)
    for line in lines:
        assert line.startswith(prefix) and (markers or not line.startswith(("SIMULATED", "CONSTRUCTED")))
    first = format_study(path)[0]
    assert first == "study 05_calibration" + (f" ({', '.join(markers)})" if markers else "")
    warnings = json.loads((tmp_path / "manifest.json").read_text())["warnings"]
    assert any(w.startswith("CONSTRUCTED") for w in warnings) is constructed


def test_the_older_labels_constructed_key_is_read_too():
    record = {"study": "09_corrected_estimates", "simulated": False, "labels_constructed": True,
              "naive": {"mean score": {"estimate": 77.5, "interval": [72.0, 82.4], "n": 97}},
              "ppi": {"mean score": {"estimate": 71.9, "interval": [67.1, 76.6]}}, "n_labelled": 30}
    assert all(line.startswith("CONSTRUCTED mean score") for line in study_headlines(record))


def test_a_payload_cannot_contradict_the_constructed_flag(tmp_path):
    with pytest.raises(ValueError, match="constructed"):
        write_study(tmp_path, {**CALIBRATION, "constructed": False}, study="05_calibration", simulated=False,
                    constructed=True)


def test_a_study_that_says_nothing_about_its_labels_keeps_its_record_as_before(tmp_path):
    record = json.loads(write_study(tmp_path, CALIBRATION, study="05_calibration", simulated=False).read_text())
    assert "constructed" not in record and not study_headlines(record)[0].startswith("CONSTRUCTED")
