"""Every run folder under a root as one table, so runs can be found and compared without opening folders.

``index(root)`` reads only ``manifest.json`` (and ``study.json`` when present) of each folder. A folder
whose manifest cannot be read is listed with ``status == "unreadable"`` and the reason, never skipped; a
run still recorded as ``running`` whose process is gone is listed as ``interrupted``
(:func:`~.manifest.effective_status`: ``evaluate --resume`` finishes it).

Every run says what its judge was not (:func:`axon_eval.runs.disclosure.judge_disclosure`): ``simulated``
is true for a simulated judge's run (or a study that says so), ``local_server`` for a run judged against a
server on this machine instead of the provider, and ``judge_disclosure`` is the text shown beside the run
(``"SIMULATED"``, ``"local server, not the provider"``, both, or ``""``).

:func:`find_source_run` finds, from the manifests alone, a finished evaluation a study can read instead of
evaluating the same evidence again: the same evidence (SHA-256), judge id and rubric id.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from .disclosure import judge_disclosure
from .io import default_runs_dir, file_sha256, results_files
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


def find_source_run(evidence: str | Path, judge_id: str, rubric_id: str, root: str | Path | None = None) -> Path | None:
    """The newest run folder directly under ``root`` (default ``$AXON_EVAL_RUNS_DIR`` or ``runs``) that is a
    finished evaluation of exactly ``evidence`` by ``judge_id`` under ``rubric_id``, or ``None``.

    Read from each folder's ``manifest.json`` only: kind ``evaluate`` (a headless ``evaluate`` or notebook
    01), status ``complete`` (every segment judged; a partial, failed, interrupted or running run is never
    reused), the SHA-256 recorded for its evidence file (``turns_file``) equal to ``evidence``'s, the same
    judge id and rubric id (the rubric id covers weights, caps, bands, row horizon and prompt), every valid
    turn judged (no ``limit`` in its parameters) and its results dataset present. Newest: the largest
    run id (folders are named by their UTC start time). An unreadable manifest is skipped."""
    base = Path(root) if root is not None else default_runs_dir()
    if not base.is_dir():
        return None
    wanted = file_sha256(evidence)
    for folder in sorted((p for p in base.iterdir() if p.is_dir() and not p.name.startswith(".")), reverse=True):
        try:
            m = RunManifest.read(folder)
        except Exception:  # noqa: BLE001 - not a run folder, or a manifest no one can read: not a source
            continue
        if (m.kind == "evaluate" and m.source_run is None and effective_status(m) == "complete"
                and m.judge_id == judge_id and m.rubric_id == rubric_id and m.turns_file is not None
                and m.input_files.get(m.turns_file) == wanted and m.params.get("limit") is None
                and results_files(folder)):
            return folder
    return None
