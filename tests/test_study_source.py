"""Studies share one source run: a study given no source reuses the newest complete evaluation of the same
evidence (SHA-256), judge id and rubric id under the runs root, read from the manifests alone
(:func:`axon_eval.runs.catalog.find_source_run`), and evaluates only when there is none.

The fast tests make small runs with ``runs.evaluate`` and check each rule of the lookup against the
manifests written here; the slow one runs two study notebooks in a row under one runs root, the way
``make studies`` does, and counts the evaluation folders.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from axon_eval import runs
from axon_eval.rubric import Rubric
from axon_eval.runs.catalog import find_source_run
from axon_eval.runs.study import study_source
from tests.notebook_checks import run_smoke

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "data" / "turns" / "sample_turns.jsonl"
HEURISTIC = runs.resolve_judge("heuristic", Rubric.default()).judge_id
AXON_V1 = Rubric.default().id


@pytest.fixture
def evidence(tmp_path) -> Path:
    """The first six turns of the sample as their own evidence file (a small, fast source)."""
    path = tmp_path / "six.jsonl"
    path.write_text("".join(SAMPLE.read_text().splitlines(keepends=True)[:6]))
    return path


def evaluation_folders(root: Path) -> list[Path]:
    return sorted(p for p in root.iterdir() if (p / "manifest.json").is_file()
                  and json.loads((p / "manifest.json").read_text())["kind"] == "evaluate")


def test_find_source_run_reads_the_manifests_rules(tmp_path, evidence):
    root = tmp_path / "runs"
    assert find_source_run(evidence, HEURISTIC, AXON_V1, root) is None  # no runs root yet
    limited = runs.evaluate(evidence, "heuristic", "axon-v1", out_dir=root, name="limited", limit=2, progress=False)
    capped = runs.evaluate(evidence, "heuristic", "axon-v1-faithcap", out_dir=root, name="faithcap", progress=False)
    assert limited.manifest.status == capped.manifest.status == "complete"
    assert find_source_run(evidence, HEURISTIC, AXON_V1, root) is None  # a limited run, another rubric: not sources
    assert find_source_run(evidence, HEURISTIC, Rubric.packaged("axon-v1-faithcap").id, root) == capped.run_dir

    full = runs.evaluate(evidence, "heuristic", "axon-v1", out_dir=root, name="full", progress=False)
    assert find_source_run(evidence, HEURISTIC, AXON_V1, root) == full.run_dir
    assert find_source_run(evidence, "another-judge", AXON_V1, root) is None
    assert find_source_run(SAMPLE, HEURISTIC, AXON_V1, root) is None  # other evidence: another SHA-256

    manifest = json.loads((full.run_dir / "manifest.json").read_text())
    (full.run_dir / "manifest.json").write_text(json.dumps({**manifest, "status": "partial"}))
    assert find_source_run(evidence, HEURISTIC, AXON_V1, root) is None  # only a complete run is reused
    (full.run_dir / "manifest.json").write_text(json.dumps(manifest))
    newer = runs.evaluate(evidence, "heuristic", "axon-v1", out_dir=root, name="newer", progress=False)
    assert find_source_run(evidence, HEURISTIC, AXON_V1, root) == newer.run_dir  # the newest of two
    (newer.run_dir / "manifest.json").write_text("{not json")
    assert find_source_run(evidence, HEURISTIC, AXON_V1, root) == full.run_dir  # unreadable: skipped


def test_study_source_evaluates_once_then_reuses(tmp_path, evidence):
    root = tmp_path / "runs"
    first = study_source(evidence, "heuristic", "axon-v1", root=root, name="first", params={"for_study": "a"})
    assert not first.reused and first.evaluation is not None and "evaluated here" in first.sentence
    second = study_source(evidence, "heuristic", Rubric.default(), root=root, name="second")
    assert second.reused and second.evaluation is None and second.run_dir == first.run_dir
    assert "reused" in second.sentence and str(first.run_dir) in second.sentence
    assert evaluation_folders(root) == [first.run_dir]


@pytest.mark.slow
def test_two_studies_in_a_row_share_one_source_evaluation(tmp_path):
    out = tmp_path / "runs"
    out.mkdir()
    (first,) = run_smoke(ROOT / "notebooks" / "10_panel_design.ipynb", ROOT / "notebooks" / "params" / "10_smoke.yaml",
                         out)
    assert first.status == "complete", first.error
    assert len(evaluation_folders(out)) == 1
    (second,) = run_smoke(ROOT / "notebooks" / "09_corrected_estimates.ipynb",
                          ROOT / "notebooks" / "params" / "09_smoke.yaml", out)
    assert second.status == "complete", second.error
    (source,) = evaluation_folders(out)  # one source evaluation for both studies, not two
    a = json.loads((first.run_dir / "study.json").read_text())
    b = json.loads((second.run_dir / "study.json").read_text())
    assert a["source_run"] == b["source_run"] and Path(b["source_run"]).resolve() == source.resolve()
    assert json.loads((second.run_dir / "manifest.json").read_text())["source_run"] == b["source_run"]
    page = (second.run_dir / "09_corrected_estimates.html").read_text()
    assert "reused: an existing complete evaluation of the same evidence, judge and rubric" in page
    # the study folders and the one source: nothing else was written
    assert sorted(p for p in out.iterdir() if p.is_dir() and not p.name.startswith(".")) == \
        sorted([first.run_dir, second.run_dir, source])
