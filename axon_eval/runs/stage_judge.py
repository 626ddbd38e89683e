"""The judging stage of an evaluation run: one interface, three implementations.

An evaluation is planned and opened (:mod:`.stage_open`), judged here, and ended (:mod:`.stage_end`).
Whatever judges it implements :class:`Judging`: ``judge(run)`` judges every segment of the open run
(:class:`RunState`), writes the scored rows into its folder, fills the manifest's counts, spend and cache
figures, and returns what it did (:class:`Judged`). The plan of the run picks the implementation from
the options (:func:`~.stage_open.choose_judging`):

* :class:`LocalJudging`: in this process, chunk by chunk (:func:`~.judging.judged_chunks`), the
  manifest's heartbeat rewritten at most every :data:`HEARTBEAT_EVERY_S` seconds;
* :class:`BatchJudging` (``batch``): every uncached view as one resumable Anthropic Message Batch
  (:func:`~.batch.judged_in_batch`);
* :class:`PartitionedJudging` (``workers``, ``scheduler``, ``client`` or ``$DASK_SCHEDULER_ADDRESS``):
  partition by partition on the run's engine (:mod:`.partitioned`), each partition written by its
  worker; the driver merges the counts, the spend and the headline figures (:func:`judge_partitioned`,
  which a resume runs too).

All three write through the same stage, :func:`~.judging.score_and_write`: the local and batch paths
through one :class:`~.writer.RunWriter` here, a partition through its own on its worker. So a
partitioned run equals the single-process run.
"""

from __future__ import annotations

import abc
import contextlib
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..evidence import Turn, invalid_lines
from ..rubric import Rubric
from .faults import SpaceReserve, note_cache_failures, open_verdict_cache
from .io import default_cache_path, to_jsonable, write_json, write_jsonl
from .journal import PaidJournal, record_spend
from .judging import InFlight, JudgedChunk, judged_chunks, rubric_sampler, score_and_write, segment_chunks
from .manifest import RunCounts, RunManifest, mark_alive
from .options import EvaluationOptions
from .provenance import judge_provenance, relative_to_root, repository_root
from .writer import RunWriter, Usage

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from ..judges.base import Judge

#: A partitioned run's headline figures, merged from its partitions' sums (read without the results).
HEADLINE_FILE = "headline.json"
#: A single-process run rewrites its heartbeat at most this often (seconds).
HEARTBEAT_EVERY_S = 30.0


@dataclass(eq=False)
class RunState:
    """An evaluation run from its plan to its end: what its stages read and fill in.

    :func:`~.stage_open.plan_run` makes it, :func:`~.stage_open.open_run` opens it, a :class:`Judging`
    judges it, and :func:`~.stage_end.finish_run`, :func:`~.stage_end.mark_interrupted` or
    :func:`~.stage_end.mark_failed` end it (a resume, :mod:`.resume`, makes one of a recorded run).

    Attributes
    ----------
    opts : EvaluationOptions
        The run's options, validated once.
    judge : Judge
        The judge, resolved from the options.
    rubric : Rubric
        The rubric, resolved (its row horizon replaced when the options say so).
    judging : Judging
        How the run is judged (:func:`~.stage_open.choose_judging`).
    folder : Path
        The run folder.
    out : Path
        The runs folder it is in (the default verdict cache lives under it).
    manifest : RunManifest
        The manifest, written as the run goes.
    turn_source : list of Turn or Path
        The input as given: read again to count the planned segments and to estimate the cost.
    evidence : Path or None
        The evidence file a partitioned run cuts into partitions.
    turns : iterator of Turn
        The valid turns a single-process run judges, within ``limit``.
    invalid : list of dict
        The invalid-line records so far (a partitioned run's come from its partitions).
    given_invalid : list of dict
        The invalid records the caller passed in.
    files : list of Path
        The input files whose SHA-256 the manifest records (the evidence file first).
    root : Path or None
        The repository root recorded paths are relative to.
    params : dict
        The parameters written to ``params.json``.
    has_params : bool
        Whether the folder holds a ``params.json`` already (it is kept).
    unreadable : str or None
        Why a manifest already in the folder could not be read, else ``None``.
    source_name : str
        The input's name in messages.
    journal : PaidJournal or None
        The run's paid journal (a partitioned run's are its partitions').
    inflight : InFlight
        The chunk being judged (an interrupt keeps what finished).
    usage : Usage
        The tokens and cost of this attempt.
    stack : contextlib.ExitStack
        What closes when the run ends (the verdict cache).
    reserve : SpaceReserve or None
        The room kept to mark the run failed when the disk fills.
    engine : object or None
        A partitioned run's engine (:class:`~.partitioned.Engine`).
    cache : object or None
        The verdict cache a single-process run judges through.
    writer : RunWriter or None
        A single-process run's writer, once judging started.
    """

    opts: EvaluationOptions
    judge: Judge
    rubric: Rubric
    judging: Judging
    folder: Path
    out: Path
    manifest: RunManifest
    turn_source: Iterable[Turn] | Path
    evidence: Path | None = None
    turns: Iterator[Turn] = field(default_factory=lambda: iter(()))
    invalid: list[dict[str, Any]] = field(default_factory=list)
    given_invalid: list[dict[str, Any]] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)
    root: Path | None = None
    params: dict[str, Any] = field(default_factory=dict)
    has_params: bool = True
    unreadable: str | None = None
    source_name: str = "<turns>"
    journal: PaidJournal | None = None
    inflight: InFlight = field(default_factory=InFlight)
    usage: Usage = field(default_factory=Usage)
    stack: contextlib.ExitStack = field(default_factory=contextlib.ExitStack)
    reserve: SpaceReserve | None = None
    engine: Any = None
    cache: Any = None
    writer: RunWriter | None = None


@dataclass(frozen=True)
class Judged:
    """What the judging stage did: the run's ``counts``, whether the ``max_cost_usd`` budget stopped
    judging (``budget_stopped``), and the ``results`` table of a single-process run (``None`` for a
    partitioned run, which is read back lazily, never whole here)."""

    counts: RunCounts
    budget_stopped: bool
    results: pd.DataFrame | None = None


class Judging(Protocol):
    """How a run's segments are judged: :class:`LocalJudging`, :class:`BatchJudging` or
    :class:`PartitionedJudging`."""

    #: Whether the run is judged partition by partition on an engine (connected when the run opens).
    partitioned: bool

    def judge(self, run: RunState) -> Judged:
        """Judge every segment of ``run``, write the scored rows and fill its manifest's counts, spend
        and cache figures; returns what was done."""
        ...


# -- in this process ----------------------------------------------------------------------------------
class InProcessJudging(abc.ABC):
    """A run judged in this process and written through one :class:`~.writer.RunWriter` (the common part of
    :class:`LocalJudging` and :class:`BatchJudging`)."""

    partitioned = False
    #: Whether the manifest's heartbeat is rewritten as chunks are written.
    heartbeat = False

    @abc.abstractmethod
    def judged(self, run: RunState, chunks: Iterator[Any]) -> Iterator[JudgedChunk]:
        """The chunks of ``run`` (:func:`~.judging.segment_chunks`), judged: ``(items, records, n_turns)``."""

    def judge(self, run: RunState) -> Judged:
        """Judge, score and write every chunk (:func:`~.judging.score_and_write`), then commit the files
        and fill the manifest (:func:`written_in_process`)."""
        opts = run.opts
        run.writer = RunWriter(run.folder, compress_audit=opts.compress_audit)
        before = cache_counts(run.cache)
        chunks = segment_chunks(run.turns, run.rubric, opts.chunk_size, rubric_sampler(run.rubric))
        bar = progress_bar(run.judge.judge_id, opts.progress)
        try:
            score_and_write(self.judged(run, chunks), run.writer, run.usage, run.rubric,
                            after_chunk=_after_chunk(run, bar, self.heartbeat))
        finally:
            if bar is not None:
                bar.close()
        return written_in_process(run, before)


class LocalJudging(InProcessJudging):
    """Each chunk judged here in turn through the verdict cache (:func:`~.judging.judged_chunks`), within
    the budget, its judgements journaled as they arrive."""

    heartbeat = True

    def judged(self, run: RunState, chunks: Iterator[Any]) -> Iterator[JudgedChunk]:
        """The chunks judged one after another (:func:`~.judging.judged_chunks`)."""
        opts = run.opts
        return judged_chunks(run.judge, chunks, cache=run.cache, concurrency=opts.concurrency, usage=run.usage,
                             max_cost_usd=opts.max_cost_usd, inflight=run.inflight)


class BatchJudging(InProcessJudging):
    """Every uncached view as one resumable Anthropic Message Batch (:mod:`.batch`)."""

    def judged(self, run: RunState, chunks: Iterator[Any]) -> Iterator[JudgedChunk]:
        """The chunks judged through one Message Batch (:func:`~.batch.judged_in_batch`)."""
        from .batch import judged_in_batch

        opts = run.opts
        return judged_in_batch(run.judge, chunks, cache=run.cache, folder=run.folder, manifest=run.manifest,
                               usage=run.usage, poll_interval=opts.batch_poll_s, timeout=opts.batch_timeout_s,
                               max_cost_usd=opts.max_cost_usd)


def _after_chunk(run: RunState, bar: Any, heartbeat: bool) -> Callable[[int], None]:
    """What follows each written chunk: the progress bar moves on and, with ``heartbeat``, the manifest
    says the run is alive (at most every :data:`HEARTBEAT_EVERY_S` seconds)."""
    beat = time.monotonic()

    def after(segments: int) -> None:
        nonlocal beat
        if bar is not None:
            bar.update(segments)
        if heartbeat and time.monotonic() - beat > HEARTBEAT_EVERY_S:
            beat = time.monotonic()
            mark_alive(run.manifest)
            run.manifest.write(run.folder)

    return after


def written_in_process(run: RunState, before: tuple[int, int] | None) -> Judged:
    """Commit a single-process run's files (results, verdicts, audit, ``invalid.jsonl``) and fill its
    manifest: the cache's hits and misses since ``before`` (:func:`cache_counts`), the spend (the paid
    journal's sums, :func:`~.journal.record_spend`), the cache's failed writes and the counts."""
    writer, manifest, cache, usage = run.writer, run.manifest, run.cache, run.usage
    after = cache_counts(cache)
    writer.commit()
    write_jsonl(run.folder / "invalid.jsonl", run.invalid)
    results = writer.results_frame()
    if before is not None and after is not None:
        manifest.cache_hits, manifest.cache_misses = after[0] - before[0], after[1] - before[1]
    elif cache is not None:
        manifest.cache_hits = usage.cached
        manifest.cache_misses = usage.records - usage.cached
    if run.journal is not None:
        run.journal.close()
    record_spend(manifest, run.folder, usage.totals)
    note_cache_failures(manifest, cache)
    counts = writer.counts
    counts.invalid = len(invalid_lines(run.invalid))
    manifest.counts = counts
    budget_stopped = run.opts.max_cost_usd is not None and bool(
        results["error"].fillna("").str.startswith("not judged: the max_cost_usd").any())
    return Judged(counts, budget_stopped, results)


def cache_counts(cache: Any) -> tuple[int, int] | None:
    """``(hits, misses)`` a verdict cache has counted so far, ``None`` for a cache that counts nothing."""
    stats = getattr(cache, "stats", None)
    if stats is None:
        return None
    return int(getattr(stats, "hits", 0)), int(getattr(stats, "misses", 0))


def progress_bar(label: str, enabled: bool) -> Any:
    """A progress bar of segments judged (``tqdm``), or ``None`` when ``enabled`` is false."""
    if not enabled:
        return None
    from tqdm.auto import tqdm

    return tqdm(desc=f"judging [{label}]", unit="segment")


# -- partition by partition ---------------------------------------------------------------------------
class PartitionedJudging:
    """The evidence file judged partition by partition on the run's engine (:func:`judge_partitioned`)."""

    partitioned = True

    def judge(self, run: RunState) -> Judged:
        """Judge the partitions; the run's invalid records are the caller's and the partitions'."""
        run.invalid = list(run.given_invalid)  # the file's own invalid lines come from the partitions
        budget_stopped = judge_partitioned(run)
        return Judged(run.manifest.counts, budget_stopped)


def judge_partitioned(run: RunState) -> bool:
    """Judge ``run.evidence`` partition by partition on ``run.engine`` (:mod:`.partitioned`) into the run
    folder; fills the manifest (counts: the sum of the parts; tokens, cost, cache figures; the
    partitions) and ``run.invalid`` (the file's invalid lines, file order). Returns whether the budget
    stopped judging."""
    from .partitioned import run_partitions

    opts, manifest, folder = run.opts, run.manifest, run.folder
    partition_bytes = _partitions_record(run)
    cache_path = _shared_cache(run)
    manifest.write(folder)
    done = run_partitions(run.engine, run.evidence, folder, run.judge.spec, run.rubric, limit=opts.limit,
                          cache_path=cache_path, concurrency=opts.concurrency, chunk_size=opts.chunk_size,
                          max_cost_usd=opts.max_cost_usd, compress_audit=opts.compress_audit,
                          partition_bytes=partition_bytes, progress=opts.progress,
                          on_partition=lambda o, k, n: _heartbeat(folder, manifest, k, n),
                          sends_requests=bool(judge_provenance(run.judge)))
    _record_partitioned(run, done)
    return done.budget_stopped


def _partitions_record(run: RunState) -> int:
    """The partition size in bytes (the options', else :func:`~.partitioned.default_partition_bytes`),
    recorded with the engine in the manifest's ``partitions``; the Dask dashboard's address is printed."""
    from .partitioned import default_partition_bytes

    engine = run.engine
    partition_bytes = run.opts.partition_bytes or default_partition_bytes(
        run.evidence.stat().st_size, engine.slots if engine is not None else 1)
    run.manifest.partitions = (
        {"bytes": partition_bytes, "engine": "this process", "slots": 1, "workers_share_disk": True}
        if engine is None else
        {"bytes": partition_bytes, "engine": "dask.distributed", "slots": engine.slots,
         "workers_share_disk": engine.local})
    if engine is not None and engine.dashboard:
        print(f"Dask dashboard: {engine.dashboard}", file=sys.stderr)
    return partition_bytes


def _shared_cache(run: RunState) -> Path | None:
    """The verdict cache the partitions share (``None``: none), created here before any worker opens it
    and recorded in the manifest (``cache_path``, before the first request)."""
    cache, manifest = run.opts.cache, run.manifest
    cache_path = None
    if cache is not False:
        cache_path = Path(cache) if isinstance(cache, str | Path) else default_cache_path(run.out)
        if cache is not None and cache is not True and not isinstance(cache, str | Path):
            cache_path = getattr(cache, "path", None)
    if cache_path is not None:
        # created (and switched to WAL) here, before any worker opens it; a cache that cannot be opened
        # (a full disk, a lock held) is one warning and the run judges through its journals alone
        created, warning = open_verdict_cache(cache_path)
        if created is None:
            manifest.warnings.append(str(warning))
            cache_path = None
        else:
            created.close()
    manifest.cache_path = relative_to_root(cache_path, repository_root()) if cache_path is not None else None
    return cache_path


def _record_partitioned(run: RunState, done: Any) -> None:
    """What the partitions did together (a :class:`~.partitioned.PartitionedRun`) into the run: its
    invalid records, the headline figures merged from the parts' sums, the manifest's counts,
    partitions, cache figures and spend, and ``invalid.jsonl``."""
    manifest, folder = run.manifest, run.folder
    run.invalid.extend(done.invalid)
    if done.summary is not None:  # the headline figures merged from the parts' sums: no part is read here
        from ..stats.mergeable import headline_from_summary

        write_json(folder / HEADLINE_FILE, {"method": "merged from the partitions' sums (Poisson bootstrap over "
                                                      "turns)", "rows": to_jsonable(headline_from_summary(
                                                          done.summary, allow_mixed=True).to_dict("records"))})
    counts = RunCounts(**{k: v for k, v in done.counts.items() if k in RunCounts.model_fields})
    counts.invalid = len(invalid_lines(run.invalid))
    manifest.counts = counts
    manifest.partitions = {**manifest.partitions, "count": done.n_partitions, "done": done.n_partitions,
                           "kept": done.kept, "journal_hits": done.journal_hits,
                           "worker_peak_mb": done.worker_peak_mb}
    manifest.partitions.pop("finished", None)  # every partition finished
    manifest.cache_hits, manifest.cache_misses = done.hits, done.misses
    record_spend(manifest, folder, done.usage)  # every attempt's, from the paid journals
    manifest.cache_write_failures = done.cache_write_failures or None
    warning = done.cache_warning(manifest.cache_path)
    if warning and warning not in manifest.warnings:
        manifest.warnings.append(warning)
    write_jsonl(folder / "invalid.jsonl", run.invalid)


def _heartbeat(folder: Path, manifest: RunManifest, done: int, total: int) -> None:
    """A running partitioned run says it is alive (and how far it got) in its manifest."""
    mark_alive(manifest)
    manifest.partitions = {**(manifest.partitions or {}), "done": done, "count": total}
    manifest.write(folder)
