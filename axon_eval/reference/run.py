"""Grading a response set through the grade cache, and the run folder it is recorded in.

:func:`grade_responses` grades responses (no files written): evidence is prepared once per question;
each response's grade key (:func:`.records.grade_cache_key`) is looked up in the :class:`.cache.GradeCache`
and a stored grade is reused; the rest are sent to the judge (at most ``concurrency`` calls at a time),
verified and graded by code, and stored. For a paid judge the estimated cost of the calls still to make
is announced first; with ``max_cost_usd``, before each call the cost reported so far plus the estimates
of the calls already planned and of this one must stay within the budget, else this response and every
later uncached one are ``error`` records of kind ``budget`` (never graded, never a fail). With
``batch=True`` (Claude judge only) the uncached responses go through one resumable Message Batch instead
(:mod:`.batch`, sharing evaluate's :func:`axon_eval.runs.batch.run_batches`): estimates and costs at the
batch price, the budget bounding what is submitted, the batch ids in the manifest's ``batch`` and the run
folder's ``batch.json``.

:func:`grade_reference` does that for files and writes a run folder with the conventions of
:mod:`axon_eval.runs` (:func:`~axon_eval.runs.io.new_run_dir`, :class:`~axon_eval.runs.manifest.RunManifest`,
:func:`~axon_eval.runs.evaluate.record_git`, :func:`~axon_eval.runs.evaluate.fail_run`)::

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
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pandas as pd

from ..runs.batch import batch_info, registry_dir
from ..runs.budget import format_usd, is_paid, unpriced_models
from ..runs.evaluate import BUDGET_ERROR, fail_run, judge_provenance, read_existing_manifest, record_git
from ..runs.io import (
    default_cache_path,
    default_runs_dir,
    file_sha256,
    iso,
    new_run_dir,
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
from .batch import BatchOptions, batch_judge, judge_in_batch
from .cache import GradeCache
from .evidence import Evidence, prepare_evidence
from .grading import grade_response
from .records import GradeRecord, error_record, grade_cache_key, record_from_grade
from .spec import Question, load_questions

RUN_NAME = "reference"
TOKEN_FIELDS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_creation_tokens", "cost_usd")


# -- judges ----------------------------------------------------------------------------------------------
def make_judge(spec: str, **options: Any) -> Any:
    """A reference judge from its spec: ``heuristic`` (offline, code only) or ``claude:<model>[@<base_url>]``
    (:class:`.claude.ClaudeReferenceJudge`; without ``@<base_url>`` the endpoint is ``ANTHROPIC_BASE_URL``,
    else the provider's). ``options`` go to the Claude judge (``max_tokens``, ``timeout_s``, ...).
    Unknown specs raise ``ValueError`` naming the spec; a missing key for the provider endpoint raises
    :class:`~axon_eval.judges.base.MissingApiKey`."""
    from .heuristic import HeuristicReferenceJudge

    text = (spec or "").strip()
    if text == "heuristic":
        if options:
            raise ValueError(f"the heuristic reference judge takes no options, got {sorted(options)}")
        return HeuristicReferenceJudge()
    if text.startswith("claude:"):
        from .claude import ClaudeReferenceJudge

        model, _, base_url = text.removeprefix("claude:").partition("@")
        if not model.strip():
            raise ValueError(f"reference judge spec {spec!r} names no model (expected claude:<model>[@<base_url>])")
        return ClaudeReferenceJudge(model.strip(), base_url=base_url.strip() or None, **options)
    raise ValueError(f"unknown reference judge {spec!r} (expected heuristic or claude:<model>[@<base_url>])")


def judge_spec(judge: Any) -> str:
    """The spec a judge object would be built from (for folder names and manifests)."""
    from .claude import ClaudeReferenceJudge

    if isinstance(judge, ClaudeReferenceJudge):
        return f"claude:{judge.model}" + (f"@{judge.base_url}" if judge.base_url else "")
    return "heuristic" if getattr(judge, "judge_id", "").startswith("heuristic-reference") else str(judge.judge_id)


# -- grading through the cache ----------------------------------------------------------------------------
@dataclass
class Grading:
    """What :func:`grade_responses` did: the records in input order, the evidence per question, the
    estimated cost of the calls it planned (``None``: free judge or unpriced model), and counts."""

    records: list[GradeRecord]
    evidence: dict[str, Evidence]
    estimated_cost_usd: float | None = None
    n_cached: int = 0
    n_called: int = 0
    n_budget_stopped: int = 0
    warnings: list[str] = field(default_factory=list)


def _check_responses(questions: Sequence[Question], responses: Sequence[Mapping[str, Any]]) -> None:
    known = {q.id for q in questions}
    seen: set[str] = set()
    for i, r in enumerate(responses, 1):
        for key in ("response_id", "question_id", "response"):
            if not isinstance(r.get(key), str):
                raise ValueError(f"response {i}: field {key!r} must be a string, got {r.get(key)!r}")
        if r["question_id"] not in known:
            raise ValueError(f"response {r['response_id']!r} names unknown question {r['question_id']!r}")
        if r["response_id"] in seen:
            raise ValueError(f"response id {r['response_id']!r} appears twice")
        seen.add(r["response_id"])


def grade_responses(questions: Sequence[Question], responses: Sequence[Mapping[str, Any]], db_path: str | Path,
                    judge: Any, *, cache: GradeCache | None = None, max_cost_usd: float | None = None,
                    concurrency: int = 4, announce: Callable[[float | None, int], None] | None = None,
                    batch: bool = False, batch_options: BatchOptions | None = None) -> Grading:
    """Grade ``responses`` (dicts with ``response_id``, ``question_id``, ``response``) against ``questions``
    with ``judge`` through ``cache`` (see the module docstring). ``announce(estimate_usd, n_calls)`` is
    called once before the first paid call. Returns a :class:`Grading` (records in input order).

    With ``batch`` the uncached responses go through one resumable Message Batch (:mod:`.batch`; estimates
    and costs at the batch price; ``batch_options`` say where its state is recorded, by default the
    registry beside ``cache``); a judge that cannot batch raises ``ValueError`` before any work."""
    if batch:
        batch_judge(judge)
        if batch_options is None:
            if cache is None:
                raise ValueError("batch mode without a grade cache needs batch_options.registry (where the batch "
                                 "state is kept so an interrupted batch is resumed, not paid twice)")
            batch_options = BatchOptions()
        if batch_options.registry is None:
            batch_options = replace(batch_options, registry=registry_dir(cache, Path(batch_options.folder or ".")))
    if concurrency < 1:
        raise ValueError(f"concurrency must be >= 1, got {concurrency!r}")
    if max_cost_usd is not None and (isinstance(max_cost_usd, bool) or not isinstance(max_cost_usd, int | float)
                                     or max_cost_usd < 0):
        raise ValueError(f"max_cost_usd must be a non-negative number or None, got {max_cost_usd!r}")
    if max_cost_usd is not None and unpriced_models(judge):
        raise ValueError(f"max_cost_usd cannot be kept: the price table (judges/prices.yaml) has no price for "
                         f"{unpriced_models(judge)}; add one or grade without a budget")
    _check_responses(questions, responses)
    by_id = {q.id: q for q in questions}
    evidence: dict[str, Evidence] = {}
    for r in responses:
        if r["question_id"] not in evidence:
            evidence[r["question_id"]] = prepare_evidence(by_id[r["question_id"]], db_path)
    ident = {"judge_id": judge.judge_id, "model": judge.model, "prompt_version": judge.prompt_version}
    config = judge.config()
    out: list[GradeRecord | None] = [None] * len(responses)
    pending: list[tuple[int, Question, Evidence, str, str]] = []  # (index, question, evidence, text, key)
    grading = Grading([], evidence)
    for i, r in enumerate(responses):
        q, ev, text = by_id[r["question_id"]], evidence[r["question_id"]], r["response"]
        if not ev.ok:
            grade = grade_response(q, ev, r["response_id"], text, None)
            grade.judge_id = judge.judge_id
            out[i] = record_from_grade(grade, q, ev, text, model=judge.model, prompt_version=judge.prompt_version,
                                       judge_output=None, cache_key=None)
            continue
        key = grade_cache_key(q, ev, text, judge.judge_id, judge.prompt_version, config)
        hit = cache.get_grade(key) if cache is not None else None
        if hit is not None:
            out[i] = hit.model_copy(update={"response_id": r["response_id"]})
            grading.n_cached += 1
            continue
        pending.append((i, q, ev, text, key))

    paid = is_paid(judge)
    estimates = [judge.estimate_cost_usd(q, ev, text, **({"batch": True} if batch else {}))
                 for _i, q, ev, text, _k in pending]
    if paid and pending:
        grading.estimated_cost_usd = None if any(e is None for e in estimates) else float(sum(estimates))
        if announce is not None:
            announce(grading.estimated_cost_usd, len(pending))

    def finish(i: int, q: Question, ev: Evidence, text: str, key: str, judged: Any) -> None:
        """The record of one judgement: an error grade of kind ``judge``, or the grade derived by code."""
        rid = responses[i]["response_id"]
        if judged.output is None:
            out[i] = error_record(q, ev, rid, text, **ident, kind="judge", error=str(judged.error),
                                  cache_key=key, **judged.call_fields())
            return
        grade = grade_response(q, ev, rid, text, judged.output, key=key)
        grade.judge_id = judge.judge_id
        record = record_from_grade(grade, q, ev, text, model=judge.model, prompt_version=judge.prompt_version,
                                   judge_output=judged.output.to_dict(), cache_key=key, **judged.call_fields())
        if cache is not None and record.graded:
            cache.put_grade(key, record)
        out[i] = record

    def budget_stop(i: int, q: Question, ev: Evidence, text: str, key: str, spent: float) -> None:
        message = BUDGET_ERROR.format(budget=max_cost_usd, spent=spent).replace("not judged", "not graded")
        out[i] = error_record(q, ev, responses[i]["response_id"], text, **ident, kind="budget", error=message,
                              cache_key=key)
        grading.n_budget_stopped += 1

    if batch and pending:
        assert batch_options is not None
        judged_by_key, stopped_keys = judge_in_batch(judge, [(q, ev, text, key) for _i, q, ev, text, key in pending],
                                                     estimates, options=batch_options, max_cost_usd=max_cost_usd)
        grading.n_called = len(judged_by_key)
        seen_keys: set[str] = set()
        for i, q, ev, text, key in pending:
            if key in stopped_keys:
                budget_stop(i, q, ev, text, key, 0.0)
                continue
            finish(i, q, ev, text, key, judged_by_key[key])
            if key in seen_keys and out[i] is not None:  # identical responses share one request: paid once
                out[i] = out[i].model_copy(update={"cached": True})
            seen_keys.add(key)
        pending = []
    spent = 0.0
    stopped = False
    for start in range(0, len(pending), concurrency):
        window = list(zip(pending[start:start + concurrency], estimates[start:start + concurrency], strict=True))
        allowed = []
        planned = spent
        for item, estimate in window:
            if max_cost_usd is not None and not stopped and planned + (estimate or 0.0) > max_cost_usd:
                stopped = True
            if stopped:
                budget_stop(*item, spent)
                continue
            planned += estimate or 0.0
            allowed.append((item, estimate))
        if not allowed:
            continue
        judgements = judge.judge_many([(q, ev, text) for (_i, q, ev, text, _k), _e in allowed],
                                      concurrency=concurrency)
        grading.n_called += len(allowed)
        for ((i, q, ev, text, key), estimate), judged in zip(allowed, judgements, strict=True):
            spent += judged.cost_usd if judged.cost_usd is not None else (estimate or 0.0)
            finish(i, q, ev, text, key, judged)
    grading.records = [r for r in out if r is not None]
    if len(grading.records) != len(responses):  # pragma: no cover - every index is filled above
        raise RuntimeError("a response was left without a record")
    broken = sorted({q for q, ev in evidence.items() if not ev.ok})
    if broken:
        grading.warnings.append(f"the evidence of {len(broken)} question(s) could not be prepared, so their responses "
                                f"are error grades: {', '.join(broken)}")
    if grading.n_budget_stopped:
        grading.warnings.append(f"the max_cost_usd budget (${max_cost_usd:.4f}) stopped grading: "
                                f"{grading.n_budget_stopped} response(s) not graded")
    return grading


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
    from .evaluate import agreement, grade_table, load_labels, load_responses

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
        if not f.is_file():
            raise FileNotFoundError(f"input file {f} does not exist")
    if db_path is None:
        from ..fixtures.shop import shop_database

        db = shop_database()
    else:
        db = Path(db_path)
        if not db.is_file():
            raise FileNotFoundError(f"reference database {db} does not exist")
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
