"""``evaluate --resume RUN``: finish an interrupted, failed or killed evaluation in place.

A run folder records everything needed to finish it: the evidence file and its SHA-256 (checked), the
judge spec, the rubric, the options and, for a partitioned run, the partition size. :func:`resume` cuts the
evidence into the same partitions (:mod:`.partitioned`), keeps every partition already finished, and
judges the others; a partition cut short serves the verdicts already in its journals (its verdicts, the
partial file a kill left, and its paid journal, :mod:`.journal`), and every other verdict goes through the
verdict cache the run recorded (its ``cache_path``, written before the first request), so no verdict is
paid twice. A single-process run resumes as one partition whose journal is its ``verdicts.jsonl``, its
``.verdicts.jsonl.partial`` (the only one a SIGKILL leaves) and its ``paid.jsonl``. The resumed manifest's
tokens and cost are those of every attempt (the paid journals' sums).

A run that failed because its disk filled resumes once space is freed; a resume that fills the disk
again fails the same way (:class:`~.faults.DiskFullError`). Ctrl-C during a resume keeps what finished
and raises :class:`~.manifest.RunInterrupted`, as a first run does.

A run that is still recorded as ``running`` but whose process is gone is ``interrupted``
(:func:`~.manifest.effective_status`, what ``index`` shows) and can be resumed.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

from ..rubric import Rubric
from .faults import RESERVE_BYTES, SpaceReserve, folder_bytes, is_disk_full
from .io import iso, utc_now, write_jsonl
from .journal import PAID_JOURNAL, complete_lines
from .load import Run, load_run
from .manifest import RunManifest, effective_status, mark_alive, status_for
from .partitioned import PARTS_DIR, connect
from .provenance import repository_root, resolve_recorded

#: The kinds of run :func:`resume` can finish (an evaluation and a re-judged run).
RESUMABLE_KINDS = ("evaluate", "rejudge")


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
    engine as for :func:`~.evaluate.evaluate` (none: the partitions one after another here)."""
    from .derive import recorded_evidence
    from .evaluate import _finished_counts, _interrupted, _judge_partitioned, close_engine, disk_full, fail_run, \
        resolve_judge
    from .journal import record_spend
    from .judging import InFlight
    from .options import EvaluationOptions
    from .writer import Usage

    folder = Path(run_dir)
    manifest = RunManifest.read(folder)
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
    out = folder.parent
    recorded_cache = _recorded_cache(manifest)
    opts = EvaluationOptions.build(judge=spec, limit=params.get("limit"), concurrency=params.get("concurrency") or 8,
                                   max_cost_usd=manifest.max_cost_usd, partition_bytes=partition_bytes,
                                   progress=progress, cache=cache if cache is not None else (
                                       False if recorded_cache is None else recorded_cache),
                                   workers=workers, scheduler=scheduler, client=client)
    previous = status  # a killed run reads "running" in its manifest: it was interrupted
    engine = None
    reserve = None
    invalid_list: list[dict[str, Any]] = []
    try:
        reserve = SpaceReserve(folder)  # room to mark the run failed if the disk fills again
        manifest.status, manifest.failure, manifest.error, manifest.ended_at = "running", None, None, None
        mark_alive(manifest)
        manifest.warnings.append(f"resumed at {iso(utc_now())} (was {previous}): finished partitions kept, the "
                                 "rest judged again through the journals and the verdict cache")
        manifest.write(folder)
        engine = connect(workers, scheduler, client)
        budget_stopped = _judge_partitioned(engine, folder, evidence, judge, rubric, manifest, opts, out, invalid_list)
        manifest.status, manifest.failure = status_for(manifest.counts)
        if budget_stopped:
            manifest.warnings.append("the max_cost_usd budget stopped judging; the rest are unjudged rows")
        manifest.pid, manifest.ended_at = None, iso(utc_now())
        manifest.write(folder)
        for name in LEFT_PARTIALS:  # what the killed attempt left at the top is merged now
            (folder / name).unlink(missing_ok=True)
        reserve.release()
    except KeyboardInterrupt:
        engine = close_engine(engine)  # the workers stop first: the manifest is written last
        stopped = _interrupted(folder, manifest, None, judge, rubric, InFlight(), Usage(), turn_source=evidence,
                               limit=params.get("limit"), invalid_list=invalid_list)
        if reserve is not None:
            reserve.release()
        raise stopped from None
    except BaseException as exc:
        engine = close_engine(engine)
        written = max(0, folder_bytes(folder) - (RESERVE_BYTES if reserve is not None else 0))
        if reserve is not None:
            reserve.release()
        with contextlib.suppress(Exception):
            write_jsonl(folder / "invalid.jsonl", invalid_list)
        if (folder / PARTS_DIR).is_dir():
            _finished_counts(folder, manifest)
        with contextlib.suppress(Exception):
            record_spend(manifest, folder)
        if is_disk_full(exc):
            raise disk_full(folder, manifest, exc, written, evidence, params.get("limit")) from exc
        fail_run(folder, manifest, exc)
        raise
    finally:
        close_engine(engine)
    return load_run(folder)
