"""One record per graded response, and the key under which a grade may be reused. Pure.

A :class:`GradeRecord` is to a reference grade what :class:`axon_eval.judges.records.JudgeRecord` is to a
verdict: the grade (``pass`` / ``fail`` / ``review_required`` / ``error``) with the verified details (each
criterion's status and quote, each numeric check re-done by code), plus provenance (judge id, model,
prompt version), latency, tokens, cost and cache information. A grade that could not be made is an
``error`` record with its reason and ``error_kind``, never a fail or a 0:

==========  ==========================================================================================
evidence    a reference query of the question could not be prepared: grading stopped (no judge call)
judge       the judge call failed (HTTP error after retries, timeout, truncated, refusal) or its reply
            could not be parsed
verify      the judge replied, but its output does not verify (a criterion missing or repeated, a
            quote not in the response, a numeric claim whose token is not a figure of the response,
            an unknown reference id)
budget      not graded: the ``max_cost_usd`` budget would have been exceeded
==========  ==========================================================================================

Grade key (:func:`grade_cache_key`), hex SHA-256 of the JSON list::

    [question_id, question_sha256, evidence_sha256, response_sha256, judge_id, prompt_version,
     judge_config_sha256, GRADING_CODE]

``question_sha256`` hashes the whole question spec (metric, population, period, tolerances, SQL,
criteria), ``evidence_sha256`` every value and row the reference queries returned, ``response_sha256`` the
response text, ``judge_config_sha256`` the judge's configuration (system prompt and output schema for a
model judge, its code for the heuristic) and ``GRADING_CODE`` the source of the code that verifies and
grades (:mod:`.grading`, :mod:`.numeric`, the number parser and :mod:`axon_eval.figures`). A stored
grade is reused only when every part is unchanged. The key is 64 characters of ``[0-9a-f]``.

Units: ``latency_ms`` milliseconds of wall time (retries included); tokens as the API reported them
(``input_tokens`` billed at the base rate, cache reads / writes separately); ``cost_usd`` US dollars
from :mod:`axon_eval.judges.prices`, ``None`` when unknown (the heuristic makes no API call; a model
not in the price table), never a fabricated 0.
"""

from __future__ import annotations

import hashlib
import json
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .evidence import Evidence
from .grading import GRADES, Grade
from .numeric import FAILURES
from .spec import Question

GradeName = Literal["pass", "fail", "review_required", "error"]
ErrorKind = Literal["evidence", "judge", "verify", "budget"]
ERROR_KINDS: tuple[str, ...] = ("evidence", "judge", "verify", "budget")


def sha256_text(text: str) -> str:
    """Hex SHA-256 of ``text`` (UTF-8)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def sha256_json(value: Any) -> str:
    """Hex SHA-256 of ``value`` as canonical JSON (sorted keys, no spaces; non-JSON values as ``str``)."""
    return sha256_text(json.dumps(value, sort_keys=True, separators=(",", ":"), default=str))


def question_sha256(question: Question) -> str:
    return sha256_json(question.to_dict())


def source_sha256(*modules: str) -> str:
    """Hex SHA-256 of the source files of ``modules`` (dotted names under ``axon_eval``), in the given
    order (each file's path relative to the package, then its bytes)."""
    root = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for name in modules:
        path = root.joinpath(*name.split(".")[1:]).with_suffix(".py")
        digest.update(path.relative_to(root).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


@lru_cache(maxsize=1)
def grading_code_sha256() -> str:
    """:func:`source_sha256` of the code that verifies a judge's output and derives the grade."""
    return source_sha256("axon_eval.reference.grading", "axon_eval.reference.numeric",
                         "axon_eval.judges.heuristic.text", "axon_eval.figures")[:16]


def grade_cache_key(question: Question, evidence: Evidence, response: str, judge_id: str, prompt_version: str,
                    judge_config: dict[str, Any]) -> str:
    """The grade key of the module docstring (64 hex characters)."""
    return sha256_json([question.id, question_sha256(question), evidence.sha256(), sha256_text(response),
                        judge_id, prompt_version, sha256_json(judge_config), grading_code_sha256()])


class GradeRecord(BaseModel):
    """One graded response (one line of ``grades.jsonl``); see the module docstring.

    ``criteria``: per criterion ``criterion_id``, ``required``, ``status`` (after code verification),
    ``quote``, ``reason``. ``numeric``: per numeric claim the :class:`~.numeric.NumericCheck` as a dict
    (reference, token, converted value, rule, tolerance, difference, within_tolerance, error).
    ``judge_output``: what the judge returned (assessments and claims) before verification, ``None``
    when it returned nothing usable. ``error`` is set exactly when ``grade == "error"``.
    """

    model_config = ConfigDict(extra="forbid")

    response_id: str
    question_id: str
    judge_id: str
    model: str
    prompt_version: str
    grade: GradeName
    error: str | None = None
    error_kind: ErrorKind | None = None
    reasons: list[str] = Field(default_factory=list)
    criteria: list[dict[str, Any]] = Field(default_factory=list)
    numeric: list[dict[str, Any]] = Field(default_factory=list)
    judge_output: dict[str, Any] | None = None
    question_sha256: str
    evidence_sha256: str | None = None
    response_sha256: str
    latency_ms: float | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_creation_tokens: int | None = None
    cost_usd: float | None = None
    cache_key: str | None = None
    cached: bool = False
    extra: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _error_iff_error_grade(self) -> GradeRecord:
        if (self.grade == "error") != (self.error is not None and bool(self.error.strip())):
            raise ValueError(f"response {self.response_id!r}: an error grade needs an error message and only an "
                             f"error grade may carry one (grade={self.grade!r}, error={self.error!r})")
        if (self.grade == "error") != (self.error_kind is not None):
            raise ValueError(f"response {self.response_id!r}: error_kind {self.error_kind!r} does not fit grade "
                             f"{self.grade!r}")
        return self

    @property
    def graded(self) -> bool:
        """True for pass / fail / review_required (an error record is ungraded)."""
        return self.grade != "error"

    @property
    def numeric_failures(self) -> list[dict[str, Any]]:
        return [c for c in self.numeric if c.get("error") in FAILURES]

    def to_json_line(self) -> str:
        return json.dumps(self.model_dump(mode="json"), ensure_ascii=False, sort_keys=True)

    @classmethod
    def from_json_line(cls, line: str) -> GradeRecord:
        return cls.model_validate_json(line)


def record_from_grade(grade: Grade, question: Question, evidence: Evidence, response: str, *, model: str,
                      prompt_version: str, judge_output: dict[str, Any] | None, cache_key: str | None,
                      **call: Any) -> GradeRecord:
    """A :class:`GradeRecord` of a grade derived by :func:`~.grading.grade_response`. An ``error`` grade is
    ``evidence`` when the evidence failed, else ``verify``. ``call``: latency, tokens, cost, extra."""
    if grade.grade not in GRADES:  # pragma: no cover - grading only produces these
        raise ValueError(f"unknown grade {grade.grade!r}")
    error = "; ".join(grade.reasons) if grade.grade == "error" else None
    kind = None if grade.grade != "error" else ("evidence" if not evidence.ok else "verify")
    return GradeRecord(response_id=grade.response_id, question_id=question.id, judge_id=grade.judge_id,
                       model=model, prompt_version=prompt_version, grade=grade.grade, error=error,
                       error_kind=kind, reasons=list(grade.reasons), criteria=list(grade.criteria),
                       numeric=[c.to_dict() for c in grade.numeric], judge_output=judge_output,
                       question_sha256=question_sha256(question),
                       evidence_sha256=evidence.sha256() if evidence.ok else None,
                       response_sha256=sha256_text(response), cache_key=cache_key, **call)


def error_record(question: Question, evidence: Evidence, response_id: str, response: str, *, judge_id: str,
                 model: str, prompt_version: str, kind: str, error: str, cache_key: str | None = None,
                 **call: Any) -> GradeRecord:
    """An ungraded response: ``grade == "error"`` with ``error_kind`` ``kind`` and the reason ``error``."""
    if kind not in ERROR_KINDS:
        raise ValueError(f"unknown error kind {kind!r}; expected one of {list(ERROR_KINDS)}")
    return GradeRecord(response_id=response_id, question_id=question.id, judge_id=judge_id, model=model,
                       prompt_version=prompt_version, grade="error", error=error, error_kind=kind,
                       reasons=[error], question_sha256=question_sha256(question),
                       evidence_sha256=evidence.sha256() if evidence.ok else None,
                       response_sha256=sha256_text(response), cache_key=cache_key, **call)


__all__ = ["ERROR_KINDS", "GradeRecord", "error_record", "grade_cache_key", "grading_code_sha256",
           "question_sha256", "record_from_grade", "sha256_json", "sha256_text", "source_sha256"]
