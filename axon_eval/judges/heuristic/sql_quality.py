"""The ``sql_quality`` check."""

from __future__ import annotations

from .common import CheckResult, _clamp, _facts
from .evidence_index import Evidence, StepInfo
from .question import QuestionProfile
from .targeting import Targeting


def check_sql_quality(profile: QuestionProfile, evidence: Evidence, answer_step: StepInfo | None,
                      targeting: Targeting, horizon: int) -> CheckResult:
    """sql_quality, 0-10.

    * No SQL at all: 10 for a question that needed none (schema/metadata), 1 for a data question.
    * Only guardrail-blocked statements: 10 (the block is the system working).
    * Every execution failed: 2. An unrecovered final failure: -4. Recovered failures: no penalty.
    * On the answering statement: the largest *material* flaw counts once, -4 (wrong scope,
      narrowing filter/one-sided join, a fan-out join inflating an aggregate, a statistic or position
      the SQL does not compute, a LIMIT that cuts a set asked for in full, a LIMIT below the
      asked top N); unfiltered entity on a result larger than the horizon -3; missing aggregation
      for how-many/total/average over several rows -2 (-3 beyond the horizon), except a how-many
      answered with a listing's full recorded ``row_count`` (:func:`~.targeting.listing_count`:
      sound, a note only); unparseable SQL -3; no ORDER BY for a top-N question -2.
    """
    r = CheckResult(10)
    facts = _facts(evidence)
    if not evidence.steps:
        if profile.schema_question or not profile.data_question:
            r.findings.append("a request to change data: refusing needs no SQL" if profile.write_request
                              else "no SQL was needed and none ran")
            return r
        r.score = 1
        r.findings.append("a data question answered without any SQL" + ("" if evidence.tools else " or tool"))
        return r
    if facts["only_blocked"]:
        r.findings.append("the guardrail blocked the statement(s): the system working, not an agent failure")
        return r
    if facts["all_failed"]:
        r.score = 2
        errs = [f"step {s.index} {s.step.status}" for s in evidence.steps if s.step.status in ("error", "timeout")]
        r.findings.append("every SQL execution failed (" + ", ".join(errs) + ")")
        return r
    score = 10.0
    if facts["ended_on_failure"]:
        last = [s for s in evidence.steps if s.step.status in ("error", "timeout")][-1]
        score -= 4
        r.findings.append(f"step {last.index} ended in {last.step.status} and was never retried")
    recovered = [s for s in evidence.steps if s.step.status in ("error", "timeout")
                 and any(o.ok and o.index > s.index for o in evidence.steps)]
    if recovered:
        r.findings.append(f"{len(recovered)} failed statement(s) recovered by a later successful one: no penalty")
    if answer_step is None:
        r.score = _clamp(score)
        return r
    sql = answer_step.sql
    if not sql.parsed:
        score -= 3
        r.findings.append(f"step {answer_step.index} does not parse ({sql.error})")
        r.score = _clamp(score)
        return r
    material: list[str] = []
    material.extend(targeting.wrong_scope)
    material.extend(targeting.narrowing)
    material.extend(targeting.wider)
    material.extend(targeting.inflated)
    material.extend(targeting.wrong_statistic)
    material.extend(targeting.miscomputed)
    if sql.limit is not None and answer_step.total >= sql.limit:
        if profile.top_n and sql.limit < profile.top_n:
            material.append(f"LIMIT {sql.limit} is below the top {profile.top_n} asked for")
        elif profile.wants_set and not profile.direction:
            material.append(f"LIMIT {sql.limit} cuts a set the question asks for in full")
    if material:
        score -= 4
        r.findings.append(f"step {answer_step.index}: " + "; ".join(material))
    unfiltered = bool(targeting.unfiltered) and answer_step.total > horizon
    if unfiltered:
        score -= 3
        r.findings.append(f"step {answer_step.index} does not filter on {', '.join(targeting.unfiltered)}: "
                          f"it fetches {answer_step.total} rows instead")
    if profile.wants_aggregate and answer_step.total > 1 and not unfiltered and not targeting.listing_count and (
            not sql.aggregates or answer_step.total > horizon):
        score -= 3 if answer_step.total > horizon else 2
        r.findings.append(f"the question asks for a count/total/average but step {answer_step.index} "
                          f"returns {answer_step.total} rows to be counted by hand instead of aggregating")
    if profile.top_n and not sql.order:
        score -= 2
        r.findings.append(f"a top-{profile.top_n} question without ORDER BY")
    r.flags["material"] = material
    r.score = _clamp(score)
    return r


