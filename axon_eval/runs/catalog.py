"""Every run folder under a root as one table, so runs can be found and compared without opening folders.

``index(root)`` reads only ``manifest.json`` (and ``study.json`` when present) of each folder. A folder
whose manifest cannot be read is listed with ``status == "unreadable"`` and the reason, never skipped; a
run still recorded as ``running`` whose process is gone is listed as ``interrupted``
(:func:`~.manifest.effective_status`: ``evaluate --resume`` finishes it).

Every run says what its judge was not (:func:`axon_eval.runs.disclosure.judge_disclosure`): ``simulated``
is true for a simulated judge's run (or a study that says so), ``local_server`` for a run judged against a
server on this machine instead of the provider, and ``judge_disclosure`` is the text shown beside the run
(``"SIMULATED"``, ``"local server, not the provider"``, both, or ``""``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from .disclosure import judge_disclosure
from .io import default_runs_dir
from .manifest import RunManifest, effective_status

INDEX_COLUMNS: tuple[str, ...] = (
    "run_id", "path", "started_at", "ended_at", "kind", "name", "status", "judge_id", "judge_local",
    "rubric_id", "rubric_name", "turns_file", "turns_sha256", "segments", "planned_segments", "judged", "unjudged",
    "invalid", "samples", "cost_usd", "git_commit", "git_dirty", "source_run", "study", "simulated", "local_server",
    "judge_disclosure", "error",
)


def index(root: str | Path | None = None) -> pd.DataFrame:
    """One row per run folder directly under ``root`` (default ``$AXON_EVAL_RUNS_DIR`` or ``runs``),
    newest first, with the columns :data:`INDEX_COLUMNS`. Hidden folders (``.cache``) are skipped.
    ``planned_segments`` is what the run set out to judge: ``segments`` unless it was interrupted before
    writing them all (:attr:`~axon_eval.runs.manifest.RunCounts.total`).
    ``simulated``, ``local_server`` and ``judge_disclosure`` are the run's
    :func:`~axon_eval.runs.disclosure.judge_disclosure` (from its manifest and ``study.json``)."""
    base = Path(root) if root is not None else default_runs_dir()
    rows = []
    if base.is_dir():
        for folder in sorted(p for p in base.iterdir() if p.is_dir() and not p.name.startswith(".")):
            if not (folder / "manifest.json").exists():
                continue
            row: dict[str, object] = {"run_id": folder.name, "path": str(folder)}
            try:
                m = RunManifest.read(folder)
            except Exception as exc:  # a broken manifest is listed, not hidden
                row.update(status="unreadable", error=f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}")
                rows.append(row)
                continue
            row.update(
                started_at=m.started_at, ended_at=m.ended_at, kind=m.kind, name=m.name, status=effective_status(m),
                judge_id=m.judge_id, judge_local=m.judge_local, rubric_id=m.rubric_id, rubric_name=m.rubric_name,
                turns_file=m.turns_file, turns_sha256=m.input_files.get(m.turns_file or "", None),
                segments=m.counts.segments, planned_segments=m.counts.total, judged=m.counts.judged, unjudged=m.counts.unjudged,
                invalid=m.counts.invalid, samples=m.counts.samples, cost_usd=m.cost_usd, git_commit=m.git_commit,
                git_dirty=m.git_dirty, source_run=m.source_run, error=m.error,
            )
            study_simulated = None
            study_path = folder / "study.json"
            if study_path.exists():
                try:
                    study = json.loads(study_path.read_text(encoding="utf-8"))
                    row.update(study=study.get("study"))
                    study_simulated = study.get("simulated")
                except (OSError, ValueError) as exc:
                    row.update(study="unreadable", error=f"study.json: {exc}")
            disclosure = judge_disclosure({**m.model_dump(mode="json"), "simulated": study_simulated})
            row.update(simulated=disclosure.simulated, local_server=disclosure.local_server,
                       judge_disclosure=disclosure.label)
            rows.append(row)
    frame = pd.DataFrame(rows, columns=list(INDEX_COLUMNS))
    return frame.sort_values("run_id", ascending=False, ignore_index=True)
