"""A reference run: grading a response set from files, and the run folder it is recorded in.

:func:`grade_reference` grades a response set (:func:`~.evaluate.grade_responses`) from files and writes
a run folder with the conventions of :mod:`axon_eval.runs` (:func:`~axon_eval.runs.io.new_run_dir`,
:class:`~axon_eval.runs.manifest.RunManifest`, :func:`~axon_eval.runs.provenance.record_git`,
:func:`~axon_eval.runs.manifest.fail_run`)::

    runs/<UTC date>T<time>Z_reference_<judge>/
        manifest.json     kind "reference", name "reference"; status, input hashes, params, git, judge
                          provenance, cache hits / misses, tokens, cost, estimated cost, budget
        params.json       the call's parameters
        grades.parquet    one row per response (grade, reasons, counts of checks, tokens, cost, cached,
                          and with labels: layer, split, defect, expected_grade, outcome)
        grades.jsonl      one :class:`.records.GradeRecord` per response (criteria, quotes, numeric checks)
        evidence.jsonl    per question: every reference value and row the judge saw, or the error
        agreement.json    with labels: false passes, false fails, review-required, overall and held-out
        report.html       the run on one page (:mod:`.report`)

Counts in the manifest (:class:`~axon_eval.runs.manifest.RunCounts`, in responses): ``turns`` responses
selected; ``invalid`` responses whose question's evidence could not be prepared (the input is broken, not
the judge: like an invalid evidence line of an evaluation); ``segments`` the others; ``judged`` those
graded pass / fail / review_required; ``unjudged`` the rest (judge errors, output that does not verify,
budget). Status and exit code follow :mod:`axon_eval.runs.manifest`: ``complete`` (0; 6 with ``strict``
when evidence failed), ``partial`` (3), ``failed`` (4 nothing graded, 1 the run raised).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from ..runs.batch import batch_info, registry_dir
from ..runs.budget import format_usd, unpriced_models
from ..runs.evaluate import fail_run, judge_provenance, read_existing_manifest, record_git
from ..runs.io import (
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
    write_parquet,
)
from ..runs.manifest import NoValidTurnsError, RunCounts, RunManifest, status_for
from ..runs.provenance import (
    package_versions,
    redact_secrets,
    relative_to_root,
    repository_root,
)
from .batch import BatchOptions, batch_judge
from .cache import GradeCache
from .evaluate import (
    Grading,
    _check_responses,
    agreement,
    grade_responses,
    grade_table,
    judge_spec,
    load_labels,
    load_responses,
    make_judge,
)
from .evidence import Evidence
from .records import GradeRecord
from .spec import load_questions
from .warehouse import shop_database

RUN_NAME = "reference"
TOKEN_FIELDS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_creation_tokens", "cost_usd")


# -- summaries of records ---------------------------------------------------------------------------------
def usage_totals(records: Iterable[GradeRecord]) -> dict[str, Any]:
    """Sums of tokens and cost over the records that made a call (cached ones cost nothing); a field no
    record reported stays ``None`` (unknown), never 0."""
    totals: dict[str, Any] = {f: None for f in TOKEN_FIELDS}
    for r in records:
        if r.cached:
            continue
        for f in TOKEN_FIELDS:
            v = getattr(r, f)
            if v is not None:
                totals[f] = (totals[f] or 0) + v
    if totals["cost_usd"] is not None:
        totals["cost_usd"] = round(float(totals["cost_usd"]), 8)
    return totals


def run_counts(records: Sequence[GradeRecord]) -> RunCounts:
    """Manifest counts in responses (module docstring)."""
    invalid = sum(r.error_kind == "evidence" for r in records)
    segments = len(records) - invalid
    judged = sum(r.graded for r in records)
    return RunCounts(turns=len(records), segments=segments, judged=judged, unjudged=segments - judged,
                     invalid=invalid, samples=segments, unjudged_samples=segments - judged)


# -- the run folder -----------------------------------------------------------------------------------------
@dataclass
class ReferenceRun:
    """A finished reference run: its folder, manifest, records, grade table and (with labels) agreement."""

    run_dir: Path
    manifest: RunManifest
    records: list[GradeRecord]
    table: pd.DataFrame
    agreement: dict[str, dict[str, int]] | None
    evidence: dict[str, Evidence]


def _select(items: list[Any], wanted: Sequence[str] | None, key: Callable[[Any], str], what: str) -> list[Any]:
    if not wanted:
        return items
    known = {key(x) for x in items}
    unknown = [w for w in wanted if w not in known]
    if unknown:
        raise ValueError(f"unknown {what} id(s): {unknown}")
    chosen = set(wanted)
    return [x for x in items if key(x) in chosen]


@contextlib.contextmanager
def open_grade_cache(cache: GradeCache | str | Path | bool | None, out_dir: Path) -> Iterator[GradeCache | None]:
    """``cache``: a :class:`GradeCache` (used as is), a path, ``None``/``True`` (the verdict cache file,
    :func:`~axon_eval.runs.io.default_cache_path`) or ``False`` (none)."""
    if cache is False:
        yield None
        return
    if isinstance(cache, GradeCache):
        yield cache
        return
    opened = GradeCache(default_cache_path(out_dir) if cache is None or cache is True else Path(cache))
    try:
        yield opened
    finally:
        opened.close()


def _prepare_folder(run_dir: str | Path | None, out: Path, judge_label: str) -> Path:
    if run_dir is None:
        return new_run_dir(out, RUN_NAME, judge_label)
    folder = Path(run_dir)
    folder.mkdir(parents=True, exist_ok=True)
    taken = [p.name for p in (folder / "grades.parquet", folder / "grades.jsonl") if p.exists()]
    if taken:
        raise FileExistsError(f"run folder {folder} already holds {taken}; runs are never overwritten")
    return folder


def grade_reference(questions_file: str | Path, responses_file: str | Path, judge: Any = "heuristic", *,
                    labels_file: str | Path | None = None, db_path: str | Path | None = None,
                    question_ids: Sequence[str] | None = None, response_ids: Sequence[str] | None = None,
                    out_dir: str | Path | None = None, run_dir: str | Path | None = None,
                    cache: GradeCache | str | Path | bool | None = None, max_cost_usd: float | None = None,
                    concurrency: int = 4, params: Mapping[str, Any] | None = None,
                    report: bool = True, batch: bool = False, batch_poll_s: float = 30.0,
                    batch_timeout_s: float = 25 * 3600.0) -> ReferenceRun:
    """Grade the responses of ``responses_file`` against ``questions_file`` and write a run folder (module
    docstring); returns the :class:`ReferenceRun`.

    judge : a reference judge or its spec (:func:`make_judge`).
    labels_file : constructed labels (``labels.csv``): adds expected grades, outcomes and ``agreement.json``.
    db_path : the reference warehouse (default: the bundled ``shop.sqlite``, expanded on first use).
    question_ids / response_ids : grade only these (unknown ids raise ``ValueError``).
    out_dir : parent of the new folder (default ``$AXON_EVAL_RUNS_DIR`` or ``<repository>/runs``).
    run_dir : write into this folder instead (a notebook's run folder; its manifest is updated, its kind
        and notebook record kept); it must not hold grades already.
    cache : the grade cache (:func:`open_grade_cache`; default: the verdict cache file of ``out_dir``).
    max_cost_usd : stop before the reported cost would exceed this many US dollars.
    params : further parameters to record (a notebook's).
    batch : grade the uncached responses through one Anthropic Message Batch (half price, resumable:
        :mod:`.batch`); the batch ids go to the manifest's ``batch`` and the folder's ``batch.json``. Polls
        every ``batch_poll_s`` seconds; after ``batch_timeout_s`` the run fails with ``TimeoutError`` and
        the batch stays recorded, so the same call again resumes polling it. Only a Claude judge can batch.

    Raises before writing anything: ``ValueError`` (bad spec, unknown id, bad number, a budget for an
    unpriced model), ``FileNotFoundError``, ``MissingApiKey``, and ``NoValidTurnsError`` when no response
    is selected. Any exception once the folder exists marks its manifest ``failed`` and is re-raised.
    """
    started = utc_now()
    root = repository_root()
    rel = lambda p: relative_to_root(p, root)
    if not isinstance(concurrency, int) or isinstance(concurrency, bool) or concurrency < 1:
        raise ValueError(f"concurrency must be an integer >= 1, got {concurrency!r}")
    if max_cost_usd is not None and (isinstance(max_cost_usd, bool) or not isinstance(max_cost_usd, int | float)
                                     or max_cost_usd < 0):
        raise ValueError(f"max_cost_usd must be a non-negative number or None, got {max_cost_usd!r}")
    spec = judge if isinstance(judge, str) else None
    judge_obj = make_judge(judge) if isinstance(judge, str) else judge
    if batch:
        batch_judge(judge_obj)  # refuses a judge that cannot batch, before anything is written
    if max_cost_usd is not None and unpriced_models(judge_obj):
        raise ValueError(f"max_cost_usd cannot be kept: the price table (judges/prices.yaml) has no price for "
                         f"{unpriced_models(judge_obj)}; add one or grade without a budget")
    files = [Path(questions_file), Path(responses_file), *([Path(labels_file)] if labels_file is not None else [])]
    for f in files:
        require_file(f, "input file")
    if db_path is None:
        db = shop_database()
    else:
        db = require_file(db_path, "reference database", "an SQLite file")
    questions = _select(load_questions(questions_file), question_ids, lambda q: q.id, "question")
    responses = load_responses(responses_file)
    if question_ids:
        responses = [r for r in responses if r.get("question_id") in set(question_ids)]
    responses = _select(responses, response_ids, lambda r: str(r.get("response_id")), "response")
    if not responses:
        raise NoValidTurnsError(str(responses_file), 0)
    _check_responses(questions, responses)
    labels = load_labels(labels_file) if labels_file is not None else None

    out = Path(out_dir) if out_dir is not None else (Path(run_dir).parent if run_dir is not None
                                                     else default_runs_dir(root))
    folder = _prepare_folder(run_dir, out, spec or judge_spec(judge_obj))
    call_params = redact_secrets(to_jsonable({
        "questions_file": rel(questions_file), "responses_file": rel(responses_file),
        "labels_file": rel(labels_file) if labels_file is not None else None, "db_path": rel(db),
        "judge": spec or judge_spec(judge_obj), "question_ids": list(question_ids or []) or None,
        "response_ids": list(response_ids or []) or None, "max_cost_usd": max_cost_usd,
        "concurrency": concurrency, "batch": bool(batch), "name": RUN_NAME, **dict(params or {})}))
    provenance = judge_provenance(judge_obj)
    existing, unreadable = read_existing_manifest(folder)
    manifest = existing or RunManifest(run_id=folder.name, status="running", kind="reference", name=RUN_NAME,
                                       packages=package_versions(), started_at=iso(started))
    if unreadable:
        manifest.warnings.append(unreadable)
    manifest.judge_id, manifest.judge_model = judge_obj.judge_id, judge_obj.model
    manifest.judge_spec = redact_secrets(spec or judge_spec(judge_obj))
    manifest.prompt_version = judge_obj.prompt_version
    manifest.judge_provenance = provenance
    manifest.judge_endpoint = next((p.get("endpoint") for p in provenance if p.get("endpoint")), None)
    manifest.judge_local = any(bool(p.get("local")) for p in provenance) if provenance else None
    manifest.max_cost_usd = max_cost_usd
    manifest.params = {**manifest.params, **call_params} if existing is not None else call_params
    records: list[GradeRecord] = []
    try:
        manifest.input_files = {**manifest.input_files, **{rel(f): file_sha256(f) for f in [*files, db]}}
        if manifest.git_commit == "unknown":
            record_git(folder, manifest, root)
        if manifest.judge_local:
            manifest.warnings.append(f"graded against a local server at {manifest.judge_endpoint}: these are not a "
                                     "real model's grades")
        if not (folder / "params.json").exists():
            write_json(folder / "params.json", call_params)
        manifest.write(folder)

        def announce(estimate: float | None, n_calls: int) -> None:
            manifest.estimated_cost_usd = estimate
            shown = "unknown (model not in the price table)" if estimate is None else format_usd(estimate)
            print(f"estimated cost of grading {n_calls} response(s) with {judge_obj.judge_id}: {shown} (an estimate; "
                  "cached grades cost nothing)"
                  + (f"; budget max_cost_usd={format_usd(max_cost_usd)}" if max_cost_usd is not None else ""),
                  file=sys.stderr)
            manifest.write(folder)

        with open_grade_cache(cache, out) as grade_cache:
            before = grade_cache.stats.as_dict() if grade_cache is not None else None
            options = None
            if batch:
                options = BatchOptions(registry=registry_dir(grade_cache, folder), folder=folder, manifest=manifest,
                                       poll_interval=batch_poll_s, timeout=batch_timeout_s)
                manifest.batch = batch_info(options.registry)
            grading = grade_responses(questions, responses, db, judge_obj, cache=grade_cache,
                                      max_cost_usd=max_cost_usd, concurrency=concurrency, announce=announce,
                                      batch=batch, batch_options=options)
            if grade_cache is not None and before is not None:
                after = grade_cache.stats.as_dict()
                manifest.cache_path = rel(grade_cache.path)
                manifest.cache_hits = after["hits"] - before["hits"]
                manifest.cache_misses = after["misses"] - before["misses"]
        records = grading.records
        table = grade_table(records, labels)
        counts = agreement(table) if labels is not None else None
        write_jsonl(folder / "grades.jsonl", (r.to_json_line() for r in records))
        write_parquet(folder / "grades.parquet", table)
        write_jsonl(folder / "evidence.jsonl", (ev.to_dict() for ev in grading.evidence.values()))
        if counts is not None:
            write_json(folder / "agreement.json", counts)
        for key, value in usage_totals(records).items():
            setattr(manifest, key, value)
        manifest.counts = run_counts(records)
        manifest.status, manifest.failure = status_for(manifest.counts)
        manifest.warnings.extend(w for w in grading.warnings if w not in manifest.warnings)
        manifest.ended_at = iso(utc_now())
        manifest.write(folder)
        if report:
            from .report import write_reference_report

            write_reference_report(folder, manifest, table, records, counts)
    except BaseException as exc:
        if records:
            manifest.counts = run_counts(records)
        fail_run(folder, manifest, exc)
        raise
    return ReferenceRun(folder, manifest, records, table, counts, grading.evidence)


__all__ = ["Grading", "ReferenceRun", "grade_reference", "grade_responses", "judge_spec", "make_judge",
           "open_grade_cache", "run_counts", "usage_totals"]
