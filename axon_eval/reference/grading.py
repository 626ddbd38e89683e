"""The judge's output, verified by code, and the grade it implies. Pure.

A judge returns one :class:`Assessment` per criterion and the :class:`NumericClaim` s it found. Code
checks that every criterion is assessed exactly once, that every quote of a pass occurs in the response
and can show something, and re-checks every numeric claim (:mod:`.numeric`). Quotes are compared on
normalised text (:func:`axon_eval.figures.normalise_text`: case, whitespace, typographic quotes and
dashes, ``per cent`` and number-unit spacing) at word boundaries (:func:`axon_eval.figures.occurs_in`:
``7`` is not in ``7.10%``). A quote too short to show a criterion (a bare figure, a word or two;
:func:`axon_eval.figures.quote_is_sufficient`) makes that criterion unverifiable. The grade:

* ``error``: the evidence could not be prepared, or the judge's output does not verify (a criterion
  missing or repeated, a quote not in the response, a numeric claim whose token is not a figure of the
  response, an unknown reference id); never a guess, never a fail;
* ``fail``: a required criterion fails or a numeric check finds the figure wrong (sign, scale, unit,
  out of tolerance: :data:`.numeric.FAILURES`);
* ``review_required``: otherwise, when any criterion is unverifiable (as the judge said, or because its
  quote is too short, or because the figure of a value criterion is verified by no claim) or a numeric
  claim is shown too coarsely to verify (``imprecise``: ``$1M`` for 1,400,000);
* ``pass``: every required criterion passes and every numeric check is within tolerance.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from ..figures import occurs_in, quote_is_sufficient
from .evidence import Evidence
from .numeric import NumericCheck, check_claim
from .spec import Question

STATUSES = ("pass", "fail", "unverifiable")
GRADES = ("pass", "fail", "review_required", "error")


@dataclass(frozen=True)
class Assessment:
    criterion_id: str
    status: str  # pass | fail | unverifiable
    quote: str = ""  # from the response (required for a pass)
    reason: str = ""  # the wrong claim or the missing requirement for a fail


@dataclass(frozen=True)
class NumericClaim:
    token: str  # as written in the response
    reference_id: str
    declared_unit: str


@dataclass
class JudgeOutput:
    judge_id: str
    assessments: list[Assessment] = field(default_factory=list)
    claims: list[NumericClaim] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Judgement:
    """What one judge call gave for one response: its ``output`` (``None`` when the call failed or the
    reply could not be parsed, with the reason in ``error``), wall time in ms, tokens and cost in USD
    (``None`` when unknown or no API call), and call details (request id, tries, raw reply, notes)."""

    output: JudgeOutput | None
    error: str | None = None
    latency_ms: float | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_creation_tokens: int | None = None
    cost_usd: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if (self.output is None) == (self.error is None):
            raise ValueError(f"a judgement holds exactly one of output or error (error={self.error!r})")

    def call_fields(self) -> dict[str, Any]:
        """Latency, tokens, cost and extra, as :class:`~.records.GradeRecord` fields."""
        return {"latency_ms": self.latency_ms, "input_tokens": self.input_tokens,
                "output_tokens": self.output_tokens, "cache_read_tokens": self.cache_read_tokens,
                "cache_creation_tokens": self.cache_creation_tokens, "cost_usd": self.cost_usd,
                "extra": dict(self.extra)}


@dataclass
class Grade:
    question_id: str
    response_id: str
    judge_id: str
    grade: str
    reasons: list[str]
    criteria: list[dict[str, Any]]
    numeric: list[NumericCheck]
    key: str = ""

    @property
    def numeric_failures(self) -> list[NumericCheck]:
        """Checks that found the response's figure wrong (not the imprecise or unverified ones)."""
        return [c for c in self.numeric if c.failed]

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["numeric"] = [c.to_dict() for c in self.numeric]
        return d


def quote_occurs(quote: str, response: str) -> bool:
    """Does ``quote`` occur in ``response`` after normalisation (:func:`axon_eval.figures.normalise_text`),
    at word boundaries?"""
    return occurs_in(quote, response)


def grade_response(question: Question, evidence: Evidence, response_id: str, response: str,
                   output: JudgeOutput | None, *, key: str = "") -> Grade:
    """Verify ``output`` (the judge's assessment of ``response``) and derive the grade (module docstring).
    ``output`` may be ``None`` only when the evidence failed. ``key``: the grade key to carry."""
    judge_id = output.judge_id if output else ""
    if not evidence.ok:
        return Grade(question.id, response_id, judge_id, "error",
                     [f"evidence could not be prepared, grading stopped: {evidence.error}"], [], [], key)
    assert output is not None
    problems: list[str] = []
    by_id: dict[str, list[Assessment]] = {}
    for a in output.assessments:
        by_id.setdefault(a.criterion_id, []).append(a)
    known = {c.id for c in question.criteria}
    for cid in sorted(set(by_id) - known):
        problems.append(f"assessment of unknown criterion {cid}")
    rows: list[dict[str, Any]] = []
    for c in question.criteria:
        got = by_id.get(c.id, [])
        if len(got) != 1:
            problems.append(f"criterion {c.id} assessed {len(got)} times (exactly once required)")
            continue
        a = got[0]
        if a.status not in STATUSES:
            problems.append(f"criterion {c.id}: unknown status {a.status!r}")
            continue
        status, reason = a.status, a.reason
        if a.status == "pass" and not quote_occurs(a.quote, response):
            problems.append(f"criterion {c.id}: quote not found in the response: {a.quote!r}")
        elif a.status == "pass" and not quote_is_sufficient(a.quote):
            status, reason = "unverifiable", (f"insufficient quote {a.quote!r}: a bare figure or a word or two "
                                              f"cannot show the criterion")
        rows.append({"criterion_id": c.id, "required": c.required, "status": status, "quote": a.quote,
                     "reason": reason})
    values = {v.id: v for v in question.values}
    checks: list[NumericCheck] = []
    for claim in output.claims:
        if claim.reference_id not in values:
            problems.append(f"numeric claim {claim.token!r} maps to unknown reference {claim.reference_id}")
            continue
        check = check_claim(response, claim.token, values[claim.reference_id],
                            evidence.values[claim.reference_id], claim.declared_unit)
        checks.append(check)
        if check.not_verified:
            problems.append(f"numeric claim {claim.token!r} on {claim.reference_id}: {check.error} (not one "
                            f"figure written in the response, after normalising spacing and unit words)")
    checked_ok = {c.reference_id for c in checks if c.within_tolerance}
    coarse = {c.reference_id: c for c in checks if c.imprecise and c.reference_id not in checked_ok}
    for row in rows:  # a passing value criterion needs a verified claim on its value
        crit = next(c for c in question.criteria if c.id == row["criterion_id"])
        if crit.kind == "value" and row["status"] == "pass" and crit.value not in checked_ok:
            row["status"], row["reason"] = "unverifiable", (
                f"figure too coarse to verify: {coarse[crit.value].note}" if crit.value in coarse
                else f"no numeric claim on {crit.value} verified by code")
    if problems:
        return Grade(question.id, response_id, judge_id, "error", ["judge output does not verify: " + p
                                                                   for p in problems], rows, checks, key)
    reasons = [f"required criterion {r['criterion_id']} failed: {r['reason']}" for r in rows
               if r["required"] and r["status"] == "fail"]
    reasons += [f"numeric check {c.reference_id} {c.token!r}: {c.error} ({c.rule}, reference {c.reference:g})"
                for c in checks if c.failed]
    if reasons:
        grade = "fail"
    elif any(r["status"] == "unverifiable" for r in rows) or coarse:
        grade = "review_required"
        reasons = [f"criterion {r['criterion_id']} unverifiable: {r['reason']}" for r in rows
                   if r["status"] == "unverifiable"]
        said = {r["reason"] for r in rows}
        reasons += [f"numeric check {c.reference_id} {c.token!r}: imprecise, {c.note}" for c in coarse.values()
                    if f"figure too coarse to verify: {c.note}" not in said]
    else:
        grade = "pass"
    return Grade(question.id, response_id, judge_id, grade, reasons, rows, checks, key)
