"""The last stage of an evaluation run: finish it, or mark it interrupted or failed.

:func:`finish_run` gives a judged run its status from its counts (``complete``, ``partial`` or ``failed``,
:func:`~.manifest.status_for`), says when the budget stopped judging, and writes the last manifest.

:func:`mark_interrupted` (Ctrl-C) first stops a partitioned run's workers, so the manifest is written
last; it keeps the judgements of the chunk in flight that had finished (a segment with only some of its
samples done gets unjudged rows for the rest, with the reason) or, for a partitioned run, its finished
partitions' counts, and records the tokens and cost of every paid journal and ``counts.planned_segments``
(the input's segments within the limit; unknown after a second Ctrl-C). It returns the
:class:`~.manifest.RunInterrupted` to raise.

:func:`mark_failed` (any other error) keeps what was written: a single-process run's files under their
final names unless the disk filled (then no file is trusted whole: :meth:`~.writer.RunWriter.abort`), a
partitioned run's finished partitions; it records the spend and marks the run ``failed``
(:func:`~.manifest.fail_run`), or, after a full disk, returns the :class:`~.faults.DiskFullError` naming
the space the run needs to finish (:func:`disk_full`).

:func:`run_ending` is the one place both are chosen: an evaluation (:mod:`.evaluate`) and a resume
(:mod:`.resume`) run their stages inside it, so they end the same way.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from ..evidence import Turn, invalid_lines
from .budget import format_usd
from .faults import (
    RESERVE_BYTES,
    DiskFullError,
    folder_bytes,
    format_bytes,
    free_bytes,
    is_disk_full,
    note_cache_failures,
    space_needed,
)
from .io import iso, utc_now, write_jsonl
from .journal import complete_lines, record_spend
from .manifest import RunCounts, RunInterrupted, RunManifest, fail_run, status_for
from .stage_judge import Judged, RunState
from .stage_open import count_segments

#: The kinds of run a resume can finish (an evaluation and a re-judged run).
RESUMABLE_KINDS = ("evaluate", "rejudge")


def finish_run(run: RunState, judged: Judged) -> None:
    """The status of a judged run from its counts, a warning when the budget stopped judging, and its
    last manifest; closes what the run opened (its cache) and frees the room kept for a failed manifest."""
    manifest = run.manifest
    manifest.status, manifest.failure = status_for(judged.counts)
    if judged.budget_stopped:
        manifest.warnings.append(f"the max_cost_usd budget ({format_usd(run.opts.max_cost_usd)}) stopped judging; "
                                 "the rest are unjudged rows")
    manifest.ended_at = iso(utc_now())
    manifest.write(run.folder)
    run.stack.close()
    if run.reserve is not None:
        run.reserve.release()


@contextlib.contextmanager
def run_ending(run: RunState) -> Iterator[RunState]:
    """Run the body's stages on ``run`` and end it however they end: Ctrl-C raises the
    :class:`~.manifest.RunInterrupted` of :func:`mark_interrupted`, a full disk the
    :class:`~.faults.DiskFullError` of :func:`mark_failed`, any other error is re-raised once the run is
    marked failed; a partitioned run's engine is closed in every case."""
    try:
        yield run
    except KeyboardInterrupt:
        raise mark_interrupted(run) from None  # the workers stop first: the manifest is written last
    except BaseException as exc:
        full = mark_failed(run, exc)
        if full is not None:
            raise full from exc
        raise
    finally:
        close_engine(run.engine)


# -- interrupted --------------------------------------------------------------------------------------
def mark_interrupted(run: RunState) -> RunInterrupted:
    """Keep what an interrupted run judged and mark its manifest ``interrupted`` (module docstring);
    returns the :class:`~.manifest.RunInterrupted` to raise, with the folder and ``judged of planned``."""
    run.engine = close_engine(run.engine)  # the workers stop before the manifest is written: it is written last
    if run.journal is not None:
        run.journal.close()
    counts = _kept_counts(run)
    manifest, usage = run.manifest, run.usage
    manifest.counts = counts
    with contextlib.suppress(Exception):
        record_spend(manifest, run.folder, usage.totals)
    note_cache_failures(manifest, run.cache)
    if manifest.cache_path is not None and run.writer is not None:
        manifest.cache_hits, manifest.cache_misses = usage.cached, usage.records - usage.cached
    manifest.status, manifest.failure = "interrupted", None
    total = "?" if counts.planned_segments is None else counts.planned_segments
    manifest.error = f"interrupted (Ctrl-C) after {counts.judged} of {total} segments judged"
    manifest.ended_at = iso(utc_now())
    with contextlib.suppress(Exception):
        manifest.write(run.folder)
    with contextlib.suppress(BaseException):
        run.stack.close()
    if run.reserve is not None:
        run.reserve.release()
    return RunInterrupted(run.folder, counts.judged, counts.planned_segments, cached=manifest.cache_path is not None,
                          resumable=manifest.notebook is None and manifest.kind in RESUMABLE_KINDS)


def _kept_counts(run: RunState) -> RunCounts:
    """Write what an interrupted run finished (the in-flight chunk's finished judgements, or a
    partitioned run's finished partitions) and return its counts, with the planned segments."""
    writer, folder = run.writer, run.folder
    if writer is not None:
        try:
            items, records = run.inflight.finished(run.judge)
            if records:
                run.usage.add(records)
                writer.add_scored(items, records, run.rubric, len({item.turn_id for item in items}))
            writer.commit()
        except Exception as exc:  # keep what is on disk; the manifest says why the in-flight chunk is missing
            writer.abort()
            run.manifest.warnings.append(f"the judgements in flight at the interrupt could not be written: "
                                         f"{type(exc).__name__}: {exc}")
    with contextlib.suppress(Exception):
        write_jsonl(folder / "invalid.jsonl", run.invalid)
    counts = writer.counts if writer is not None else RunCounts()
    invalid = run.invalid
    if writer is None and (folder / "parts").is_dir():  # a partitioned run: its finished partitions' sums
        from .partitioned import finished_outcomes, merge_outcomes

        finished_counts(folder, run.manifest)
        counts = run.manifest.counts
        invalid = [*invalid, *merge_outcomes(finished_outcomes(folder)).invalid]
    counts.invalid = len(invalid_lines(invalid))
    try:
        counts.planned_segments = max(count_segments(run.turn_source, run.opts.limit), counts.segments)
    except (KeyboardInterrupt, Exception):  # a second Ctrl-C, or an input that changed: total unknown
        counts.planned_segments = None
    return counts


# -- failed -------------------------------------------------------------------------------------------
def mark_failed(run: RunState, exc: BaseException) -> DiskFullError | None:
    """Keep what a run that raised ``exc`` wrote and mark it ``failed`` (module docstring); returns the
    :class:`~.faults.DiskFullError` to raise when the disk filled, else ``None`` (``exc`` is raised)."""
    run.engine = close_engine(run.engine)
    if run.journal is not None:
        run.journal.close()
    folder, manifest, writer = run.folder, run.manifest, run.writer
    written = max(0, folder_bytes(folder) - (RESERVE_BYTES if run.reserve is not None else 0))
    measured = None if writer is None else max(writer.counts.segments, writer.verdicts.count,
                                                sum(1 for _ in complete_lines(writer.verdicts.partial)))
    if writer is not None:  # never a torn file under its final name (after a full disk, none is trusted)
        writer.abort(torn=is_disk_full(exc))
    if run.reserve is not None:
        run.reserve.release()  # the room to write the failed manifest
    with contextlib.suppress(BaseException):
        run.stack.close()
    with contextlib.suppress(Exception):
        write_jsonl(folder / "invalid.jsonl", run.invalid)
    if writer is not None:
        manifest.counts = writer.counts
        manifest.counts.invalid = len(invalid_lines(run.invalid))
    elif (folder / "parts").is_dir():
        finished_counts(folder, manifest)
    with contextlib.suppress(Exception):
        record_spend(manifest, folder, run.usage.totals)
        note_cache_failures(manifest, run.cache)
    if is_disk_full(exc):
        return disk_full(folder, manifest, exc, written, run.turn_source, run.opts.limit, measured)
    fail_run(folder, manifest, exc)
    return None


def disk_full(folder: Path, manifest: RunManifest, exc: BaseException, written: int,
              turn_source: Iterable[Turn] | Path, limit: int | None, measured: int | None = None) -> DiskFullError:
    """Mark a run that filled its disk ``failed``, its error naming the space it needs to finish, and return
    the :class:`~.faults.DiskFullError` to raise. ``written``: the bytes the run had written, for
    ``measured`` segments (default: the manifest's count)."""
    segments = manifest.counts.segments if measured is None else measured
    try:
        planned: int | None = max(count_segments(turn_source, limit), segments)
    except Exception:  # the input changed or cannot be read: the total is unknown
        planned = None
    needed = space_needed(written, segments, planned)
    free = free_bytes(folder)
    fail_run(folder, manifest, exc)
    manifest.error = f"{manifest.error} (about {format_bytes(needed)} free is needed to finish)"
    with contextlib.suppress(Exception):
        manifest.write(folder)
    try:
        marked = RunManifest.read(folder).status == "failed"
    except Exception:
        marked = False
    return DiskFullError(folder, free=free, needed=needed, marked=marked,
                         resumable=manifest.notebook is None and manifest.kind in RESUMABLE_KINDS)


def finished_counts(folder: Path, manifest: RunManifest) -> list[int]:
    """A partitioned run's counts as its finished partitions' sums, into ``manifest``; returns their
    indices (recorded in ``manifest.partitions['finished']``)."""
    from .partitioned import finished_outcomes, merge_outcomes

    finished = finished_outcomes(folder)
    done = merge_outcomes(finished)
    invalid = manifest.counts.invalid
    manifest.counts = RunCounts(**{k: v for k, v in done.counts.items() if k in RunCounts.model_fields})
    manifest.counts.invalid = invalid
    indices = sorted(o.index for o in finished)
    manifest.partitions = {**(manifest.partitions or {}), "done": len(indices), "finished": indices}
    return indices


def close_engine(engine: Any) -> None:
    """Close a partitioned run's engine (its local cluster's workers stop); never raises. Returns ``None``
    (the engine is gone)."""
    if engine is not None:
        with contextlib.suppress(BaseException):
            engine.close()
    return None
