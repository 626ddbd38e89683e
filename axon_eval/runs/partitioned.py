"""Partitioned evaluation: the same judging and scoring, one partition of whole turns at a time, on any engine.

A large evidence file is cut into byte ranges on line boundaries (:func:`axon_eval.evidence.plan_byte_ranges`;
one turn is one line, so a bundled turn's segments never split). Each partition is judged and scored by
the same code as a single-process run (the chunked judging and the writing of :mod:`.judging`) and
written as its own part of the run folder:

* ``results/part-<index>.parquet`` (the run's results are the parquet dataset of these parts);
* ``parts/verdicts-<index>.jsonl`` and ``parts/audit-<index>.jsonl``, merged into the folder's
  ``verdicts.jsonl`` and ``audit.jsonl`` by the driver at the end (a byte copy, in partition order);
* ``parts/part-<index>.json``: the partition's counts, usage and cache figures, written before its
  results part is moved into place, so a results part on disk means a finished partition.

Two functions are the whole engine contract, both pure functions of their arguments (plain, picklable
records in and out), so Dask, Ray Data or Spark's ``mapInPandas`` can call them alike:
:func:`scan_partition` (validate a range: its invalid lines and a 128-bit hash of each valid turn id,
so the driver finds a turn id repeated across partitions and reports it as a single-process run would)
and :func:`judge_partition` (judge and write one partition).

**The verdict cache.** On one machine every worker opens the shared SQLite cache (WAL mode is safe
across processes on a local disk). A partition's verdict records carry their cache key and are appended
to its ``parts/verdicts-<index>.jsonl`` as each chunk is judged, so that file is also the partition's
*journal*: when a run resumes, the records already in a partition's journal (finished or cut short) are
served from it (:class:`JournalCache`) and never paid for again. On a cluster
(``use_shared_cache=False``) workers open no SQLite file at all (SQLite on a network file system can
corrupt); each journal has exactly one writer, and the driver copies the new verdicts into the local
SQLite cache after the run.

**Paid journals.** Every judgement a partition pays for is also appended, the moment it arrives, to
``parts/paid-<index>.jsonl`` (:mod:`~axon_eval.runs.journal`): a worker killed mid-chunk loses none of
them, a resume serves them, and the run's recorded spend is their sum over every attempt.

**Stopping.** Ctrl-C on the driver (or a partition that fails) stops the run cleanly
(:func:`run_partitions`): no partition is handed out any more, the run folder's stop flag
(:class:`StopFlag`, ``parts/.stop``) tells the running partitions to send no further request (the
requests already sent finish and are journaled), the driver waits for them (at most
:data:`STOP_WAIT_S`; a second Ctrl-C stops waiting), keeps those that finished, and only then is the
manifest written. The workers of the local cluster :func:`connect` starts ignore SIGINT
(:func:`dask_setup`), so a Ctrl-C at the terminal, which signals the whole process group, reaches the
driver alone: one line, no worker tracebacks.

**LLM judges.** The driver keeps at most ``concurrency`` requests in flight across the cluster: with
``k`` partitions running at once each gets ``max(1, concurrency // k)`` request slots and ``k`` is at most
``concurrency``. A budget (``max_cost_usd``) is split among the partitions as they start: each receives
the budget not yet spent or promised, divided by the partitions in flight, and keeps within it (the
single-process rule); a partition that gets nothing leaves its segments unjudged with the budget reason.
So the run never exceeds the budget, and stops within one partition's cost of it.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..evidence import ByteRange, InvalidTurn, Turn, iter_turns_range
from ..rubric import Rubric
from .faults import GuardedCache, failure_warning, is_disk_full, open_verdict_cache
from .io import read_parquet
from .journal import complete_lines, part_journal_path, records_of
from .writer import PARTS_DIR, RESULTS_DIR

#: The largest default partition of an evidence file, in bytes (cut on line boundaries). A file is cut
#: into at least ``PARTITIONS_PER_SLOT`` partitions per worker slot, so the last partitions to finish do
#: not leave workers idle, never smaller than ``MIN_PARTITION_BYTES``.
PARTITION_BYTES = 4 * 1024 * 1024
MIN_PARTITION_BYTES = 64 * 1024
PARTITIONS_PER_SLOT = 4


def default_partition_bytes(file_bytes: int, slots: int) -> int:
    """``min(PARTITION_BYTES, max(MIN_PARTITION_BYTES, file_bytes / (PARTITIONS_PER_SLOT * slots)))``."""
    return int(min(PARTITION_BYTES, max(MIN_PARTITION_BYTES, file_bytes // max(1, PARTITIONS_PER_SLOT * slots))))


def part_stem(index: int) -> str:
    """The five-digit name of partition ``index`` (``00007``)."""
    return f"{index:05d}"


def results_part(folder: str | Path, index: int) -> Path:
    """The results part of partition ``index``, ``results/part-<index>.parquet``."""
    return Path(folder) / RESULTS_DIR / f"part-{part_stem(index)}.parquet"


def part_record_path(folder: str | Path, index: int) -> Path:
    """The record of a finished partition, ``parts/part-<index>.json``."""
    return Path(folder) / PARTS_DIR / f"part-{part_stem(index)}.json"


def verdicts_part(folder: str | Path, index: int) -> Path:
    """The verdict journal of partition ``index``, ``parts/verdicts-<index>.jsonl``."""
    return Path(folder) / PARTS_DIR / f"verdicts-{part_stem(index)}.jsonl"


# -- scanning: invalid lines and turn ids ----------------------------------------------------------------
def turn_id_hash(turn_id: str) -> tuple[int, int]:
    """A 128-bit hash of a turn id (BLAKE2b) as two unsigned 64-bit integers."""
    digest = hashlib.blake2b(turn_id.encode("utf-8"), digest_size=16).digest()
    return int.from_bytes(digest[:8], "little"), int.from_bytes(digest[8:], "little")


@dataclass
class PartitionScan:
    """What :func:`scan_partition` found in one range: ``ids`` (``n x 2`` uint64 hashes of the valid turn
    ids, file order), their ``lines``, the ``invalid`` records (as dicts) and the count of valid turns."""

    index: int
    ids: np.ndarray
    lines: np.ndarray
    invalid: list[dict[str, Any]]

    @property
    def n_valid(self) -> int:
        return int(len(self.lines))


def scan_partition(evidence: str, byte_range: ByteRange) -> PartitionScan:
    """Validate one range of the evidence file (no judging)."""
    ids: list[tuple[int, int]] = []
    lines: list[int] = []
    invalid: list[dict[str, Any]] = []
    for line, item in iter_turns_range(evidence, byte_range):
        if isinstance(item, InvalidTurn):
            invalid.append(item.to_dict())
        else:
            ids.append(turn_id_hash(item.turn_id))
            lines.append(line)
    return PartitionScan(byte_range.index, np.array(ids, dtype=np.uint64).reshape(-1, 2),
                         np.array(lines, dtype=np.int64), invalid)


def cross_partition_duplicates(scans: Sequence[PartitionScan]) -> dict[int, dict[int, int]]:
    """Turn ids valid in more than one partition: the first (lowest line) is kept, as a single-process
    run keeps it. Returns ``{partition index: {line to skip: line of the first occurrence}}``; the
    partition that skips a line reports it, with the turn id, as a single-process run would."""
    ordered = [s for s in sorted(scans, key=lambda s: s.index) if len(s.lines)]
    if not ordered:
        return {}
    ids = np.concatenate([s.ids for s in ordered])
    lines = np.concatenate([s.lines for s in ordered])
    owner = np.concatenate([np.full(len(s.lines), s.index, dtype=np.int64) for s in ordered])
    order = np.lexsort((lines, ids[:, 1], ids[:, 0]))
    sid, sl, so = ids[order], lines[order], owner[order]
    repeat = np.flatnonzero(np.all(sid[1:] == sid[:-1], axis=1)) + 1
    skip: dict[int, dict[int, int]] = {}
    for k in repeat:
        first = k - 1
        while first > 0 and np.all(sid[first - 1] == sid[k]):
            first -= 1
        skip.setdefault(int(so[k]), {})[int(sl[k])] = int(sl[first])
    return skip


# -- the journal: a partition's verdicts, served again on resume ------------------------------------------
class JournalCache:
    """A verdict cache over a partition's journal (``parts/verdicts-<index>.jsonl``, finished or cut
    short by a crash, and its paid journal) in front of an optional shared cache (the SQLite
    :class:`~axon_eval.judges.cache.VerdictCache` on one machine, through a
    :class:`~.faults.GuardedCache`, so a failed write or lookup never fails a judgement; ``None`` on a
    cluster). ``get`` looks in the journal first; ``put`` goes to the shared cache (the journals
    themselves are written by the run writer and the paid journal). Only judged records are served."""

    def __init__(self, records: Iterable[Any], shared: Any = None) -> None:
        if shared is not None and not isinstance(shared, GuardedCache):
            shared = GuardedCache(shared)
        self.shared = shared
        self.journal: dict[str, Any] = {}
        for r in records:
            if getattr(r, "cache_key", None) and getattr(r, "error", None) is None:
                self.journal[r.cache_key] = r
        self.journal_hits = 0
        self.stats = getattr(shared, "stats", None)

    def get(self, key: str) -> Any:
        hit = self.journal.get(key)
        if hit is not None:
            self.journal_hits += 1
            return hit
        return self.shared.get(key) if self.shared is not None else None

    def put(self, key: str, record: Any, *, view_sha256: str | None = None) -> None:
        if self.shared is not None:
            self.shared.put(key, record, view_sha256=view_sha256)


def journal_records(folder: str | Path, index: int) -> list[Any]:
    """The verdict records a partition already wrote (its committed part, the partial file a crash left,
    and its paid journal, :mod:`~axon_eval.runs.journal`): complete lines only."""
    path = verdicts_part(folder, index)
    out: list[Any] = []
    for candidate in (path, path.with_name(f".{path.name}.partial"), part_journal_path(folder, index)):
        out.extend(records_of(complete_lines(candidate)))
    return out


# -- stopping: a flag in the run folder every worker can see ---------------------------------------------
#: Seconds the driver waits, after Ctrl-C, for the running partitions to finish their requests in flight.
STOP_WAIT_S = 120.0


class StopFlag:
    """``parts/.stop`` of a run folder: when it exists, the run's partitions send no further request.
    :meth:`is_set` looks at the file at most every ``every_s`` seconds and, once it has seen it, always
    answers true."""

    def __init__(self, folder: str | Path, every_s: float = 0.1) -> None:
        self.path = Path(folder) / PARTS_DIR / ".stop"
        self.every_s = every_s
        self._seen = False
        self._checked = float("-inf")

    def set(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.touch()

    def clear(self) -> None:
        try:
            self.path.unlink()
        except FileNotFoundError:
            pass

    def is_set(self) -> bool:
        if self._seen:
            return True
        now = time.monotonic()
        if now - self._checked >= self.every_s:
            self._checked = now
            self._seen = self.path.exists()
        return self._seen


# -- judging one partition -----------------------------------------------------------------------------
@dataclass(frozen=True)
class PartitionTask:
    """Everything one partition needs, as plain values (picklable; no judge object, no open file):
    the ``evidence`` file and its ``byte_range``; ``skip`` lines (turn ids first seen in an earlier
    partition: line -> that first line); ``max_turns`` valid turns to judge (``None``: all; from
    ``limit``); the judge ``spec`` and ``rubric``; the run ``folder``; the shared ``cache_path`` (``None``:
    journal only); ``concurrency`` (request slots of this partition); ``chunk_size``;
    ``max_cost_usd`` (this partition's allotment of the budget, ``None``: no budget);
    ``compress_audit``."""

    index: int
    evidence: str
    byte_range: ByteRange
    spec: str
    rubric: Rubric
    folder: str
    skip: Mapping[int, int] = field(default_factory=dict)
    max_turns: int | None = None
    cache_path: str | None = None
    concurrency: int = 8
    chunk_size: int = 512
    max_cost_usd: float | None = None
    compress_audit: bool = False


@dataclass
class PartitionOutcome:
    """What a partition did: its ``counts`` (:class:`~.manifest.RunCounts` fields), ``usage`` totals
    (tokens, cost), ``calls`` (records not served from a cache), cache ``hits``/``misses``,
    ``journal_hits``, the ``invalid`` records of its range, whether the budget stopped it, and whether
    it was ``kept`` from an earlier, interrupted run (resume), the peak resident memory of the worker
    process that judged it (``VmHWM``, MiB; ``None`` where ``/proc`` is missing), and its ``summary``: the
    mergeable sums of its results (:func:`axon_eval.stats.mergeable.partition_summary`, computed on the
    worker, so the driver merges the headline figures without reading any part); the shared cache's
    failed writes and lookups (:class:`~.faults.GuardedCache`) and why it could not be opened; and
    ``unfinished``, set on a partition that did not finish (it has no record and no results part)."""

    index: int
    counts: dict[str, int]
    usage: dict[str, Any]
    calls: int
    hits: int
    misses: int
    journal_hits: int
    invalid: list[dict[str, Any]]
    budget_stopped: bool = False
    kept: bool = False
    peak_rss_mb: float | None = None
    summary: Any = field(default=None, repr=False, compare=False)
    cache_write_failures: int = 0
    cache_read_failures: int = 0
    cache_error: str | None = None
    #: Why the shared cache could not be opened (the partition judged without it), else ``None``.
    cache_unopened: str | None = None
    #: Why the partition did not finish, ``"stopped"`` (the run was asked to stop) or the error that ended
    #: it (a full disk); ``None`` for a finished partition.
    unfinished: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The partition's record (``parts/part-<index>.json``); the summary is sent to the driver only."""
        return {**{k: v for k, v in asdict(self).items() if k not in ("summary", "unfinished")}, "complete": True}


def read_outcome(folder: str | Path, index: int) -> PartitionOutcome | None:
    """A finished partition's record (``None`` when the partition has not finished: no record, or no
    results part beside it)."""
    path = part_record_path(folder, index)
    if not path.exists() or not results_part(folder, index).exists():
        return None
    data = json.loads(path.read_text(encoding="utf-8"))
    if not data.pop("complete", False):
        return None
    return PartitionOutcome(**{k: data[k] for k in PartitionOutcome.__dataclass_fields__ if k in data})


def _partition_turns(task: PartitionTask, invalid: list[dict[str, Any]]) -> Iterator[Turn]:
    """The valid turns of the range to judge, in order: cross-partition duplicates become invalid
    records (the single-process message) and at most ``max_turns`` turns are yielded (the rest of the
    range is still read, so its invalid lines are reported)."""
    taken = 0
    for line, item in iter_turns_range(task.evidence, task.byte_range):
        if isinstance(item, InvalidTurn):
            invalid.append(item.to_dict())
            continue
        first = task.skip.get(line)
        if first is not None:
            invalid.append(InvalidTurn(task.evidence, line, "turn_id",
                                       f"duplicate turn_id {item.turn_id!r} (first seen on line {first}); kept "
                                       "the first", item.turn_id).to_dict())
            continue
        if task.max_turns is not None and taken >= task.max_turns:
            continue
        taken += 1
        yield item


def _summary_of(results: Any, rubric: Rubric) -> Any:
    """The mergeable sums of a part's results (``None`` for a part without judged rows)."""
    from ..stats.mergeable import partition_summary

    judged = results[results["status"] == "judged"] if len(results) else results
    return partition_summary(results, rubric=rubric) if len(judged) else None


def peak_rss_mb() -> float | None:
    """This process's peak resident set size so far (Linux ``VmHWM``, MiB), ``None`` without ``/proc``."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def judge_partition(task: PartitionTask) -> PartitionOutcome:
    """Judge and score one partition and write it as a part of the run folder (module docstring).

    The same code as a single-process run: :func:`~.judging.segment_chunks` cuts whole turns into
    chunks, :func:`~.judging.judged_chunks` judges each through the cache (within the budget
    allotment), :func:`~.judging.score_and_write` scores and writes them through a
    :class:`~.writer.RunWriter`. A partition already finished (its record exists) is not judged again:
    its record is returned with ``kept=True``."""
    from .journal import PaidJournal
    from .judging import InFlight, StopRequested, judged_chunks, resolve_judge, rubric_sampler, score_and_write
    from .judging import segment_chunks
    from .writer import RunWriter, Usage

    done = read_outcome(task.folder, task.index)
    if done is not None:
        done.kept = True
        done.summary = _summary_of(read_parquet(results_part(task.folder, task.index)), task.rubric)
        return done
    folder = Path(task.folder)
    judge = resolve_judge(task.spec, task.rubric)
    shared, cache_warning = open_verdict_cache(task.cache_path) if task.cache_path is not None else (None, None)
    cache = JournalCache(journal_records(folder, task.index), shared)
    ledger = _PartitionLedger(task, cache, Usage(), cache_warning)
    journal = PaidJournal(part_journal_path(folder, task.index))
    writer = None
    try:
        writer = RunWriter(folder, compress_audit=task.compress_audit, part=task.index)
        chunks = segment_chunks(_partition_turns(task, ledger.invalid), task.rubric, task.chunk_size,
                                 rubric_sampler(task.rubric))
        judged = judged_chunks(judge, chunks, cache=cache,
                               concurrency=task.concurrency, usage=ledger.usage, max_cost_usd=task.max_cost_usd,
                               inflight=InFlight(journal), stop=StopFlag(folder).is_set)
        try:
            score_and_write(judged, writer, ledger.usage, task.rubric)
        except StopRequested:  # the chunk's paid verdicts are in the paid journal: a resume serves them
            writer.abort()
            return ledger.unfinished("stopped")
        outcome = ledger.finished(writer)
        writer.commit(record=(part_record_path(folder, task.index), outcome.to_json()))
        outcome.summary = _summary_of(writer.results_frame(), task.rubric)
        return outcome
    except Exception as exc:
        if writer is not None:
            writer.abort(torn=is_disk_full(exc))
        if is_disk_full(exc):  # the driver says it in one line: no traceback on the worker
            return ledger.unfinished(f"{type(exc).__name__}: {exc}")
        raise
    except BaseException:
        if writer is not None:
            writer.abort()
        raise
    finally:
        journal.close()
        if shared is not None:
            shared.close()


class _PartitionLedger:
    """What one partition's judging spent and met, turned into its :class:`PartitionOutcome`: the usage,
    the invalid lines read, and the shared cache's hits, misses and failures counted from the partition's
    start."""

    def __init__(self, task: PartitionTask, cache: JournalCache, usage: Any, cache_warning: str | None) -> None:
        self.task, self.cache, self.usage, self.cache_warning = task, cache, usage, cache_warning
        self.invalid: list[dict[str, Any]] = []
        self.stats = getattr(cache.shared, "stats", None)
        self.before = (self.stats.hits, self.stats.misses) if self.stats is not None else (0, 0)

    def unfinished(self, reason: str) -> PartitionOutcome:
        usage = self.usage
        return PartitionOutcome(self.task.index, {}, dict(usage.totals), usage.records - usage.cached, 0, 0,
                                self.cache.journal_hits, self.invalid, unfinished=reason)

    def finished(self, writer: Any) -> PartitionOutcome:
        from .writer import BUDGET_ERROR

        usage, stats, guarded = self.usage, self.stats, self.cache.shared
        stopped = self.task.max_cost_usd is not None and writer.budget_errors(BUDGET_ERROR) > 0
        return PartitionOutcome(
            self.task.index, writer.counts.model_dump(), dict(usage.totals), usage.records - usage.cached,
            (stats.hits - self.before[0]) if stats is not None else usage.cached,
            (stats.misses - self.before[1]) if stats is not None else usage.records - usage.cached,
            self.cache.journal_hits, self.invalid, stopped, peak_rss_mb=peak_rss_mb(),
            cache_write_failures=guarded.write_failures if guarded is not None else 0,
            cache_read_failures=guarded.lookup_failures if guarded is not None else 0,
            cache_error=guarded.first_error if guarded is not None else None, cache_unopened=self.cache_warning)


# -- the engine: Dask (dask.distributed) ----------------------------------------------------------------
#: The environment variable naming an existing Dask scheduler (as ``--scheduler``).
SCHEDULER_ENV = "DASK_SCHEDULER_ADDRESS"


@dataclass
class Engine:
    """A connected ``distributed.Client``: ``slots`` tasks it runs at once (worker threads), whether its
    workers share this machine's disk (``local``: a local cluster, or a scheduler on loopback), the
    cluster this run started (closed at the end) and the dashboard's address."""

    client: Any
    slots: int
    local: bool
    cluster: Any = None
    dashboard: str | None = None

    def close(self) -> None:
        if self.cluster is not None:
            self.client.close()
            self.cluster.close()


def notebook_client() -> Any:
    """The ``distributed.Client`` this process already made (in a notebook: ``Client()`` in a cell), else
    ``None``. Looked for only when dask.distributed is already imported, so a run that never touched Dask
    stays single-process and imports nothing."""
    import sys

    if "distributed" not in sys.modules:
        return None
    from distributed import default_client

    try:
        client = default_client()
    except ValueError:  # no client made
        return None
    return client if getattr(client, "status", "") == "running" else None


def connect(workers: int | None = None, scheduler: str | None = None, client: Any = None) -> Engine | None:
    """The engine of a run: ``client`` (a ``distributed.Client`` the caller made), else ``scheduler`` (or
    ``$DASK_SCHEDULER_ADDRESS``: an existing cluster, Slurm/PBS through dask-jobqueue, Kubernetes,
    Coiled), else ``workers`` worker processes on a new local cluster, else the client this process
    already made (:func:`notebook_client`); ``None`` when there is none (a single-process run)."""
    scheduler = scheduler or os.environ.get(SCHEDULER_ENV) or None
    if client is None and scheduler is None and workers is None:
        client = notebook_client()
        if client is None:
            return None
    try:
        from distributed import Client, LocalCluster
    except ImportError as exc:  # pragma: no cover - dask is a dependency
        raise ValueError("a partitioned run needs dask.distributed (pip install 'dask[distributed]')") from exc
    cluster = None
    if client is None and scheduler is not None:
        client = Client(scheduler)
    elif client is None:
        if workers is None or workers < 1:
            raise ValueError(f"workers must be >= 1, got {workers!r}")
        # one thread per worker process: a partition's judging is CPU-bound (the offline judge) or bounded
        # by its own request slots (an API judge); memory_limit=0: a worker is never paused or killed for
        # memory by Dask's heuristics (a partition's memory is bounded by its chunk size)
        # preload: the workers ignore SIGINT (dask_setup), the driver stops the run on Ctrl-C
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0",
                               memory_limit=0, preload=[__name__])
        client = Client(cluster)
    info = client.scheduler_info()
    slots = sum(int(w.get("nthreads", 1)) for w in info.get("workers", {}).values()) or 1
    address = str(getattr(client, "scheduler", None) and client.scheduler.address or scheduler or "")
    local = cluster is not None or any(h in address for h in ("127.0.0.1", "localhost", "inproc://"))
    return Engine(client, slots, local, cluster, getattr(client, "dashboard_link", None))


@dataclass
class PartitionedRun:
    """What the partitions of a run did together (sums of their outcomes): ``counts``, ``usage``,
    ``calls``, cache ``hits``/``misses``/``journal_hits``, the run's ``invalid`` records (file order),
    ``budget_stopped``, ``n_partitions`` and ``kept`` (finished before a resume)."""

    counts: dict[str, int]
    usage: dict[str, Any]
    calls: int
    hits: int
    misses: int
    journal_hits: int
    invalid: list[dict[str, Any]]
    budget_stopped: bool
    n_partitions: int
    kept: int
    worker_peak_mb: float | None = None
    summary: Any = None
    cache_write_failures: int = 0
    cache_read_failures: int = 0
    #: The first cache failure a partition reported, and why a worker could not open the cache.
    cache_error: str | None = None
    cache_unopened: str | None = None

    def cache_warning(self, cache_path: Any) -> str | None:
        """The manifest's one warning about the shared cache's failures (:func:`~.faults.failure_warning`),
        else why a worker judged without it, else ``None``."""
        return (failure_warning(cache_path, self.cache_write_failures, self.cache_read_failures, self.cache_error)
                or self.cache_unopened)


def merge_outcomes(outcomes: Sequence[PartitionOutcome]) -> PartitionedRun:
    """The sums of the partitions' outcomes (the manifest's counts are the sum of its parts)."""
    counts: dict[str, int] = {}
    usage: dict[str, Any] = {}
    for o in outcomes:
        for k, v in o.counts.items():
            if isinstance(v, int | float) and not isinstance(v, bool):
                counts[k] = counts.get(k, 0) + int(v)
        for k, v in o.usage.items():
            if v is not None:
                usage[k] = (usage.get(k) or 0) + v
    # partitions are consecutive ranges and each lists its records in file order: concatenated in
    # partition order they are in file order, each line's problems in the order they were found
    invalid = [r for o in sorted(outcomes, key=lambda o: o.index) for r in o.invalid]
    fresh = [o for o in outcomes if not o.kept]  # a kept partition's failures were reported when it ran
    return PartitionedRun(counts, usage, sum(o.calls for o in outcomes), sum(o.hits for o in outcomes),
                          sum(o.misses for o in outcomes), sum(o.journal_hits for o in outcomes), invalid,
                          any(o.budget_stopped for o in outcomes), len(outcomes), sum(o.kept for o in outcomes),
                          max((o.peak_rss_mb for o in outcomes if o.peak_rss_mb is not None), default=None),
                          _merge([o.summary for o in outcomes]),
                          sum(o.cache_write_failures for o in fresh), sum(o.cache_read_failures for o in fresh),
                          next((o.cache_error for o in fresh if o.cache_error), None),
                          next((o.cache_unopened for o in fresh if o.cache_unopened), None))


def _merge(summaries: Sequence[Any]) -> Any:
    """The partitions' mergeable sums merged (``None`` when no partition judged anything)."""
    from ..stats.mergeable import merge_summaries

    present = [s for s in summaries if s is not None]
    return merge_summaries(present) if present else None


def partitions_in_flight(slots: int, concurrency: int, sends_requests: bool) -> tuple[int, int]:
    """``(partitions at once, request slots per partition)``. A judge that sends requests (a language
    model) never has more than ``concurrency`` in flight across the cluster: at most that many partitions
    run at once, each with ``max(1, concurrency // k)`` slots. A judge that sends none (the offline
    heuristic) runs a partition on every slot."""
    if not sends_requests:
        return max(1, slots), max(1, concurrency)
    k = max(1, min(slots, concurrency))
    return k, max(1, concurrency // k)


def partition_limits(scans: Sequence[PartitionScan], skip: Mapping[int, Mapping[int, int]],
                     limit: int | None) -> dict[int, int | None]:
    """Each partition's share of ``limit`` (the first ``limit`` valid turns of the file, in order)."""
    if limit is None:
        return {s.index: None for s in scans}
    out, left = {}, int(limit)
    for s in sorted(scans, key=lambda s: s.index):
        valid = s.n_valid - len(skip.get(s.index, {}))
        out[s.index] = max(0, min(valid, left))
        left -= out[s.index]
    return out


def _merge_files(parts: Sequence[Path], target: Path) -> None:
    """Concatenate part files into ``target`` through a partial file (gzip members concatenate into a
    valid gzip stream)."""
    import shutil

    partial = target.with_name(f".{target.name}.partial")
    try:
        with partial.open("wb") as out:
            for p in parts:
                if p.exists():
                    with p.open("rb") as fh:
                        shutil.copyfileobj(fh, out, 1 << 20)
    except BaseException:  # a full disk: no torn file is left (the parts stay; a resume merges them again)
        partial.unlink(missing_ok=True)
        raise
    os.replace(partial, target)


def merge_parts(folder: str | Path, n_partitions: int, *, compress_audit: bool = False) -> None:
    """The partitions' verdicts, audit and members as the folder's ``verdicts.jsonl``, ``audit.jsonl``
    and ``members.parquet`` (partition order); the parts stay for a later resume or audit."""
    folder = Path(folder)
    parts = folder / PARTS_DIR
    stems = [part_stem(i) for i in range(n_partitions)]
    _merge_files([parts / f"verdicts-{s}.jsonl" for s in stems], folder / "verdicts.jsonl")
    audit = "audit.jsonl.gz" if compress_audit else "audit.jsonl"
    _merge_files([parts / audit.replace("audit", f"audit-{s}") for s in stems], folder / audit)
    members = [parts / f"members-{s}.parquet" for s in stems if (parts / f"members-{s}.parquet").exists()]
    if members:
        import pyarrow.parquet as pq

        writer = None
        partial = folder / ".members.parquet.partial"
        try:
            for m in members:
                table = pq.read_table(m)
                writer = writer or pq.ParquetWriter(str(partial), table.schema)
                writer.write_table(table)
            writer.close()
        except BaseException:
            partial.unlink(missing_ok=True)
            raise
        os.replace(partial, folder / "members.parquet")


def run_partitions(engine: Engine | None, evidence: str | Path, folder: str | Path, spec: str, rubric: Rubric, *,
                   limit: int | None = None, cache_path: str | Path | None = None, concurrency: int = 8,
                   chunk_size: int = 512, max_cost_usd: float | None = None, compress_audit: bool = False,
                   partition_bytes: int = PARTITION_BYTES, progress: bool = True,
                   on_partition: Any = None, sends_requests: bool = True) -> PartitionedRun:
    """Judge every partition of ``evidence`` into ``folder`` (module docstring) and merge the parts.

    ``engine`` runs the partitions (``None``: one after another in this process, the same functions);
    ``cache_path`` is the shared SQLite cache (used by the workers when they share this machine's disk,
    else filled from the journals here after the run); ``sends_requests``: the judge calls an API, so
    ``concurrency`` bounds the requests across the cluster (:func:`partitions_in_flight`);
    ``on_partition(outcome, done, total)`` is called as each partition finishes (the heartbeat). Finished
    partitions of an earlier attempt are kept."""
    from ..evidence import plan_byte_ranges

    evidence, folder = str(evidence), str(folder)
    ranges = plan_byte_ranges(evidence, partition_bytes)
    if engine is None:
        scans = [scan_partition(evidence, r) for r in ranges]
    else:
        scans = engine.client.gather(engine.client.map(scan_partition, [evidence] * len(ranges), ranges, pure=False))
    skip = cross_partition_duplicates(scans)
    in_flight, per_partition = partitions_in_flight(engine.slots if engine is not None else 1, concurrency,
                                                    sends_requests)
    shared_cache = str(cache_path) if cache_path is not None and (engine is None or engine.local) else None

    def task(r: ByteRange, allot: float | None) -> PartitionTask:
        return PartitionTask(r.index, evidence, r, spec, rubric, folder, skip.get(r.index, {}), limits[r.index],
                             shared_cache, per_partition, chunk_size, allot, compress_audit)

    limits = partition_limits(scans, skip, limit)
    dispatch = _Dispatch(task, len(ranges), max_cost_usd, in_flight, on_partition,
                         _progress_bar(progress, len(ranges), spec))
    dispatch.run(engine, ranges, folder)
    merge_parts(folder, len(ranges), compress_audit=compress_audit)
    if cache_path is not None and shared_cache is None:
        fill_cache_from_journals(folder, len(ranges), cache_path)
    merged = merge_outcomes(sorted(dispatch.outcomes, key=lambda o: o.index))
    merged.counts.setdefault("segments", 0)
    merged.summary = dispatch.summary
    return merged


def _progress_bar(progress: bool, total: int, spec: str) -> Any:
    """A tqdm bar over the partitions, or ``None`` without progress."""
    if not progress:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=f"partitions [{spec}]", unit="partition")


class _Dispatch:
    """Hands partitions out and takes their outcomes: the budget's allotments (what is left of
    ``max_cost_usd`` shared among the partitions that may run at once), the summary merged as outcomes
    come (one summary held), the progress bar and the heartbeat."""

    def __init__(self, task: Any, total: int, max_cost_usd: float | None, in_flight: int, on_partition: Any,
                 bar: Any) -> None:
        self.make_task, self.total, self.max_cost_usd, self.in_flight = task, total, max_cost_usd, in_flight
        self.on_partition, self.bar = on_partition, bar
        self.spent = 0.0
        self.promised: dict[int, float] = {}
        self.outcomes: list[PartitionOutcome] = []
        self.summary: Any = None
        self.running: dict[str, Any] = {}

    def task(self, r: ByteRange) -> PartitionTask:
        allot = None
        if self.max_cost_usd is not None:
            remaining = max(0.0, float(self.max_cost_usd) - self.spent - sum(self.promised.values()))
            allot = remaining / max(1, self.in_flight - len(self.promised))
            self.promised[r.index] = allot
        return self.make_task(r, allot)

    def take(self, outcome: PartitionOutcome) -> None:
        """A partition's outcome: finished (recorded), or unfinished (a full disk on the worker: raised)."""
        if outcome.unfinished is not None:
            if outcome.unfinished != "stopped":
                raise OSError(errno.ENOSPC, f"partition {outcome.index}: {outcome.unfinished}")
            return
        self.summary = _merge([self.summary, outcome.summary])
        outcome.summary = None
        self.promised.pop(outcome.index, None)
        self.spent += float(outcome.usage.get("cost_usd") or 0.0)
        self.outcomes.append(outcome)
        if self.bar is not None:
            self.bar.update(1)
        if self.on_partition is not None:
            self.on_partition(outcome, len(self.outcomes), self.total)

    def run(self, engine: Engine | None, ranges: Sequence[ByteRange], folder: str) -> None:
        """Every partition, here one after another or on ``engine``'s cluster at most ``in_flight`` at once."""
        stop = StopFlag(folder)
        stop.clear()  # a flag an interrupted attempt left
        try:
            if engine is None:
                for r in ranges:
                    self.take(judge_partition(self.task(r)))
            else:
                self._on_cluster(engine, list(ranges))
        except BaseException:
            # Ctrl-C or a failed partition: hand out nothing more, let the running partitions finish the
            # requests they sent (and keep the partitions that finish), then raise
            if engine is not None and self.running:
                stop.set()
                _drain(engine, self.running, self.take)
            raise
        finally:
            if self.bar is not None:
                self.bar.close()

    def _on_cluster(self, engine: Engine, queue: list[ByteRange]) -> None:
        from distributed import as_completed

        futures = as_completed()

        def submit(r: ByteRange) -> Any:
            key = f"axon-partition-{r.index}-{os.getpid()}-{id(futures)}"  # unique per run and driver
            fut = engine.client.submit(judge_partition, self.task(r), pure=False, key=key)
            self.running[fut.key] = fut
            return fut

        while queue and futures.count() < self.in_flight:
            futures.add(submit(queue.pop(0)))
        for fut in futures:
            self.running.pop(fut.key, None)
            self.take(fut.result())
            if queue:
                futures.add(submit(queue.pop(0)))


def _drain(engine: Engine, running: Mapping[str, Any], take: Any) -> None:
    """Wait (at most :data:`STOP_WAIT_S`; a second Ctrl-C stops waiting) for the ``running`` partitions,
    which the stop flag has told to send nothing more; hand each one that finished to ``take``; cancel
    the rest. Never raises: the caller raises what stopped the run."""
    from distributed import wait

    futures = list(running.values())
    try:
        wait(futures, timeout=STOP_WAIT_S)
    except BaseException:  # the wait timed out, or a second Ctrl-C: stop waiting
        pass
    for fut in futures:
        try:
            if fut.status == "finished":
                take(fut.result(timeout=5))
        except BaseException:  # a partition that failed, or a second Ctrl-C: it is not kept
            continue
    try:
        engine.client.cancel([f for f in futures if f.status not in ("finished", "error")])
    except BaseException:
        pass


def dask_setup(worker: Any) -> None:
    """Start-up of a worker of the local cluster :func:`connect` makes (a Dask preload): the worker ignores
    SIGINT, so a Ctrl-C at the terminal (sent to the whole process group) reaches the driver alone, which
    stops the run cleanly (module docstring)."""
    import signal
    import threading

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def fill_cache_from_journals(folder: str | Path, n_partitions: int, cache_path: str | Path) -> int:
    """Copy the partitions' judged verdicts into the local SQLite cache (one writer, on the driver's disk);
    returns how many were stored (a cache that cannot be opened or written stores none: the journals keep
    the verdicts)."""
    stored = 0
    cache, _warning = open_verdict_cache(cache_path)
    if cache is None:  # its disk is full or it is locked: the journals keep the verdicts
        return 0
    try:
        for i in range(n_partitions):
            for record in journal_records(folder, i):
                if record.cache_key and record.error is None and record.cache_key not in cache:
                    cache.put(record.cache_key, record)
                    stored += 1
    finally:
        cache.close()
    return stored - cache.write_failures


# -- finished partitions ---------------------------------------------------------------------------
def finished_outcomes(folder: str | Path) -> list[PartitionOutcome]:
    """The records of the partitions of ``folder`` that finished."""
    out = []
    for path in sorted((Path(folder) / PARTS_DIR).glob("part-*.json")):
        outcome = read_outcome(folder, int(path.stem.split("-")[1]))
        if outcome is not None:
            out.append(outcome)
    return out
