"""The ``intent_understood`` check."""

from __future__ import annotations

from .common import CheckResult, _clamp, _facts
from .evidence_index import Evidence, StepInfo
from .question import QuestionProfile
from .targeting import Targeting
from .text import _TOKEN, _norm, _stem


# =============================================================================================
# The four checks
# =============================================================================================
def check_intent(profile: QuestionProfile, evidence: Evidence, answer_step: StepInfo | None,
                 targeting: Targeting, answer: str | None) -> CheckResult:
    """intent_understood, 0-10.

    Start at 10 and subtract: 7 when the answering statement targets a different scope (other
    season, other team, conflicting category, opposite ordering, a measure only named by a COUNT
    alias, no period filter for a dated question, a date range that misses the asked period); 3 for a
    date range wider than the asked period; 3 per asked measure the SQL does not compute (at
    most 4); 4 when the question names a statistic or position the SQL does not compute (a median
    answered by AVG, the second-highest by LIMIT 1); 3 when an asked entity is absent from both filters and rows. Without any SQL: 10 for a
    schema question answered from tools; 7 (answer addresses the question's entities/measures) or 5
    when a data question got no SQL. When every execution failed intent is only shown by statements
    that never ran: bounded to 5-8. An unrecovered failure leaves part of the intent unconfirmed: <= 8.
    Filters the judge cannot map to the question's words are named as unverifiable, not penalised,
    except an opaque id standing for the asked entity (-2: the subject is unconfirmed).
    """
    r = CheckResult(10)
    sql_steps = evidence.steps
    if not sql_steps:
        if profile.schema_question or not profile.data_question:
            r.findings.append("a schema question, answered from tool calls" if evidence.tools
                              else "no data question and no tools needed")
            return r
        text = (answer or "").lower()
        answer_stems = {_stem(w) for w in _TOKEN.findall(_norm(text)) if len(w) > 3}
        addressed = any(e.lower() in text for e in profile.entities) or any(
            profile.lexicon.measures[m][0].search(text) for m in profile.measures) or len(
            {w for w in profile.stems if len(w) > 3} & answer_stems) >= 2
        r.score = 7 if addressed else 5
        r.findings.append("no SQL ran, so understanding is shown only by the answer"
                          + (" (it addresses the question's subject)" if addressed else ""))
        return r
    penalty = 0
    if targeting.wrong_scope:
        penalty += 7
        r.findings.extend(targeting.wrong_scope)
    if targeting.wider and not targeting.wrong_scope:
        penalty += 3
        r.findings.extend(targeting.wider)
    if targeting.missing_measure:
        penalty += min(4, 3 * len(targeting.missing_measure))
        r.findings.append("the SQL computes nothing about " + ", ".join(targeting.missing_measure))
    if targeting.wrong_statistic:
        penalty += 4
        r.findings.extend(targeting.wrong_statistic)
    if targeting.absent_entities:
        penalty += 3
        r.findings.append(", ".join(targeting.absent_entities) + " appears neither in the SQL filters nor in the rows")
    if targeting.unverifiable:
        r.findings.extend(f"unverifiable: {u}" for u in targeting.unverifiable)
        if targeting.opaque_scope:
            penalty += 2
    score = 10 - penalty
    facts = _facts(evidence)
    if facts["all_failed"]:
        score = min(8, max(6, score))
        r.findings.append("every execution failed, so the understanding shown by the statements is unconfirmed")
    elif facts["ended_on_failure"]:
        score = min(8, score)
        r.findings.append("the chain ended on a failed statement, so part of the question was never served")
    r.score = _clamp(score)
    return r


