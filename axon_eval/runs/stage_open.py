"""The first two stages of an evaluation run: plan it, then open it.

:func:`plan_run` resolves the rubric and the judge, refuses a budget it cannot keep, chooses how the
run is judged (:func:`choose_judging`), checks the input files and peeks for a first
valid turn (none: :class:`~.manifest.NoValidTurnsError`, and no folder is made), then makes the run
folder and its ``running`` manifest in memory (:class:`~.stage_judge.RunState`). Nothing has been
written but the folder.

:func:`open_run` keeps room to mark the run failed if the disk fills (:class:`~.faults.SpaceReserve`),
connects a partitioned run's engine, records the input files' SHA-256, the git state and the run's
warnings, writes ``params.json``, opens the verdict cache of a single-process run and records its path
(before the first manifest: a run killed before its first heartbeat still resumes through it), writes
the first manifest and, for a paid judge, estimates and prints the cost (a streaming pre-pass,
:mod:`.budget`). An error here is already the run's: the caller marks it failed
(:func:`~.stage_end.mark_failed`).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import sys
from collections.abc import Iterable, Iterator, Mapping
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..evidence import InvalidTurn, Turn, describe_invalid_lines, invalid_lines, iter_turns, split_segments
from ..rubric import Rubric
from .budget import estimate_cost, format_usd, is_paid, unpriced_models
from .faults import GuardedCache, SpaceReserve, open_verdict_cache
from .io import (
    default_cache_path,
    default_runs_dir,
    file_sha256,
    iso,
    new_run_dir,
    require_file,
    to_jsonable,
    write_json,
)
from .journal import PAID_JOURNAL, PaidJournal
from .judging import InFlight, resolve_judge, rubric_sampler, segment_chunks
from .manifest import NoValidTurnsError, RunCounts, RunManifest, mark_alive, read_existing_manifest
from .options import EvaluationOptions
from .provenance import (
    judge_label,
    judge_provenance,
    package_versions,
    prompt_mismatches,
    record_git,
    redact_secrets,
    relative_to_root,
    repository_root,
)
from .stage_judge import BatchJudging, Judging, LocalJudging, PartitionedJudging, RunState

if TYPE_CHECKING:  # pragma: no cover
    from ..judges.base import Judge


# -- plan ---------------------------------------------------------------------------------------------
def plan_run(turns: Iterable[Turn] | str | Path, opts: EvaluationOptions,
             invalid: Iterable[InvalidTurn | Mapping[str, Any]], started: datetime) -> RunState:
    """The run ``opts`` describe over ``turns``, its folder made and its manifest in memory (module docstring).

    Parameters
    ----------
    turns : iterable of Turn, str or Path
        Valid turns, or the path of an evidence file (streamed).
    opts : EvaluationOptions
        The run's options (a judge among them).
    invalid : iterable of InvalidTurn or dict
        Invalid input lines the caller carries into the run.
    started : datetime
        When the run started (UTC; in the folder name and the manifest).

    Returns
    -------
    RunState
        The planned run, not yet opened (:func:`open_run`).

    Raises
    ------
    ValueError
        A budget whose models have no price, or a way of judging the options cannot have
        (:func:`choose_judging`).
    NoValidTurnsError
        The input holds no valid turn; no folder is made.
    FileExistsError
        A given ``run_dir`` already holds results.
    """
    judge, rubric = _resolve(opts)
    judging = choose_judging(opts, turns, judge)
    given = [i.to_dict() if isinstance(i, InvalidTurn) else dict(i) for i in invalid]
    files, turn_source, source_name = _input(turns, opts)
    found = list(given)
    stream = _first_turns(turn_source, source_name, opts.limit, found)
    out = Path(opts.out_dir) if opts.out_dir is not None else (
        Path(opts.run_dir).parent if opts.run_dir is not None else default_runs_dir())
    folder, notebook, has_params, unreadable = _prepare_dir(opts.run_dir, out, opts.name, judge_label(judge), started)
    root = repository_root()
    params = _params(opts, judge, rubric, files, root)
    manifest = _new_manifest(folder, opts, judge, rubric, params, started, root,
                             invalid=len(invalid_lines(found)), notebook=notebook)
    journal = PaidJournal(folder / PAID_JOURNAL)
    return RunState(opts=opts, judge=judge, rubric=rubric, judging=judging, folder=folder, out=out,
                    manifest=manifest, turn_source=turn_source, evidence=files[0] if files else None,
                    turns=stream, invalid=found, given_invalid=given, files=files, root=root, params=params,
                    has_params=has_params, unreadable=unreadable, source_name=source_name, journal=journal,
                    inflight=InFlight(journal))


def _resolve(opts: EvaluationOptions) -> tuple[Judge, Rubric]:
    """The judge and rubric of the options; a budget needs a price for every model the judge calls."""
    rubric = Rubric.resolve(opts.rubric)
    if opts.row_horizon is not None:
        rubric = rubric.replace(row_horizon=int(opts.row_horizon))
    judge = resolve_judge(opts.judge, rubric)
    if opts.max_cost_usd is not None and unpriced_models(judge):
        raise ValueError(f"max_cost_usd cannot be kept: the price table (judges/prices.yaml) has no price for "
                         f"{unpriced_models(judge)}; add one or run without a budget")
    return judge, rubric


def choose_judging(opts: EvaluationOptions, turns: Any, judge: Judge) -> Judging:
    """The :class:`~.stage_judge.Judging` the options ask for; refuses what it cannot do before anything starts.

    Raises
    ------
    ValueError
        A judge that cannot batch with ``batch``; a partitioned run over turns that are not an evidence
        file, with ``batch``, or with a judge that has no spec (workers rebuild it from its spec).
    """
    if opts.batch:
        from .batch import batch_leaf

        batch_leaf(judge)  # refuses judges that cannot batch, before anything is written
    if _wants_partitions(opts, turns, judge):
        return PartitionedJudging()
    return BatchJudging() if opts.batch else LocalJudging()


def _wants_partitions(opts: EvaluationOptions, turns: Any, judge: Judge) -> bool:
    """Whether the run is partitioned (``workers``, ``scheduler``, ``client`` or
    ``$DASK_SCHEDULER_ADDRESS``, or a client this process made); refuses what a partitioned run cannot do."""
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


def _input(turns: Iterable[Turn] | str | Path,
           opts: EvaluationOptions) -> tuple[list[Path], Iterable[Turn] | Path, str]:
    """The files whose SHA-256 is recorded (the evidence file first), the input to read, its name; every
    file must exist."""
    files = [Path(p) for p in opts.input_files]
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
    return files, turn_source, source_name


def _first_turns(turn_source: Iterable[Turn] | Path, source_name: str, limit: int | None,
                 invalid: list[dict[str, Any]]) -> Iterator[Turn]:
    """The valid turns to judge (the first ``limit``), after a peek for a first valid turn before anything
    is written: an empty input makes no folder (:class:`~.manifest.NoValidTurnsError`)."""
    stream = turn_stream(turn_source, invalid)
    first = next(stream, None)
    if first is None or limit == 0:
        # drain so the error lists every invalid line
        for _ in stream:
            pass
        if first is None:
            raise NoValidTurnsError(source_name, len(invalid_lines(invalid)), describe_invalid_lines(invalid))
    return _limited(itertools.chain([first] if first is not None else [], stream), limit)


def turn_stream(turns: Iterable[Turn] | Path, invalid_sink: list[dict[str, Any]]) -> Iterator[Turn]:
    """Valid turns in order; invalid line records go to ``invalid_sink`` as they are met.

    Raises
    ------
    TypeError
        An item that is neither a Turn nor an invalid-line record.
    """
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


def count_segments(turns: Iterable[Turn] | Path, limit: int | None = None) -> int:
    """The segments of the valid turns of ``turns`` (a list or an evidence file, read afresh), within the
    first ``limit`` valid turns."""
    stream: Iterable[Turn] = turn_stream(turns, [])
    if limit is not None:
        stream = itertools.islice(stream, limit)
    return sum(len(split_segments(turn)) for turn in stream)


def _prepare_dir(run_dir: str | Path | None, out_dir: Path, name: str, judge: str | None,
                 started: datetime) -> tuple[Path, dict[str, Any] | None, bool, str | None]:
    """The run folder to write (fresh, or a given one that holds no results yet), any notebook info
    already in its manifest (written there by :mod:`axon_eval.runs.notebook`), whether params.json exists, and
    a warning when that manifest could not be read (:func:`~.manifest.read_existing_manifest`)."""
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


def _params(opts: EvaluationOptions, judge: Judge, rubric: Rubric, files: list[Path],
            root: Path | None) -> dict[str, Any]:
    """The parameters recorded (``params.json`` and the manifest): the call's own, with ``opts.params``
    laid over them, JSON-safe and scrubbed of secrets."""
    call_params = {
        "turns_file": relative_to_root(files[0], root) if files else None,
        "judge": judge_label(judge),
        "rubric": rubric.label,
        "row_horizon": rubric.row_horizon,
        "limit": None if opts.limit is None else int(opts.limit),
        "seed": opts.seed,
        "name": opts.name,
        "concurrency": opts.concurrency,
        "batch": bool(opts.batch),
        "max_cost_usd": opts.max_cost_usd,
    }
    return redact_secrets(to_jsonable({**call_params, **dict(opts.params or {})}))


def _new_manifest(folder: Path, opts: EvaluationOptions, judge: Judge, rubric: Rubric, params: dict[str, Any],
                  started: datetime, root: Path | None, *, invalid: int,
                  notebook: dict[str, Any] | None) -> RunManifest:
    """The ``running`` manifest of a new run: its judge (and every API judge inside it), rubric, packages,
    parameters, start, ``invalid`` input lines so far and the ``notebook`` that runs it (if any)."""
    provenance = judge_provenance(judge)
    return RunManifest(
        run_id=folder.name, status="running", kind=opts.kind, name=opts.name, judge_id=judge.judge_id,
        judge_spec=redact_secrets(getattr(judge, "spec", None)), judge_model=judge.model,
        judge_endpoint=next((p.get("endpoint") for p in provenance if p.get("endpoint")), None),
        judge_local=any(bool(p.get("local")) for p in provenance) if provenance else None,
        judge_provenance=provenance, prompt_version=judge.prompt_version,
        rubric_id=rubric.id, rubric_name=rubric.name, rubric=rubric.model_dump(mode="json"),
        packages=package_versions(), params=params, seed=opts.seed, started_at=iso(started),
        counts=RunCounts(invalid=invalid), source_run=relative_to_root(opts.source_run, root) if opts.source_run
        else None, notebook=notebook, max_cost_usd=opts.max_cost_usd,
    )


# -- open ---------------------------------------------------------------------------------------------
def open_run(run: RunState) -> None:
    """Open a planned run (module docstring): its engine or cache, its records and its first manifest.

    Parameters
    ----------
    run : RunState
        The run :func:`plan_run` made; what is opened (the room for a failed manifest, the engine, the
        cache) is set on it as it is, so a failure here finds it there.
    """
    opts, manifest, folder = run.opts, run.manifest, run.folder
    run.reserve = SpaceReserve(folder)  # room to mark the run failed if the disk fills
    if run.judging.partitioned:
        from .partitioned import connect

        run.engine = connect(opts.workers, opts.scheduler, opts.client)
        if run.engine is None:  # the client the run was to use is gone: judged in this process
            run.judging = LocalJudging()
    manifest.input_files = {relative_to_root(f, run.root): file_sha256(f) for f in run.files}
    manifest.turns_file = relative_to_root(run.files[0], run.root) if run.files else None
    record_git(folder, manifest, run.root)
    _note_warnings(run)
    if not run.has_params:
        write_json(folder / "params.json", run.params)
    if run.engine is None:
        # the cache is opened, and its path recorded, before the first manifest: a run killed before
        # its first heartbeat still resumes through it
        run.cache, cache_warning = run.stack.enter_context(open_run_cache(opts.cache, run.out))
        cache_file = getattr(run.cache, "path", None) if run.cache is not None else None
        manifest.cache_path = relative_to_root(cache_file, run.root) if cache_file is not None else None
        if cache_warning:
            manifest.warnings.append(cache_warning)
    mark_alive(manifest)  # index tells a killed run (its process gone) from a running one
    manifest.write(folder)
    (folder / "figures").mkdir(exist_ok=True)
    if is_paid(run.judge):
        _estimate_cost(run)


def _note_warnings(run: RunState) -> None:
    """The run's warnings known at its start: a manifest already in the folder that could not be read, a
    local server standing in for a model, a judge whose prompt is not the rubric's."""
    manifest = run.manifest
    if run.unreadable:
        manifest.warnings.append(run.unreadable)
    if manifest.judge_local:
        manifest.warnings.append(f"judged against a local server at {manifest.judge_endpoint}: these are not "
                                 "a real model's verdicts")
    other_prompts = prompt_mismatches(manifest.judge_provenance, run.rubric)
    if other_prompts:
        manifest.warnings.append(f"the rubric names prompt {run.rubric.prompt_version!r} but the judge uses "
                                 f"{', '.join(other_prompts)}: its verdicts are not the rubric's")


def _estimate_cost(run: RunState) -> None:
    """The estimated cost of judging the run (a streaming pre-pass over the same turns: the file is read
    twice, the views are not kept), recorded in the manifest and printed with the budget."""
    opts, judge = run.opts, run.judge
    planned = itertools.islice(turn_stream(run.turn_source, []), opts.limit) if opts.limit is not None else \
        turn_stream(run.turn_source, [])
    views = (v for _i, vs, _n in segment_chunks(planned, run.rubric, opts.chunk_size, rubric_sampler(run.rubric))
             for v in vs)
    est = estimate_cost(judge, views, batch=opts.batch)
    run.manifest.estimated_cost_usd = est
    shown = "unknown (model not in the price table)" if est is None else format_usd(est)
    print(f"estimated cost of judging {run.source_name} with {judge.judge_id}: {shown} "
          f"(an estimate: see axon_eval.runs.budget)"
          + (f"; budget max_cost_usd={format_usd(opts.max_cost_usd)}" if opts.max_cost_usd is not None else ""),
          file=sys.stderr)
    run.manifest.write(run.folder)


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
