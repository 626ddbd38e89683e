"""The ``answer_faithfulness`` check: every claim of the answer against the evidence index.

Row horizon
-----------
Only the first ``view.row_horizon`` rows of each statement are visible. A claim that is not found in
the shown rows of a statement that returned more rows than shown is *unverifiable*, not unsupported
(it may sit in the unseen rows) and is named in the explanation. Two claims are never given that
benefit: a count equal to the number of shown rows of a truncated result (it counts the sample, not
the set), and absolute claims (``never``, ``unbeaten``, ``every``, ...) about a truncated result.

Evidence-sampled results (``row_sampler = evidence``) carry a search of every row
(``view.row_selections``, stated in the view text). The checks use exactly what it states, and only
when the capture stored every row:

* a claim (figure, name, date) that *no row holds* is unsupported, not unverifiable -- except a small
  whole number with no unit column, which may count rows (the rule for complete results); so is a
  figure *every row of which is shown* when none of those rows supports it;
* when the sentence names entities and *every row holding each of them is shown*, the rows of those
  entities are complete: a figure they do not hold is unsupported, and an absolute claim about them
  is not flagged (absolute claims are not flagged on complete results either);
* a question entity that no row holds is absent from the result (as on a complete result), not merely
  unfiltered.

Nothing a sampler leaves out is ever taken as support.
"""

from __future__ import annotations

import datetime as _dt
import re
from typing import Any

from .claims import (
    ClaimCheck,
    SUPPORTED,
    UNSUPPORTED,
    UNVERIFIABLE,
    _claims,
    _may_count_rows,
    _same_row,
    _unit_columns,
    affiliation_partner,
    derived_support,
    injection_spans,
    name_form_supported,
    name_supported,
    number_support,
)

from .common import CheckResult, _clamp
from .failure_classes import figure_position_check, row_position_check, unit_check
from .evidence_index import Evidence
from .lexicon import HEDGE, ORDINAL_WORDS
from .question import QuestionProfile
from .text import split_sentences


#: "7.82 out of 10": the number after "out of" is the rating's scale, no claim about the rows
_SCALE_BEFORE = re.compile(r"\bout of\s*$", re.I)
#: words by which a sentence about one row compares it with another
_COMPARES = re.compile(r"\b(than|next|versus|vs\.?|ahead of|behind|compared|whereas|while|runner-up|"
                       r"second|followed by|against)\b", re.I)
_YEAR_BOUND = re.compile(r"\b(since|from|after|before|until|through|up to)\s+$", re.I)


def _rank_value(token: str) -> int | None:
    for word in re.findall(r"[a-z]+|\d+", token.lower()):
        if word in ORDINAL_WORDS:
            return ORDINAL_WORDS[word]
        if word.isdigit():
            return int(word)
    return None


_PERIOD_UNITS = {"year": 366, "years": 366, "month": 31, "months": 31, "quarter": 92, "quarters": 92}


def _period_count(m: Any, profile: QuestionProfile) -> str:
    """``"the two years"`` of a question naming 2023 and 2024: a count of the periods it names."""
    span = _PERIOD_UNITS.get(m.unit)
    if span is None or m.percent or m.currency or not float(m.value).is_integer() or m.value < 1:
        return ""
    if m.unit.startswith("year"):
        n = len(profile.years)
    else:
        n = sum(1 for a, b in profile.periods
                if abs((_dt.date.fromisoformat(b) - _dt.date.fromisoformat(a)).days - span) <= 3)
    return f"counts the {n} {m.unit} the question names" if n == int(m.value) else ""


def check_faithfulness(profile: QuestionProfile, evidence: Evidence, answer: str | None,
                       incomplete: bool, ordered_steps: bool) -> tuple[CheckResult, list[ClaimCheck]]:
    """answer_faithfulness, 0-10 or ``None`` when no answer was captured.

    Claims: numbers, ISO dates, names, rank claims (``third-highest``) and absolute words (``never``,
    ``unbeaten``...) of the answer (sentences that instruct the evaluator are excluded and reported).
    With ``k`` checkable claims of which ``u`` are unsupported (unverifiable ones are left out):

        share = (k - u) / k                           (1 when k = 0)
        faithfulness = 10                              if u = 0
                     = max(0, min(round(10 * share), 4 - u))   if u >= 1

    so one unsupported figure caps the dimension at 3 ("a fluent answer whose figures are
    unsupported is poor"). Unverifiable claims (they may sit in rows the judge does not see) keep the
    dimension below full marks (at most 9): they are listed, never counted as support. When nothing was retrieved successfully (no rows, no tool output) and the
    answer states anything unsupported, at most 1. An answer that presents an incomplete set as
    complete (no hedging such as "at least", "could not") is capped at 7; instructions to the
    evaluator in the answer cap it at 7 (never extra credit).
    """
    if answer is None:
        return CheckResult(None, ["no answer captured: faithfulness is null"]), []
    r = CheckResult(10)
    skip = injection_spans(answer)
    lex = profile.lexicon
    numbers, texts = _claims(answer, skip, lex, profile.text)
    checks: list[ClaimCheck] = []
    trunc = evidence.truncated_steps
    sentences = split_sentences(answer)
    names = [t for t in texts if t.kind == "name"]

    def sentence_of(pos: int) -> tuple[int, int]:
        return next(((a, b) for a, b in sentences if a <= pos < b), (0, len(answer)))

    def rows_for(pos: int) -> set[tuple[int, int]]:
        a, b = sentence_of(pos)
        return evidence.rows_named_in(answer[a:b])

    for m in numbers:
        ctx = answer[max(0, m.start - 40):m.end + 30]
        bound = _YEAR_BOUND.search(answer[max(0, m.start - 10):m.start]) if m.is_year else None
        if bound and evidence.row_years and (
                min(evidence.row_years) >= m.value if bound.group(1).lower() in ("since", "from", "after")
                else max(evidence.row_years) <= m.value):
            checks.append(ClaimCheck(m.token, "figure", SUPPORTED, "a bound of the rows' years", m.start, m.end))
            continue
        if m.value > 0 and float(m.value).is_integer() and trunc and int(m.value) in evidence.shown_counts_truncated \
                and m.unit and not m.currency and not m.kind \
                and not any(pat.fullmatch(m.unit) or pat.search(m.unit) for pat, _ in lex.measures.values()) \
                and _unit_columns(m.unit, evidence.cells, lex) is None:
            checks.append(ClaimCheck(m.token, "figure", UNSUPPORTED,
                                     f"counts the {int(m.value)} shown rows, but the statement returned "
                                     f"{trunc[0].total}", m.start, m.end))
            continue
        if _SCALE_BEFORE.search(answer[max(0, m.start - 12):m.start]):
            checks.append(ClaimCheck(m.token, "figure", SUPPORTED, "the scale of a rating (out of N)", m.start, m.end))
            continue
        periods = _period_count(m, profile)
        if periods:
            checks.append(ClaimCheck(m.token, "figure", SUPPORTED, periods, m.start, m.end))
            continue
        sent_start = sentence_of(m.start)[0]
        status, reason = number_support(m, evidence.cells, ctx, evidence.complete_row_counts,
                                        rows_for(m.start) or None,
                                        preceding=answer[max(sent_start, m.start - 30):m.start], lexicon=lex)
        if status == UNSUPPORTED and rows_for(m.start) and _COMPARES.search(answer[slice(*sentence_of(m.start))]):
            # the sentence names one row and compares it with another ("less than Edinburgh (71,788.5)",
            # "the next-most frequent stayed 18 times"): a figure of any shown row may be meant
            other, _ = number_support(m, evidence.cells, ctx, evidence.complete_row_counts, None,
                                                 preceding=answer[max(sent_start, m.start - 30):m.start], lexicon=lex)
            if other == SUPPORTED:
                status, reason = SUPPORTED, "a figure of another row the sentence compares with"
        if status == UNSUPPORTED and not reason.startswith(("sign", "scale")):
            derived = derived_support(m, evidence.cells, answer[max(sent_start, m.start - 30):m.start])
            if derived:
                status, reason = (UNSUPPORTED if derived.startswith("sign") else SUPPORTED), derived
        units = unit_check(m, evidence, answer)
        if units is not None and (units[0] == UNSUPPORTED or status == UNSUPPORTED):
            status, reason = units
        if status == SUPPORTED and not m.is_year:
            misplaced = figure_position_check(profile.text, profile.top_n, evidence, m.value, m.token,
                                              [o.value for o in numbers if o is not m])
            if misplaced:
                status, reason = UNSUPPORTED, misplaced
        if status == UNSUPPORTED and trunc and not reason.startswith(("sign", "scale", "unit")):
            a, b = sentence_of(m.start)
            named_rows = rows_for(m.start)
            if named_rows and evidence.entities_complete(answer[a:b]) and float(m.value).is_integer() \
                    and int(m.value) == len(named_rows):
                status, reason = SUPPORTED, "counts the rows of what the sentence names (every such row is shown)"
            elif _may_count_rows(m, evidence):
                status, reason = UNVERIFIABLE, "not in the shown rows; may lie beyond the row horizon"
            elif evidence.searched_absent(m.token):
                reason = "no row of the result holds it (a search of every row)"
            elif evidence.searched_fully(m.token):
                reason = "every row holding it is shown, and none of them supports it here"
            elif rows_for(m.start) and evidence.entities_complete(answer[a:b]):
                reason = "every row of what the sentence names is shown, and none holds it"
            else:
                status, reason = UNVERIFIABLE, "not in the shown rows; may lie beyond the row horizon"
        checks.append(ClaimCheck(m.token, "figure", status, reason, m.start, m.end))
    for t in texts:
        if t.kind == "date":
            ok = t.token in evidence.dates or t.token in evidence.corpus
            status = SUPPORTED if ok else (UNVERIFIABLE if trunc and not evidence.searched_absent(t.token)
                                           else UNSUPPORTED)
            checks.append(ClaimCheck(t.token, "date", status, "" if ok else "date not in the retrieved rows",
                                     t.start, t.end))
        elif t.kind == "name":
            ok = name_supported(t.token, evidence.corpus) or name_form_supported(t.token, evidence.corpus, lex)
            status = SUPPORTED if ok else (UNVERIFIABLE if trunc and not evidence.searched_absent(t.token)
                                           else UNSUPPORTED)
            reason = "" if ok else "name not in the rows, tool output or question"
            if ok:
                misplaced = row_position_check(profile.text, profile.top_n, evidence, t.token, answer)
                if misplaced:
                    status, reason = UNSUPPORTED, misplaced
                partner = affiliation_partner(answer, t, names)
                if partner is not None and not _same_row(evidence, partner.token, t.token):
                    status = UNSUPPORTED
                    reason = f"no retrieved row pairs {t.token} with {partner.token}"
            checks.append(ClaimCheck(t.token, "name", status, reason, t.start, t.end))
        elif t.kind == "rank":
            ordered = [s for s in evidence.ok_steps if s.sql.order]
            rank = _rank_value(t.token)
            ok = bool(ordered) and (rank is None or rank <= max(s.total for s in ordered))
            reason = ("" if ok else "no ordered result supports a ranking" if not ordered
                      else f"a rank of {rank} but the ordered result has only {max(s.total for s in ordered)} rows")
            checks.append(ClaimCheck(t.token, "rank", SUPPORTED if ok else UNSUPPORTED, reason, t.start, t.end))
        elif t.kind == "absolute" and trunc and not evidence.entities_complete(answer[slice(*sentence_of(t.start))]):
            checks.append(ClaimCheck(t.token, "absolute", UNSUPPORTED,
                                     f"an absolute claim about a result of {trunc[0].total} rows of which only "
                                     f"{trunc[0].shown} are shown", t.start, t.end))
    unsupported = [c for c in checks if c.status == UNSUPPORTED]
    checkable = [c for c in checks if c.status != UNVERIFIABLE]
    k, u = len(checkable), len(unsupported)
    if u == 0:
        score = 10
    else:
        share = (k - u) / k
        score = max(0, min(round(10 * share), 4 - u))
        if not evidence.any_success:
            score = min(score, 1)
    unverifiable = [c for c in checks if c.status == UNVERIFIABLE]
    if unverifiable:
        # a claim the judge could not check is not a supported one: below full marks, and listed
        score = min(score, 9)
    if incomplete and not HEDGE.search(answer):
        score = min(score, 7)
        r.findings.append("the answer presents an incomplete set as the full answer")
    if skip:
        score = min(score, 7)
        r.findings.append("the answer contains instructions to the evaluator, which are not a report of the rows")
    r.score = _clamp(score)
    r.flags["k"], r.flags["u"] = k, u
    r.flags["unverifiable"] = len(unverifiable)
    return r, checks


