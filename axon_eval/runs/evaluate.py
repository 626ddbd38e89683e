"""``evaluate``: judge and score every segment of an evidence file, streaming, into a new run folder.

The input is read, judged, scored and written in chunks of about ``chunk_size`` segments, so peak memory
grows with the chunk, not the file: ``verdicts.jsonl`` and ``audit.jsonl`` are appended chunk by chunk
and the results part ``results/part-00000.parquet`` gets one row group per chunk (each written under a hidden ``.partial`` name and
moved into place at the end). Only the results table (one small row per segment) is kept for the
returned :class:`~axon_eval.runs.load.Run`; its verdicts and audit load lazily.

Order of events: the input is opened and checked for at least one valid turn (none: ``NoValidTurnsError``
and no folder); the folder and a ``running`` manifest are written; for a paid judge the estimated cost
is computed (a streaming pre-pass), recorded and printed; chunks are judged through the verdict cache;
the manifest is finished with ``complete``, ``partial`` or ``failed`` (see :mod:`.manifest`). Any
exception after the folder exists keeps what was written and marks the run ``failed``.

Ctrl-C (``KeyboardInterrupt``) stops the judging at once; the judgements of the chunk in flight that had
finished are written too (a segment with only some of its samples done gets unjudged rows for the rest,
with the reason), the manifest is marked ``interrupted`` with the tokens and cost of what was written and
``counts.planned_segments`` (the input's segments within the limit), and
:class:`~.manifest.RunInterrupted` is raised with the folder and ``judged of planned``.

Nothing paid is lost: every judgement paid for is appended to the run's paid journal (``paid.jsonl``,
:mod:`.journal`) the moment it arrives, and what a resume needs (the verdict cache path among it) is in
the manifest before the first request, so a run killed at any moment (SIGKILL) is finished by
``evaluate --resume`` without paying again, and the manifest's tokens and cost are the journals' sums
over every attempt. The verdict cache is used through :class:`~.faults.GuardedCache`: a failed write
never turns a paid verdict into an unjudged row, it is counted (``cache_write_failures``) and said once.
A full disk marks the run ``failed`` and raises :class:`~.faults.DiskFullError` (no file under its final
name is torn). A partitioned run stops on Ctrl-C as :mod:`.partitioned` says, and its manifest is written
after its workers stopped.

Budget: with ``max_cost_usd``, before each view is sent the reported cost so far plus the view's
estimate (:mod:`.budget`) must stay within the budget; views beyond it are kept as unjudged rows with
the reason, and the run ends ``partial``.
"""

from __future__ import annotations

import contextlib
import itertools
import sys
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any


from ..evidence import (
    InvalidTurn,
    Turn,
    describe_invalid_lines,
    invalid_lines,
    iter_turns,
    split_segments,
)
from ..rubric import Rubric
from .budget import estimate_cost, format_usd, is_paid, unpriced_models
from .judging import InFlight, judge_chunk, resolve_judge, rubric_sampler, segment_chunks
from .io import (
    atomic_write_text,
    default_cache_path,
    default_runs_dir,
    file_sha256,
    iso,
    new_run_dir,
    require_file,
    to_jsonable,
    utc_now,
    write_json,
    write_jsonl,
)
from .faults import (
    RESERVE_BYTES,
    DiskFullError,
    GuardedCache,
    SpaceReserve,
    folder_bytes,
    format_bytes,
    free_bytes,
    is_disk_full,
    open_verdict_cache,
    space_needed,
)
from .journal import PAID_JOURNAL, PaidJournal, complete_lines, record_spend
from .load import Run
from .manifest import NoValidTurnsError, RunCounts, RunInterrupted, RunManifest, mark_alive, status_for
from .provenance import repository_root, git_info, package_versions, redact_secrets, relative_to_root
from .options import EvaluationOptions
from .writer import RunWriter, Usage

if TYPE_CHECKING:  # pragma: no cover
    from ..judges.base import Judge


# -- judges and caches -------------------------------------------------------------------------------
def prompt_mismatches(provenance: Sequence[Mapping[str, Any]], rubric: Rubric) -> list[str]:
    """The prompt versions (identities ``<name>+<hash>``) in a judge's ``provenance``
    (:func:`judge_provenance`: one entry per language-model judge inside it) whose name is not the rubric's
    ``prompt_version`` (the free-text form of the rubric's prompt counts as the rubric's; a prompt read from
    a file, ``file:<stem>``, never does); empty for code judges."""
    from ..judges.prompt import FREE_TEXT_SUFFIX, prompt_name

    versions = {str(p.get("prompt_version")) for p in provenance if p.get("prompt_version")}
    return sorted(v for v in versions if prompt_name(v).removesuffix(FREE_TEXT_SUFFIX) != rubric.prompt_version)


def judge_label(judge: Any) -> str:
    """The spec a judge was built from, else its id (used in folder names)."""
    return str(getattr(judge, "spec", None) or judge.judge_id)


def judge_provenance(judge: Any) -> list[dict[str, Any]]:
    """What the manifest records of every API judge inside ``judge`` (:func:`axon_eval.judges._llm.judge_provenance`),
    made JSON-safe and scrubbed of secrets."""
    from ..judges._llm import judge_provenance as walk

    return [redact_secrets(to_jsonable(entry)) for entry in walk(judge)]


@contextlib.contextmanager
def open_cache(cache: Any, out_dir: Path) -> Iterator[Any]:
    """``cache``: a VerdictCache, a path, ``None``/``True`` (default path) or ``False`` (none); yields it
    as :func:`open_run_cache` does, without the warning."""
    with open_run_cache(cache, out_dir) as (opened, _warning):
        yield opened


@contextlib.contextmanager
def open_run_cache(cache: Any, out_dir: Path) -> Iterator[tuple[Any, str | None]]:
    """The cache a run judges through and a warning: ``cache`` is a VerdictCache (or any object with
    ``get``/``put``), a path, ``None``/``True`` (the default path, :func:`~.io.default_cache_path`) or
    ``False`` (none: ``(None, None)``). Every cache is used through a :class:`~.faults.GuardedCache`, so
    a failed write or lookup never costs a verdict; a cache file that cannot be opened because its disk is
    full or it is locked gives ``(None, warning)`` (:func:`~.faults.open_verdict_cache`)."""
    if cache is False:
        yield None, None
        return
    if cache is None or cache is True or isinstance(cache, str | Path):
        path = default_cache_path(out_dir) if cache is None or cache is True else Path(cache)
        opened, warning = open_verdict_cache(path)
        try:
            yield opened, warning
        finally:
            if opened is not None:
                opened.close()
        return
    yield (cache if isinstance(cache, GuardedCache) else GuardedCache(cache)), None


def _cache_counts(cache: Any) -> tuple[int, int] | None:
    stats = getattr(cache, "stats", None)
    if stats is None:
        return None
    return int(getattr(stats, "hits", 0)), int(getattr(stats, "misses", 0))


# -- the input stream ----------------------------------------------------------------------------------
def _invalid_dict(i: InvalidTurn | Mapping[str, Any]) -> dict[str, Any]:
    return i.to_dict() if isinstance(i, InvalidTurn) else dict(i)


def _turn_stream(turns: Iterable[Turn] | Path, invalid_sink: list[dict[str, Any]]) -> Iterator[Turn]:
    """Valid turns in order; invalid line records go to ``invalid_sink`` as they are met."""
    source: Iterable[Any] = iter_turns(turns) if isinstance(turns, Path) else turns
    for item in source:
        if isinstance(item, InvalidTurn):
            invalid_sink.append(item.to_dict())
        elif isinstance(item, Turn):
            yield item
        else:
            raise TypeError(f"turns must be Turn objects or an evidence file path; got {type(item).__name__}")


def _limited(stream: Iterator[Turn], limit: int | None) -> Iterator[Turn]:
    """The first ``limit`` turns; the rest of the stream is still consumed (its invalid lines are reported)."""
    if limit is None:
        yield from stream
        return
    yield from itertools.islice(stream, limit)
    for _ in stream:
        pass


def _rubric_record(rubric: Rubric) -> dict[str, Any]:
    return rubric.model_dump(mode="json")


def read_existing_manifest(folder: Path) -> tuple[RunManifest | None, str | None]:
    """The manifest already in ``folder`` (the notebook runner's, or a study's) and ``None``, or ``None``
    and a warning saying why it could not be read (it is then replaced, and the run says so); ``(None,
    None)`` when there is none."""
    if not (folder / "manifest.json").exists():
        return None, None
    try:
        return RunManifest.read(folder), None
    except Exception as exc:  # a broken manifest is reported in the one that replaces it, never ignored
        reason = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:300] if str(exc).strip() else ''}"
        return None, (f"the manifest.json already in {folder.name} could not be read ({reason.strip()}); it was "
                      "replaced, so what it recorded (the notebook, its parameters) is missing here")


def _prepare_dir(run_dir: str | Path | None, out_dir: Path, name: str, judge: str | None,
                 started: datetime) -> tuple[Path, dict[str, Any] | None, bool, str | None]:
    """The run folder to write (fresh, or a given one that holds no results yet), any notebook info
    already in its manifest (written there by :mod:`axon_eval.runs.notebook`), whether params.json exists, and
    a warning when that manifest could not be read (:func:`read_existing_manifest`)."""
    if run_dir is None:
        return new_run_dir(out_dir, name, judge, now=started), None, False, None
    folder = Path(run_dir)
    folder.mkdir(parents=True, exist_ok=True)
    taken = [p.name for p in (folder / "results", folder / "results.parquet", folder / "verdicts.jsonl") if p.exists()]
    if taken:
        raise FileExistsError(f"run folder {folder} already holds {taken}; runs are never overwritten")
    existing, warning = read_existing_manifest(folder)
    notebook = existing.notebook if existing is not None else None
    return folder, notebook, (folder / "params.json").exists(), warning


def fail_run(folder: Path, manifest: RunManifest, exc: BaseException) -> None:
    """Mark a run failed, keeping whatever it had (never raises over the original error)."""
    manifest.status = "failed"
    manifest.failure = "no_valid_turns" if isinstance(exc, NoValidTurnsError) else "error"
    manifest.error = redact_secrets(f"{type(exc).__name__}: {exc}".strip())
    manifest.ended_at = iso(utc_now())
    with contextlib.suppress(Exception):
        manifest.write(folder)


def record_git(folder: Path, manifest: RunManifest, root: Path | None) -> None:
    """Git commit and dirty flag into the manifest; a dirty tree's diff into ``git.diff`` and a warning."""
    git = git_info(root, with_diff=True)
    manifest.git_commit, manifest.git_dirty = git["commit"], git["dirty"]
    if git.get("dirty") is True:
        atomic_write_text(folder / "git.diff", git.get("diff") or "")
        manifest.git_diff = "git.diff"
        message = (f"the working tree is dirty: results are not reproducible from commit {git['commit'][:12]} "
                   "alone; its diff is saved as git.diff")
        manifest.warnings.append(message)
        print(f"WARNING: {message}", file=sys.stderr)


#: The error of a sample whose judgement had not finished when the run was interrupted.
def count_segments(turns: Iterable[Turn] | Path, limit: int | None = None) -> int:
    """The segments of the valid turns of ``turns`` (a list or an evidence file, read afresh), within the
    first ``limit`` valid turns."""
    stream: Iterable[Turn] = _turn_stream(turns, [])
    if limit is not None:
        stream = itertools.islice(stream, limit)
    return sum(len(split_segments(turn)) for turn in stream)


def _interrupted(folder: Path, manifest: RunManifest, writer: RunWriter | None, judge: Judge, rubric: Rubric,
                 inflight: InFlight, usage: Usage, *, turn_source: Iterable[Turn] | Path, limit: int | None,
                 invalid_list: list[dict[str, Any]], cache: Any = None) -> RunInterrupted:
    """Keep what an interrupted run judged (see the module docstring) and mark its manifest; returns the
    :class:`RunInterrupted` to raise. A partitioned run's counts are its finished partitions' (recorded
    in ``partitions['finished']``); the spend is every paid journal's (:func:`~.journal.record_spend`),
    so verdicts paid in unfinished partitions are recorded too. A second Ctrl-C while counting the input
    leaves the total unknown."""
    if writer is not None:
        try:
            items, records = inflight.finished(judge)
            if records:
                usage.add(records)
                writer.add_scored(items, records, rubric, len({item.turn_id for item in items}))
            writer.commit()
        except Exception as exc:  # keep what is on disk; the manifest says why the in-flight chunk is missing
            writer.abort()
            manifest.warnings.append(f"the judgements in flight at the interrupt could not be written: "
                                     f"{type(exc).__name__}: {exc}")
    with contextlib.suppress(Exception):
        write_jsonl(folder / "invalid.jsonl", invalid_list)
    counts = writer.counts if writer is not None else RunCounts()
    if writer is None and (folder / "parts").is_dir():  # a partitioned run: its finished partitions' sums
        from .partitioned import finished_outcomes, merge_outcomes

        _finished_counts(folder, manifest)
        counts = manifest.counts
        invalid_list = [*invalid_list, *merge_outcomes(finished_outcomes(folder)).invalid]
    counts.invalid = len(invalid_lines(invalid_list))
    try:
        counts.planned_segments = max(count_segments(turn_source, limit), counts.segments)
    except (KeyboardInterrupt, Exception):  # a second Ctrl-C, or an input that changed: total unknown
        counts.planned_segments = None
    manifest.counts = counts
    with contextlib.suppress(Exception):
        record_spend(manifest, folder, usage.totals)
    note_cache_failures(manifest, cache)
    if manifest.cache_path is not None and writer is not None:
        manifest.cache_hits, manifest.cache_misses = usage.cached, usage.records - usage.cached
    manifest.status, manifest.failure = "interrupted", None
    total = "?" if counts.planned_segments is None else counts.planned_segments
    manifest.error = f"interrupted (Ctrl-C) after {counts.judged} of {total} segments judged"
    manifest.ended_at = iso(utc_now())
    with contextlib.suppress(Exception):
        manifest.write(folder)
    return RunInterrupted(folder, counts.judged, counts.planned_segments, cached=manifest.cache_path is not None,
                          resumable=manifest.notebook is None and manifest.kind in ("evaluate", "rejudge"))


# -- partitioned runs (a Dask cluster) ------------------------------------------------------------------
def _wants_partitions(opts: EvaluationOptions, turns: Any, judge: Judge) -> bool:
    """Whether the run is partitioned (``workers``, ``scheduler``, ``client`` or
    ``$DASK_SCHEDULER_ADDRESS``); refuses what a partitioned run cannot do before anything starts."""
    import os

    from .partitioned import SCHEDULER_ENV, notebook_client

    if (opts.workers is None and opts.scheduler is None and opts.client is None
            and not os.environ.get(SCHEDULER_ENV) and notebook_client() is None):
        return False
    if not isinstance(turns, str | Path):
        raise ValueError("a partitioned run (workers, scheduler or client) reads an evidence file: pass its path")
    if opts.batch:
        raise ValueError("Message Batches are one submission from this process: run batch=True (--batch) without "
                         "workers or a scheduler")
    if not getattr(judge, "spec", None):
        raise ValueError(f"a partitioned run rebuilds the judge on every worker from its spec; judge "
                         f"{judge.judge_id!r} has none (pass a spec string such as 'heuristic')")
    return True


def _judge_partitioned(engine: Any, folder: Path, evidence: Path, judge: Judge, rubric: Rubric,
                       manifest: RunManifest, opts: EvaluationOptions, out: Path,
                       invalid_list: list[dict[str, Any]]) -> bool:
    """Judge ``evidence`` partition by partition on ``engine`` (:mod:`.partitioned`) into ``folder``;
    fills the manifest (counts: the sum of the parts; tokens, cost, cache figures; the partitions) and
    ``invalid_list`` (the file's invalid lines, file order). Returns whether the budget stopped judging."""
    from .partitioned import default_partition_bytes, run_partitions

    partition_bytes = opts.partition_bytes or default_partition_bytes(
        evidence.stat().st_size, engine.slots if engine is not None else 1)
    manifest.partitions = ({"bytes": partition_bytes, "engine": "this process", "slots": 1, "workers_share_disk": True}
                           if engine is None else
                           {"bytes": partition_bytes, "engine": "dask.distributed", "slots": engine.slots,
                            "workers_share_disk": engine.local})
    if engine is not None and engine.dashboard:
        print(f"Dask dashboard: {engine.dashboard}", file=sys.stderr)
    cache_path = None
    if opts.cache is not False:
        cache_path = Path(opts.cache) if isinstance(opts.cache, str | Path) else default_cache_path(out)
        if opts.cache is not None and opts.cache is not True and not isinstance(opts.cache, str | Path):
            cache_path = getattr(opts.cache, "path", None)
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
    manifest.write(folder)
    done = run_partitions(engine, evidence, folder, judge.spec, rubric, limit=opts.limit, cache_path=cache_path,
                          concurrency=opts.concurrency, chunk_size=opts.chunk_size, max_cost_usd=opts.max_cost_usd,
                          compress_audit=opts.compress_audit, partition_bytes=partition_bytes,
                          progress=opts.progress, on_partition=lambda o, k, n: _heartbeat(folder, manifest, k, n),
                          sends_requests=bool(judge_provenance(judge)))
    invalid_list.extend(done.invalid)
    if done.summary is not None:  # the headline figures merged from the parts' sums: no part is read here
        from ..stats.mergeable import headline_from_summary

        write_json(folder / HEADLINE_FILE, {"method": "merged from the partitions' sums (Poisson bootstrap over "
                                                      "turns)", "rows": to_jsonable(headline_from_summary(
                                                          done.summary, allow_mixed=True).to_dict("records"))})
    counts = RunCounts(**{k: v for k, v in done.counts.items() if k in RunCounts.model_fields})
    counts.invalid = len(invalid_lines(invalid_list))
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
    write_jsonl(folder / "invalid.jsonl", invalid_list)
    return done.budget_stopped


def _heartbeat(folder: Path, manifest: RunManifest, done: int, total: int) -> None:
    """A running partitioned run says it is alive (and how far it got) in its manifest."""
    mark_alive(manifest)
    manifest.partitions = {**(manifest.partitions or {}), "done": done, "count": total}
    manifest.write(folder)


#: A partitioned run's headline figures, merged from its partitions' sums (read without the results).
HEADLINE_FILE = "headline.json"
#: A single-process run rewrites its heartbeat at most this often (seconds).
HEARTBEAT_EVERY_S = 30.0


def evaluate(
    turns: Sequence[Turn] | str | Path,
    judge: Judge | str | EvaluationOptions | None = None,
    rubric: Rubric | str | Path | None = None,
    *,
    invalid: Iterable[InvalidTurn | Mapping[str, Any]] = (),
    options: EvaluationOptions | None = None,
    **values: Any,
) -> Run:
    """Judge and score every segment of ``turns`` and write a run folder.

    ``evaluate(turns, options)`` takes an :class:`~.options.EvaluationOptions`; ``judge``, ``rubric`` and
    keyword arguments (any option's name) build one, laid over ``options`` when both are given: one
    record, validated once, with one set of defaults. A segment whose judgement failed is kept as
    ``status == "unjudged"`` with its error and ``NaN`` scores.

    Parameters
    ----------
    turns : sequence of Turn, str or Path
        Valid turns (with their ``invalid`` records), or the path of an evidence file, which is
        streamed here (its invalid lines are kept and its SHA-256 recorded).
    judge : Judge, str or EvaluationOptions, optional
        A :class:`~axon_eval.judges.base.Judge` or a spec string (``heuristic``,
        ``anthropic:<model>``, ...), whose ``judge_many`` is called through the verdict cache; or the
        options record itself.
    rubric : Rubric, str or Path, optional
        A Rubric, a packaged rubric name or a YAML path (default ``axon-v1``); ``row_horizon``
        replaces its row horizon (which changes the rubric id).
    invalid : iterable of InvalidTurn or dict, optional
        Invalid input lines to carry into the run (``invalid.jsonl``, manifest counts, summaries).
    options : EvaluationOptions, optional
        The options record; ``values`` are laid over it.
    **values
        Any option of :class:`~.options.EvaluationOptions`, among them: ``out_dir``, the parent of
        the run folder (default ``$AXON_EVAL_RUNS_DIR`` or ``runs``); ``run_dir``, a folder to write
        into instead of a fresh one (it must not hold results; its ``params.json`` is kept);
        ``params``, parameters to record, merged over the call's own (turns_file, judge, rubric,
        row_horizon, limit, seed, name, concurrency); ``input_files``, further files whose SHA-256 is
        recorded; ``cache``, a ``VerdictCache``, a path, ``None`` (the default
        ``<out_dir>/.cache/verdicts.sqlite`` or ``$AXON_EVAL_CACHE``) or ``False`` (no cache);
        ``limit``, the first ``limit`` valid turns (invalid lines are always all reported); ``seed``,
        recorded in the manifest and params (stochastic judges carry their own seed in their spec);
        ``chunk_size``, segments read, judged and written per step; ``batch``, every uncached view as
        one Anthropic Message Batch, polled every ``batch_poll_s`` for at most ``batch_timeout_s``;
        ``max_cost_usd``, the budget (module docstring); ``compress_audit``, ``audit.jsonl.gz``
        instead of ``audit.jsonl``.

    Returns
    -------
    Run
        The finished run: its folder, manifest, parameters and results table.

    Raises
    ------
    TypeError
        An unknown option, or no judge.
    ValueError
        A bad option value, or a budget whose models have no price.
    NoValidTurnsError
        The input holds no valid turn (a ``ValueError``), raised before anything is created.
    RunInterrupted
        Ctrl-C: what was judged is kept and the manifest is marked ``interrupted``.
    DiskFullError
        The disk filled: the manifest is marked ``failed``.
    Exception
        Any other error after the folder exists marks the manifest ``failed`` and is re-raised.
    """
    started = utc_now()
    if isinstance(judge, EvaluationOptions):
        options, judge = judge, None
    given = {**({"judge": judge} if judge is not None else {}), **({"rubric": rubric} if rubric is not None else {}),
             **values}
    opts = EvaluationOptions.build(options, **given)
    if opts.judge is None:
        raise TypeError("evaluate needs a judge (a Judge or a spec string such as 'heuristic')")
    judge, rubric, out_dir, name, params = opts.judge, opts.rubric, opts.out_dir, opts.name, opts.params
    input_files, cache, concurrency, limit, seed = opts.input_files, opts.cache, opts.concurrency, opts.limit, opts.seed
    progress, row_horizon, run_dir, chunk_size, kind = opts.progress, opts.row_horizon, opts.run_dir, opts.chunk_size, opts.kind
    source_run, batch, batch_poll_s, batch_timeout_s = opts.source_run, opts.batch, opts.batch_poll_s, opts.batch_timeout_s
    max_cost_usd, compress_audit = opts.max_cost_usd, opts.compress_audit
    rubric = Rubric.resolve(rubric)
    if row_horizon is not None:
        rubric = rubric.replace(row_horizon=int(row_horizon))
    judge = resolve_judge(judge, rubric)
    if max_cost_usd is not None and unpriced_models(judge):
        raise ValueError(f"max_cost_usd cannot be kept: the price table (judges/prices.yaml) has no price for "
                         f"{unpriced_models(judge)}; add one or run without a budget")
    if batch:
        from .batch import batch_leaf

        batch_leaf(judge)  # refuses judges that cannot batch, before anything is written
    partitioned = _wants_partitions(opts, turns, judge)
    files = [Path(p) for p in input_files]
    invalid_list = [_invalid_dict(i) for i in invalid]
    source_name = "<turns>"
    turn_source: Iterable[Turn] | Path
    if isinstance(turns, str | Path):
        path = Path(turns)
        turn_source, source_name = path, str(path)
        files = [path, *[f for f in files if f != path]]
    else:
        turn_source = list(turns)
    for k, f in enumerate(files):
        evidence = k == 0 and isinstance(turn_source, Path)
        require_file(f, "evidence file" if evidence else "input file",
                     "a JSON Lines evidence file" if evidence else "a file")

    # Peek for a first valid turn before anything is written: an empty input makes no folder.
    stream = _turn_stream(turn_source, invalid_list)
    first = next(stream, None)
    if first is None or limit == 0:
        # drain so the error lists every invalid line
        for _ in stream:
            pass
        if first is None:
            raise NoValidTurnsError(source_name, len(invalid_lines(invalid_list)), describe_invalid_lines(invalid_list))
    turn_iter = _limited(itertools.chain([first] if first is not None else [], stream), limit)

    out = Path(out_dir) if out_dir is not None else (Path(run_dir).parent if run_dir is not None else default_runs_dir())
    folder, notebook, has_params, unreadable = _prepare_dir(run_dir, out, name, judge_label(judge), started)
    root = repository_root()
    rel = lambda p: relative_to_root(p, root)  # noqa: E731 - a tiny local alias
    call_params = {
        "turns_file": rel(files[0]) if files else None,
        "judge": judge_label(judge),
        "rubric": rubric.label,
        "row_horizon": rubric.row_horizon,
        "limit": None if limit is None else int(limit),
        "seed": seed,
        "name": name,
        "concurrency": concurrency,
        "batch": bool(batch),
        "max_cost_usd": max_cost_usd,
    }
    merged_params = redact_secrets(to_jsonable({**call_params, **dict(params or {})}))
    provenance = judge_provenance(judge)
    manifest = RunManifest(
        run_id=folder.name, status="running", kind=kind, name=name, judge_id=judge.judge_id,
        judge_spec=redact_secrets(getattr(judge, "spec", None)), judge_model=judge.model,
        judge_endpoint=next((p.get("endpoint") for p in provenance if p.get("endpoint")), None),
        judge_local=any(bool(p.get("local")) for p in provenance) if provenance else None,
        judge_provenance=provenance, prompt_version=judge.prompt_version,
        rubric_id=rubric.id, rubric_name=rubric.name, rubric=_rubric_record(rubric),
        packages=package_versions(), params=merged_params, seed=seed, started_at=iso(started),
        counts=RunCounts(invalid=len(invalid_lines(invalid_list))), source_run=rel(source_run) if source_run else None,
        notebook=notebook, max_cost_usd=max_cost_usd,
    )
    writer: RunWriter | None = None
    engine = None
    journal = PaidJournal(folder / PAID_JOURNAL)
    inflight = InFlight(journal)
    usage = Usage()
    reserve: SpaceReserve | None = None
    cache_obj: Any = None
    stack = contextlib.ExitStack()
    try:
        reserve = SpaceReserve(folder)  # room to mark the run failed if the disk fills
        if partitioned:
            from .partitioned import connect

            engine = connect(opts.workers, opts.scheduler, opts.client)
        manifest.input_files = {rel(f): file_sha256(f) for f in files}
        manifest.turns_file = rel(files[0]) if files else None
        record_git(folder, manifest, root)
        if unreadable:
            manifest.warnings.append(unreadable)
        if manifest.judge_local:
            manifest.warnings.append(f"judged against a local server at {manifest.judge_endpoint}: these are not "
                                     "a real model's verdicts")
        other_prompts = prompt_mismatches(provenance, rubric)
        if other_prompts:
            manifest.warnings.append(f"the rubric names prompt {rubric.prompt_version!r} but the judge uses "
                                     f"{', '.join(other_prompts)}: its verdicts are not the rubric's")
        if not has_params:
            write_json(folder / "params.json", merged_params)
        if engine is None:
            # the cache is opened, and its path recorded, before the first manifest: a run killed before
            # its first heartbeat still resumes through it
            cache_obj, cache_warning = stack.enter_context(open_run_cache(cache, out))
            cache_file = getattr(cache_obj, "path", None) if cache_obj is not None else None
            manifest.cache_path = rel(cache_file) if cache_file is not None else None
            if cache_warning:
                manifest.warnings.append(cache_warning)
        mark_alive(manifest)  # index tells a killed run (its process gone) from a running one
        manifest.write(folder)
        (folder / "figures").mkdir(exist_ok=True)
        sampler = rubric_sampler(rubric)
        if is_paid(judge):
            # a streaming pre-pass over the same turns (the file is read twice; views are not kept)
            planned = itertools.islice(_turn_stream(turn_source, []), limit) if limit is not None else \
                _turn_stream(turn_source, [])
            est = estimate_cost(judge, (v for _i, vs, _n in segment_chunks(planned, rubric, chunk_size, sampler)
                                        for v in vs), batch=batch)
            manifest.estimated_cost_usd = est
            shown = "unknown (model not in the price table)" if est is None else format_usd(est)
            print(f"estimated cost of judging {source_name} with {judge.judge_id}: {shown} "
                  f"(an estimate: see axon_eval.runs.budget)"
                  + (f"; budget max_cost_usd={format_usd(max_cost_usd)}" if max_cost_usd is not None else ""),
                  file=sys.stderr)
            manifest.write(folder)
        if engine is not None:
            invalid_list = [_invalid_dict(i) for i in invalid]  # the file's own lines come from the partitions
            budget_stopped = _judge_partitioned(engine, folder, files[0], judge, rubric, manifest, opts, out,
                                                invalid_list)
            results = None  # a partitioned run is read back lazily (load_run), never whole here
            counts = manifest.counts
        else:
            writer = RunWriter(folder, compress_audit=compress_audit)
            before = _cache_counts(cache_obj)
            chunks = segment_chunks(turn_iter, rubric, chunk_size, sampler)
            bar = _progress(judge.judge_id, progress)
            try:
                if batch:
                    from .batch import judge_run_in_batch

                    judge_run_in_batch(judge, chunks, writer, rubric, cache=cache_obj, folder=folder,
                                       manifest=manifest, usage=usage, poll_interval=batch_poll_s,
                                       timeout=batch_timeout_s, bar=bar, max_cost_usd=max_cost_usd)
                else:
                    beat = time.monotonic()
                    for items, views, n_turns in chunks:
                        records = judge_chunk(judge, views, items, cache=cache_obj, concurrency=concurrency,
                                              usage=usage, max_cost_usd=max_cost_usd, inflight=inflight)
                        inflight.clear()
                        usage.add(records)
                        writer.add(items, records, rubric, n_turns)
                        if bar is not None:
                            bar.update(len(views))
                        if time.monotonic() - beat > HEARTBEAT_EVERY_S:
                            beat = time.monotonic()
                            mark_alive(manifest)
                            manifest.write(folder)
            finally:
                if bar is not None:
                    bar.close()
            after = _cache_counts(cache_obj)
            writer.commit()
            write_jsonl(folder / "invalid.jsonl", invalid_list)
            results = writer.results_frame()
            if before is not None and after is not None:
                manifest.cache_hits, manifest.cache_misses = after[0] - before[0], after[1] - before[1]
            elif cache_obj is not None:
                manifest.cache_hits = usage.cached
                manifest.cache_misses = usage.records - usage.cached
            journal.close()
            record_spend(manifest, folder, usage.totals)
            note_cache_failures(manifest, cache_obj)
            counts = writer.counts
            counts.invalid = len(invalid_lines(invalid_list))
            manifest.counts = counts
            budget_stopped = max_cost_usd is not None and bool(
                results["error"].fillna("").str.startswith("not judged: the max_cost_usd").any())
        manifest.status, manifest.failure = status_for(counts)
        if budget_stopped:
            manifest.warnings.append(f"the max_cost_usd budget ({format_usd(max_cost_usd)}) stopped judging; the "
                                     "rest are unjudged rows")
        manifest.ended_at = iso(utc_now())
        manifest.write(folder)
        stack.close()
        reserve.release()
    except KeyboardInterrupt:
        engine = close_engine(engine)  # the workers stop before the manifest is written: it is written last
        journal.close()
        stopped = _interrupted(folder, manifest, writer, judge, rubric, inflight, usage, turn_source=turn_source,
                               limit=limit, invalid_list=invalid_list, cache=cache_obj)
        with contextlib.suppress(BaseException):
            stack.close()
        if reserve is not None:
            reserve.release()
        raise stopped from None
    except BaseException as exc:
        engine = close_engine(engine)
        journal.close()
        written = max(0, folder_bytes(folder) - (RESERVE_BYTES if reserve is not None else 0))
        measured = None if writer is None else max(writer.counts.segments, writer.verdicts.count,
                                                    sum(1 for _ in complete_lines(writer.verdicts.partial)))
        if writer is not None:  # never a torn file under its final name (after a full disk, none is trusted)
            writer.abort(torn=is_disk_full(exc))
        if reserve is not None:
            reserve.release()  # the room to write the failed manifest
        with contextlib.suppress(BaseException):
            stack.close()
        with contextlib.suppress(Exception):
            write_jsonl(folder / "invalid.jsonl", invalid_list)
        if writer is not None:
            manifest.counts = writer.counts
            manifest.counts.invalid = len(invalid_lines(invalid_list))
        elif (folder / "parts").is_dir():
            _finished_counts(folder, manifest)
        with contextlib.suppress(Exception):
            record_spend(manifest, folder, usage.totals)
            note_cache_failures(manifest, cache_obj)
        if is_disk_full(exc):
            raise disk_full(folder, manifest, exc, written, turn_source, limit, measured) from exc
        fail_run(folder, manifest, exc)
        raise
    finally:
        close_engine(engine)
    return Run(run_dir=folder, manifest=manifest, params=manifest.params, results=results,
               invalid=invalid_list)


def close_engine(engine: Any) -> None:
    """Close a partitioned run's engine (its local cluster's workers stop); never raises. Returns ``None``
    (the engine is gone)."""
    if engine is not None:
        with contextlib.suppress(BaseException):
            engine.close()
    return None


def note_cache_failures(manifest: RunManifest, cache: Any) -> None:
    """Record a :class:`~.faults.GuardedCache`'s failed writes (``cache_write_failures``) and its one warning."""
    if cache is None or not hasattr(cache, "write_failures"):
        return
    manifest.cache_write_failures = int(cache.write_failures) or None
    warning = cache.warning()
    if warning and warning not in manifest.warnings:
        manifest.warnings.append(warning)


def _finished_counts(folder: Path, manifest: RunManifest) -> list[int]:
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
                         resumable=manifest.notebook is None and manifest.kind in ("evaluate", "rejudge"))


def _progress(label: str, enabled: bool) -> Any:
    if not enabled:
        return None
    from tqdm.auto import tqdm

    return tqdm(desc=f"judging [{label}]", unit="segment")
