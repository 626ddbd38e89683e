"""The ``result_relevance`` check."""

from __future__ import annotations

from .claims import _fmt_value, _unit_columns
from .common import CheckResult, _clamp, _facts
from .evidence_index import Evidence, StepInfo
from .question import QuestionProfile
from .sql_facts import _parts
from .targeting import Targeting
from .text import _TOKEN, _stem, extract_numbers


def expected_total(profile: QuestionProfile, answer: str | None,
                   evidence: Evidence | None = None) -> list[tuple[int, str, str]]:
    """Counts the question or answer states for a measure: ``(n, unit, token)`` such as (7, tries, "7 tries").

    A count qualifies when the noun after it is a unit of the lexicon or names a numeric column of
    the rows (``12 orders`` with an ``orders`` column)."""
    out = []
    lex = profile.lexicon
    for text in (profile.text, answer or ""):
        for m in extract_numbers(text):
            if not m.unit or m.value <= 1 or not float(m.value).is_integer() or m.percent or m.kind \
                    or m.currency or m.is_year or m.explicit_sign != "":
                continue
            if m.unit in lex.units or (evidence is not None and _unit_columns(m.unit, evidence.cells, lex)):
                out.append((int(m.value), m.unit, f"{m.token} {m.unit}"))
    return out


def check_relevance(profile: QuestionProfile, evidence: Evidence, answer_step: StepInfo | None,
                    targeting: Targeting, answer: str | None, horizon: int) -> CheckResult:
    """result_relevance, 0-10 (judged from the shown rows plus the full row count).

    No SQL: 10 for a schema question whose tool output covers it (8 otherwise); 0 with no steps;
    2 when a data question got only tool output. Only guardrail blocks: 9 (nothing may be retrieved;
    refusing is the right outcome). All executions failed: 0. On the answering statement: empty
    result (no rows, or only NULLs) 2; wrong scope -8; a figure inflated by a fan-out join -5; a
    statistic or position the SQL does not compute -4; a date filter open on one side for a bounded
    period -4; asked entity absent -5; an incomplete set -5 (narrowing filter or
    one-sided join, a LIMIT that cuts the set or returns fewer than the top N asked for, or the rows'
    measure column summing to less than the
    count the question/answer states); unrecovered failure caps at 5. A result larger than the
    horizon is stated (the judge sees a sample) and not penalised.
    """
    r = CheckResult(10)
    facts = _facts(evidence)
    if not evidence.steps:
        if not evidence.tools:
            r.score = 0
            r.findings.append("nothing was retrieved: no tools and no SQL")
            return r
        if profile.schema_question or not profile.data_question:
            covered = any(_stem(w) in evidence.corpus for w in _TOKEN.findall(profile.norm) if len(w) > 4)
            r.score = 10 if covered else 8
            r.findings.append("tool output covers the schema question" if covered
                              else "tool output only partly covers the schema question")
            return r
        r.score = 2
        r.findings.append("only tool output came back; no rows answer the data question")
        return r
    if facts["only_blocked"]:
        r.score = 9
        r.findings.append("no rows: the guardrail refused the request, which is the correct outcome")
        return r
    if facts["all_failed"] or answer_step is None:
        r.score = 0
        r.findings.append("no statement succeeded, so no rows can answer the question")
        return r
    st = answer_step
    score = 10.0
    if st.total == 0:
        score = 2
        r.findings.append(f"step {st.index} returned no rows")
        r.flags["empty"] = True
    elif not st.truncated and st.step.rows and all(all(v is None for v in row) for row in st.step.rows):
        # SUM/AVG/MAX over no matching rows gives one row of NULLs: as empty as no rows at all
        score = 2
        r.findings.append(f"step {st.index} returned only NULLs (an aggregate over no matching rows)")
        r.flags["empty"] = True
    if targeting.wrong_scope:
        score -= 8
        r.findings.append(f"the rows of step {st.index} answer a different question")
    if targeting.absent_entities:
        score -= 5
        r.findings.append(f"{', '.join(targeting.absent_entities)} is not in the rows of step {st.index}")
    if targeting.inflated:
        score -= 5
        r.findings.append(f"the figure of step {st.index} is inflated by a one-to-many join: "
                          + "; ".join(targeting.inflated))
    if targeting.miscomputed:
        score -= 5
        r.findings.append(f"the figure of step {st.index} is computed wrongly: " + "; ".join(targeting.miscomputed))
    if targeting.wrong_statistic:
        score -= 4
        r.findings.append(f"the rows of step {st.index} hold a neighbour of what was asked: "
                          + "; ".join(targeting.wrong_statistic))
    if targeting.open_ended:
        score -= 4
        r.findings.append(f"the rows of step {st.index} may include periods the question does not ask about")
    incomplete: list[str] = list(targeting.narrowing)
    sql = st.sql
    if sql.limit is not None and st.total >= sql.limit and profile.wants_set and not profile.direction \
            and not profile.top_n:
        incomplete.append(f"LIMIT {sql.limit} returned exactly {st.total} rows, so the set may be cut")
    if sql.limit is not None and profile.top_n and sql.limit < profile.top_n and st.total >= sql.limit:
        incomplete.append(f"the question asks for the top {profile.top_n} but LIMIT {sql.limit} returns "
                          f"only {st.total} rows")
    if not st.truncated:
        row_values = {c.value for c in evidence.cells if c.source == "row" and c.step == st.index}
        for n, unit, token in expected_total(profile, answer, evidence):
            if n in row_values:
                continue  # a figure one row holds (a team's 260 points) is not a total over the rows
            stems = _unit_columns(unit, evidence.cells, profile.lexicon) or profile.lexicon.units.get(unit, ())
            cols = [j for j, c in enumerate(st.step.columns) if any(p.startswith(stems) for p in _parts(c))]
            for j in cols:
                values = [row[j] for row in st.step.rows if isinstance(row[j], int | float)]
                if values and len(values) == len(st.step.rows) and len(values) > 1 and sum(values) < n:
                    incomplete.append(f"\"{token}\" but the {st.step.columns[j]} rows of step {st.index} "
                                      f"account for only {_fmt_value(sum(values))}")
                    break
            else:
                continue
            break
    if incomplete:
        score -= 5
        r.findings.append("incomplete set: " + "; ".join(incomplete))
        r.flags["incomplete"] = incomplete
    if facts["ended_on_failure"]:
        score = min(score, 5)
        r.findings.append("a later statement failed, so rows for part of the question never came back")
    if st.truncated and not st.count_known:
        r.findings.append(f"step {st.index} shows {st.shown} rows and its full row count is unknown (not "
                          "captured), so the result may be larger")
    elif st.truncated:
        r.findings.append(f"step {st.index} returned {st.total} rows; the judge sees only the first "
                          f"{st.shown} (row horizon {horizon})")
    r.score = _clamp(score)
    return r


