"""Grading a response set against its questions, and the judge's agreement with constructed labels.

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
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pandas as pd

from ..runs.batch import registry_dir
from ..runs.budget import is_paid, unpriced_models
from ..runs.writer import BUDGET_ERROR
from .batch import BatchOptions, batch_judge, judge_in_batch
from .cache import GradeCache
from .evidence import Evidence, prepare_evidence
from .grading import grade_response
from .numeric import check_value
from .records import GradeRecord, error_record, grade_cache_key, record_from_grade
from .spec import Question, load_questions


# -- judges ----------------------------------------------------------------------------------------------
#: The reference judge specs, as error messages and help texts name them.
REFERENCE_FORMS = ("heuristic", "anthropic:<model>[@<base_url>]  (alias claude:<model>[@<base_url>])")


def make_judge(spec: str, **options: Any) -> Any:
    """A reference judge from its spec: ``heuristic`` (offline, code only) or ``anthropic:<model>[@<base_url>]``
    (:class:`.claude.ClaudeReferenceJudge`; without ``@<base_url>`` the endpoint is ``ANTHROPIC_BASE_URL``,
    else the provider's). The leaf is read by the evaluation judges' parser
    (:func:`axon_eval.judges.registry.parse_api_leaf`), so the grammar is the same for every verb:
    ``claude:<model>`` is an alias of ``anthropic:<model>``, and ``#structured`` is accepted (the reference
    judge always judges in structured output). ``options`` go to the Claude judge (``max_tokens``,
    ``timeout_s``, ...). An unknown or malformed spec raises ``ValueError`` naming it and the valid forms;
    a missing key for the provider endpoint raises :class:`~axon_eval.judges.base.MissingApiKey`."""
    from ..judges.registry import SpecError, parse_api_leaf
    from .heuristic import HeuristicReferenceJudge

    text = (spec or "").strip()
    forms = " | ".join(REFERENCE_FORMS)
    if text == "heuristic":
        if options:
            raise ValueError(f"the heuristic reference judge takes no options, got {sorted(options)}")
        return HeuristicReferenceJudge()
    try:
        leaf = parse_api_leaf(text, spec)
    except SpecError as exc:
        raise ValueError(f"invalid reference judge spec {exc.spec!r}: {exc.problem}; valid forms: {forms}") from None
    if leaf is None:
        raise ValueError(f"unknown reference judge {spec!r}; valid forms: {forms}")
    if leaf.provider != "anthropic":
        raise ValueError(f"reference judge {spec!r}: reference grading runs on the Anthropic API only (structured "
                         f"output); valid forms: {forms}")
    if leaf.mode not in (None, "structured"):
        raise ValueError(f"reference judge {spec!r}: the reference judge needs structured output, not "
                         f"#{leaf.mode}; valid forms: {forms}")
    from .claude import ClaudeReferenceJudge

    return ClaudeReferenceJudge(leaf.model, base_url=leaf.base_url, **options)


def judge_spec(judge: Any) -> str:
    """The spec a judge object would be built from (for folder names and manifests)."""
    from .claude import ClaudeReferenceJudge

    if isinstance(judge, ClaudeReferenceJudge):
        return f"anthropic:{judge.model}" + (f"@{judge.base_url}" if judge.base_url else "")
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


def load_responses(path: str | Path) -> list[dict[str, Any]]:
    """The recorded responses (JSON Lines: ``response_id``, ``question_id``, ``response``); a line that is
    not a JSON object raises ``ValueError`` naming the file and line."""
    out = []
    for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}, line {n}: not JSON: {exc.msg}") from None
        if not isinstance(obj, dict):
            raise ValueError(f"{path}, line {n}: expected a JSON object, got {type(obj).__name__}")
        out.append(obj)
    return out


def load_labels(path: str | Path) -> pd.DataFrame:
    with Path(path).open(newline="", encoding="utf-8") as fh:
        return pd.DataFrame(list(csv.DictReader(fh)))


def grade_set(questions: list[Question], responses: list[dict[str, Any]], db_path: str | Path,
              judge: Any, *, cache: GradeCache | None = None, max_cost_usd: float | None = None,
              concurrency: int = 4) -> list[GradeRecord]:
    """Grade every response (no run folder): :func:`grade_responses`, records in input order."""
    return grade_responses(questions, responses, db_path, judge, cache=cache, max_cost_usd=max_cost_usd,
                           concurrency=concurrency).records


#: Columns of the grade table besides the label columns.
GRADE_COLUMNS = ("response_id", "question_id", "grade", "error_kind", "reasons", "n_criteria", "n_numeric",
                 "n_numeric_failed", "judge_id", "model", "prompt_version", "latency_ms", "input_tokens",
                 "output_tokens", "cache_read_tokens", "cache_creation_tokens", "cost_usd", "cached", "cache_key")


def grade_table(grades: list[GradeRecord], labels: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per record (:data:`GRADE_COLUMNS`; ``reasons`` joined by ``; ``); with ``labels`` also
    ``layer``, ``split``, ``defect``, ``expected_grade`` and the :func:`outcome`. Tokens and cost are
    NaN when unknown (never 0)."""
    rows = [{"response_id": g.response_id, "question_id": g.question_id, "grade": g.grade,
             "error_kind": g.error_kind, "reasons": "; ".join(g.reasons), "n_criteria": len(g.criteria),
             "n_numeric": len(g.numeric), "n_numeric_failed": len(g.numeric_failures), "judge_id": g.judge_id,
             "model": g.model, "prompt_version": g.prompt_version, "latency_ms": g.latency_ms,
             "input_tokens": g.input_tokens, "output_tokens": g.output_tokens,
             "cache_read_tokens": g.cache_read_tokens, "cache_creation_tokens": g.cache_creation_tokens,
             "cost_usd": g.cost_usd, "cached": g.cached, "cache_key": g.cache_key} for g in grades]
    df = pd.DataFrame(rows, columns=list(GRADE_COLUMNS))
    for col in ("latency_ms", "input_tokens", "output_tokens", "cache_read_tokens", "cache_creation_tokens",
                "cost_usd"):
        df[col] = pd.to_numeric(df[col], errors="coerce").astype("float64")
    if labels is not None:
        df = df.merge(labels[["response_id", "layer", "split", "defect", "expected_grade"]], on="response_id",
                      how="left")
        df["outcome"] = [outcome(g, e) for g, e in zip(df["grade"], df["expected_grade"], strict=True)]
    return df


def outcome(grade: str, expected: str) -> str:
    """agree | false_pass | false_fail | review_required | error (an error never counts as agreement
    unless the label expects one)."""
    if grade == expected:
        return "agree"
    if grade == "pass":
        return "false_pass"
    if grade == "review_required":
        return "review_required"
    if grade == "error":
        return "error"
    return "false_fail" if expected == "pass" else "other_disagreement"


def agreement(table: pd.DataFrame) -> dict[str, dict[str, int]]:
    """Counts overall and on the held-out split: false passes, false fails and review-required
    separately (review_required counts every response graded so, expected or not)."""
    out = {}
    for name, part in (("overall", table), ("heldout", table[table["split"] == "heldout"])):
        out[name] = {
            "n_responses": int(len(part)), "n_questions": int(part["question_id"].nunique()),
            "agree": int((part["outcome"] == "agree").sum()),
            "false_pass": int((part["outcome"] == "false_pass").sum()),
            "false_fail": int((part["outcome"] == "false_fail").sum()),
            "review_required": int((part["grade"] == "review_required").sum()),
            "error": int((part["grade"] == "error").sum()),
            "other_disagreement": int(part["outcome"].isin(["other_disagreement", "error"]).sum()
                                      - ((part["outcome"] == "error") & (part["expected_grade"] == "error")).sum()),
        }
    return out


#: The source's worked numeric examples: (reference, claim, unit, explicit tolerance, within as the source says)
SEED_EXAMPLES = (
    ("refund rate", 7.0989, "7.10%", "percent", None, True),
    ("on-time rate", 93.6043, "93.6%", "percent", 0.01, True),
    ("on-time rate", 93.6043, "93.74%", "percent", 0.01, False),
    ("Tanks & Kits refunds", 490636.33, "465,797", "currency", None, False),
    ("sign example", 42.0, "-42", "count", None, False),
    ("scale example", 420.0, "42", "count", None, False),
)


def seed_examples() -> list[dict[str, Any]]:
    rows = []
    for name, ref, claim, unit, tol, expected in SEED_EXAMPLES:
        c = check_value(claim, ref, unit, tolerance=tol)
        rows.append({"example": name, "reference": ref, "claim": claim, "tolerance_rule": c.rule,
                     "tolerance": c.tolerance, "difference": c.difference, "within_tolerance": c.within_tolerance,
                     "error": c.error, "source_says_within": expected})
    return rows


def numeric_failures(grades: list[GradeRecord]) -> pd.DataFrame:
    """Every numeric check outside tolerance, one row per check, with its response id."""
    rows = [{"response_id": g.response_id, **c} for g in grades for c in g.numeric_failures]
    return pd.DataFrame(rows, columns=["response_id", "reference_id", "token", "declared_unit", "reference",
                                       "reported", "converted", "rule", "tolerance", "difference",
                                       "within_tolerance", "error"])


__all__ = ["GRADE_COLUMNS", "SEED_EXAMPLES", "Grading", "agreement", "grade_responses", "grade_set", "grade_table",
           "judge_spec", "load_labels", "load_questions", "load_responses", "make_judge", "numeric_failures", "outcome",
           "seed_examples"]
