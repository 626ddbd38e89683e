"""``evaluate --resume RUN``: finish an interrupted, failed or killed evaluation in place.

A run folder records everything needed to finish it: the evidence file and its SHA-256 (checked), the
judge spec, the rubric, the options and, for a partitioned run, the partition size. :func:`resume` cuts the
evidence into the same partitions (:mod:`.partitioned`), keeps every partition already finished, and
judges the others; a partition cut short serves the verdicts already in its journals (its verdicts, the
partial file a kill left, and its paid journal, :mod:`~axon_eval.runs.journal`), and every other
verdict goes through the verdict cache the run recorded (its ``cache_path``, written before the first
request), so no verdict is paid twice. A single-process run resumes as one partition whose journal is its ``verdicts.jsonl``, its
``.verdicts.jsonl.partial`` (the only one a SIGKILL leaves) and its ``paid.jsonl``. The resumed manifest's
tokens and cost are those of every attempt (the paid journals' sums).

A run that failed because its disk filled resumes once space is freed; a resume that fills the disk
again fails the same way (:class:`~.faults.DiskFullError`). Ctrl-C during a resume keeps what finished
and raises :class:`~.manifest.RunInterrupted`, as a first run does.

A run that is still recorded as ``running`` but whose process is gone is ``interrupted``
(:func:`~.manifest.effective_status`, what ``index`` shows) and can be resumed.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..rubric import Rubric
from .faults import SpaceReserve
from .io import iso, utc_now
from .journal import PAID_JOURNAL, complete_lines
from .load import Run, load_run
from .manifest import RunManifest, effective_status, mark_alive, status_for
from .partitioned import PARTS_DIR, connect
from .provenance import repository_root, resolve_recorded
from .stage_end import RESUMABLE_KINDS, run_ending
from .stage_judge import PartitionedJudging, RunState, judge_partitioned


#: What a single-process run leaves at the top of its folder that its resume (partition 0) reads back.
SINGLE_PROCESS_JOURNALS = ("verdicts.jsonl", ".verdicts.jsonl.partial", PAID_JOURNAL)
#: Partial files a single-process run killed or failed leaves at the top of its folder (removed once
#: its resume has merged the partition's files into the folder's).
LEFT_PARTIALS = (".verdicts.jsonl.partial", ".audit.jsonl.partial", ".audit.jsonl.gz.partial",
                 ".members.parquet.partial")


def _single_process_journal(folder: Path) -> None:
    """A single-process run resumes as partition 0: the whole lines of its ``verdicts.jsonl``, the
    ``.verdicts.jsonl.partial`` a kill or a full disk left and its ``paid.jsonl`` become that partition's
    journal (written aside, then moved into place; once only)."""
    parts = folder / PARTS_DIR
    parts.mkdir(exist_ok=True)
    journal = parts / "verdicts-00000.jsonl"
    sources = [folder / name for name in SINGLE_PROCESS_JOURNALS if (folder / name).is_file()]
    if journal.exists() or not sources:
        return
    partial = parts / ".verdicts-00000.jsonl.journal"
    try:
        with partial.open("w", encoding="utf-8") as out:
            for source in sources:
                out.writelines(complete_lines(source))
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    os.replace(partial, journal)


def _recorded_cache(manifest: RunManifest) -> Path | None:
    """The verdict cache a run recorded before its first request (a relative path is under the repository
    root); ``None`` when it judged without one (``--no-cache``, or a cache that could not be opened)."""
    if not manifest.cache_path:
        return None
    return resolve_recorded(manifest.cache_path, root=repository_root())


def resume(run_dir: str | Path, *, workers: int | None = None, scheduler: str | None = None, client: Any = None,
           progress: bool = True, cache: Any = None) -> Run:
    """Finish run ``run_dir`` in place (module docstring); returns the finished :class:`Run`.

    Refused (``ValueError``) for a complete run, a run still running, a run that is not an evaluation, a
    Message Batches run (run the same command again: its batch id is recorded and polled), and a run
    whose evidence file changed (``InputChangedError``). ``workers``/``scheduler``/``client`` choose the
    engine as for :func:`~.evaluate.evaluate` (none: the partitions one after another here). It ends as an
    evaluation does (:mod:`.stage_end`): Ctrl-C marks it interrupted, any other error failed."""
    folder = Path(run_dir)
    manifest = RunManifest.read(folder)
    previous = _resumable_status(folder, manifest)  # a killed run reads "running" in its manifest: interrupted
    run = _recorded_run(folder, manifest, workers=workers, scheduler=scheduler, client=client, progress=progress,
                        cache=cache)
    with run_ending(run):
        run.reserve = SpaceReserve(folder)  # room to mark the run failed if the disk fills again
        manifest.status, manifest.failure, manifest.error, manifest.ended_at = "running", None, None, None
        mark_alive(manifest)
        manifest.warnings.append(f"resumed at {iso(utc_now())} (was {previous}): finished partitions kept, the "
                                 "rest judged again through the journals and the verdict cache")
        manifest.write(folder)
        run.engine = connect(workers, scheduler, client)
        budget_stopped = judge_partitioned(run)
        manifest.status, manifest.failure = status_for(manifest.counts)
        if budget_stopped:
            manifest.warnings.append("the max_cost_usd budget stopped judging; the rest are unjudged rows")
        manifest.pid, manifest.ended_at = None, iso(utc_now())
        manifest.write(folder)
        for name in LEFT_PARTIALS:  # what the killed attempt left at the top is merged now
            (folder / name).unlink(missing_ok=True)
        run.reserve.release()
    return load_run(folder)


def _resumable_status(folder: Path, manifest: RunManifest) -> str:
    """The status of a run that can resume (:func:`~.manifest.effective_status`); ``ValueError`` for one
    that cannot (:func:`resume`)."""
    status = effective_status(manifest)
    if status == "complete":
        raise ValueError(f"run {folder} is complete: nothing to resume")
    if status == "running":
        raise ValueError(f"run {folder} is still running (process {manifest.pid} on {manifest.host}); resume it "
                         "once that process is gone")
    if manifest.kind not in RESUMABLE_KINDS:
        raise ValueError(f"run {folder} is a {manifest.kind!r} run; only {', '.join(RESUMABLE_KINDS)} runs resume")
    if manifest.batch:
        raise ValueError(f"run {folder} sent a Message Batch; run the same command again to resume polling it")
    return status


def _recorded_run(folder: Path, manifest: RunManifest, *, workers: int | None, scheduler: str | None, client: Any,
                  progress: bool, cache: Any) -> RunState:
    """The run ``folder`` records, to be judged again partition by partition: its evidence (checked), judge,
    rubric and options (a single-process run is one partition whose journal is its own files)."""
    from .derive import recorded_evidence
    from .judging import resolve_judge
    from .options import EvaluationOptions

    evidence = recorded_evidence(folder, manifest)
    rubric = Rubric.model_validate(manifest.rubric) if manifest.rubric else Rubric.default()
    params = manifest.params or {}
    spec = manifest.judge_spec or params.get("judge")
    if not spec:
        raise ValueError(f"run {folder} recorded no judge spec; it cannot be judged again")
    judge = resolve_judge(spec, rubric)
    partition_bytes = (manifest.partitions or {}).get("bytes")
    if partition_bytes is None:  # a single-process run: one partition, its verdicts.jsonl the journal
        partition_bytes = evidence.stat().st_size + 1
        _single_process_journal(folder)
    recorded_cache = _recorded_cache(manifest)
    opts = EvaluationOptions.build(judge=spec, limit=params.get("limit"), concurrency=params.get("concurrency") or 8,
                                   max_cost_usd=manifest.max_cost_usd, partition_bytes=partition_bytes,
                                   progress=progress, cache=cache if cache is not None else (
                                       False if recorded_cache is None else recorded_cache),
                                   workers=workers, scheduler=scheduler, client=client)
    return RunState(opts=opts, judge=judge, rubric=rubric, judging=PartitionedJudging(), folder=folder,
                    out=folder.parent, manifest=manifest, turn_source=evidence, evidence=evidence)
