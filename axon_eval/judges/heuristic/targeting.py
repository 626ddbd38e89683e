"""Targeting: which statement answers the question, and how its filters, measures and ordering
compare with what the question asks (shared by the intent, SQL and relevance checks)."""

from __future__ import annotations

import datetime as _dt
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .evidence_index import StepInfo, _mention_key
from . import failure_classes
from .failure_classes import is_amount_unit, miscomputed_findings, statistic_gaps, threshold_stated
from .question import QuestionProfile
from .sql_facts import SqlAnalysis, SqlFilter, _parts, measure_in_sql
from .text import _ISO_DATE, _TOKEN, _norm, _stem, extract_numbers


def step_grounding(profile: QuestionProfile, info: StepInfo) -> float:
    """How well a statement matches the question (used to pick the statement that answers it).

    +2 per question measure the SQL computes, +2 per question entity in the filters or rows (written
    out, or as a code that reads as it: an abbreviation or a lexicon entry),
    +1 per question year in the filters, +1 when a top-N question meets a LIMIT/ORDER BY, +1 per
    question word stem found in the SQL's identifiers or literals.
    """
    sql = info.sql
    score = 0.0
    for meas in profile.measures:
        if measure_in_sql(meas, sql, profile.lexicon) == "computed":
            score += 2
    literal_text = " ".join(sql.literals)
    for ent in profile.entities:
        e = ent.lower()
        if e in literal_text or e in info.text or any(
                filter_maps_to(profile, f, ent) in ("lexicon", "abbreviation") for f in sql.filters if not f.is_date):
            score += 2  # an entity written as a code ('CA' for California) grounds the statement too
    score += len(profile.years & sql.years)
    rng = sql_date_range(sql) if profile.periods else None
    if rng is not None:
        lo, hi, _ = rng
        if any((not lo or lo < b) and (not hi or hi > a) for a, b in profile.periods):
            score += 2
        if lo and hi and any(a <= lo and hi <= b for a, b in profile.periods):
            score += 1
    if profile.top_n and (sql.limit or sql.order):
        score += 1
    sql_words = {_stem(p) for p in sql.identifiers} | {_stem(p) for lit in sql.literals for p in _parts(lit)}
    score += 0.5 * len(profile.stems & sql_words)
    return score


def pick_answer_step(profile: QuestionProfile, steps: Sequence[StepInfo]) -> StepInfo | None:
    """The statement that answers this question: the best-grounded one (ties: the later one)."""
    best, best_score = None, -1.0
    for info in steps:
        s = step_grounding(profile, info)
        if s >= best_score:
            best, best_score = info, s
    return best


@dataclass
class Targeting:
    """Targeting problems of the answering statement (shared by intent, SQL and relevance)."""

    wrong_scope: list[str] = field(default_factory=list)  # answers a different question
    narrowing: list[str] = field(default_factory=list)  # filters that cut the asked-for set
    unfiltered: list[str] = field(default_factory=list)  # asked entity not used as a filter
    missing_measure: list[str] = field(default_factory=list)
    absent_entities: list[str] = field(default_factory=list)
    #: filters or periods the judge cannot map to the question's words (named, never "wrong scope")
    unverifiable: list[str] = field(default_factory=list)
    #: a period filter wider than (or open beyond) the period the question names
    wider: list[str] = field(default_factory=list)
    #: a date filter open on one side for a bounded period the question names (also in ``wider``)
    open_ended: list[str] = field(default_factory=list)
    #: aggregates of a parent column over a one-to-many join: an inflated figure
    inflated: list[str] = field(default_factory=list)
    #: statistics or positions the question names and the SQL does not compute
    wrong_statistic: list[str] = field(default_factory=list)
    #: figures the SQL computes wrongly (:func:`.failure_classes.miscomputed_findings`: integer division,
    #: COUNT over UNION ALL or of a nullable column, a mean of means, a LEFT JOIN made inner, a period on
    #: another event's date column, AVG of COALESCE(x, 0))
    miscomputed: list[str] = field(default_factory=list)
    #: the answering statement selects its subject by an id the judge cannot tie to the asked entity
    opaque_scope: bool = False
    #: a count answered from the full row count of a listing (sound: no aggregation deduction)
    listing_count: str = ""
    #: how filters were read (``state = 'TX' read as Texas``)
    notes: list[str] = field(default_factory=list)


def _literal_conflict(profile: QuestionProfile, literal: str) -> str | None:
    """A category literal that contradicts the question's qualifier (``quarter-final`` vs ``semi-finals``)."""
    words = [_stem(w) for w in _TOKEN.findall(_norm(literal))]
    if not words or any(ch.isupper() for ch in literal[:1]) or _ISO_DATE.fullmatch(literal):
        return None
    qwords = [_stem(w) for w in _TOKEN.findall(profile.norm)]
    head = words[-1]
    if head not in qwords:
        return None
    phrase = " ".join(words)
    if phrase in " ".join(qwords):
        return None
    for i, w in enumerate(qwords):
        if w == head:
            prev = qwords[i - 1] if i > 0 else ""
            lit_prev = words[-2] if len(words) > 1 else ""
            if prev in profile.lexicon.qualifiers and prev != lit_prev:
                return f"the question says \"{prev} {head}\" but the SQL filters '{literal}'"
    return None


def _is_abbreviation(code: str, words: str) -> bool:
    """``code`` reads as an abbreviation of ``words``: its initials (``NY`` <- New York) or its letters
    in order from the first letter (``TX`` <- Texas, ``CA`` <- California)."""
    c = re.sub(r"[^a-z]", "", code.lower())
    w = words.lower()
    if len(c) < 2 or len(c) > 5 or not w or c[0] != w[0]:
        return False
    if c == "".join(part[0] for part in w.split() if part):
        return True
    i = 0
    for ch in w.replace(" ", ""):
        if i < len(c) and ch == c[i]:
            i += 1
    return i == len(c) and len(w.split()) == 1


_WORD_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")


def _has_words(text: str, words: str) -> bool:
    """``words`` occurs in ``text`` with no ``[a-z0-9]`` on either side (``oh`` is not in ``ohio``).

    A plain ``str.find`` scan rather than a regex built from ``words``: every call has other words,
    so a pattern would be compiled (or looked up in ``re``'s cache) per call."""
    if not words:
        return False
    end = len(words)
    at = text.find(words)
    while at >= 0:
        if (at == 0 or text[at - 1] not in _WORD_CHARS) and text[at + end:at + end + 1] not in _WORD_CHARS:
            return True
        at = text.find(words, at + 1)
    return False


def column_word(entity: str, sql: SqlAnalysis, literal_text: str = "") -> str:
    """The SQL word a one-word capitalised or plural question word stands for ("Seniors" for the
    literal 'senior', "ISBNs" for the column ``isbn``, "Copies" for the table ``copies``), or ``""``.

    Its lower-case form or its singular (:func:`~.text._stem`) must be a part of a referenced column,
    table or output alias, or a whole word of a string literal: then the question word names what
    the SQL counts or filters, not an entity the rows must show. Names of more than one word are
    never read this way."""
    if " " in entity.strip():
        return ""
    low = entity.strip().lower()
    for form in dict.fromkeys((low, _stem(low), low[:-1] if low.endswith("s") else low)):
        if len(form) >= 3 and (form in sql.identifiers or form in sql.aliases
                               or _has_words(literal_text.lower(), form)):
            return form
    return ""


_HOW_OFTEN = re.compile(r"\bhow often\b", re.I)
_SHARE_CUES = re.compile(r"\bpercent|%|\bshare\b|\brate\b|\bproportion\b", re.I)
#: output-alias words that name a share computed as a fraction (``late_fraction``)
SHARE_ALIAS_PARTS = frozenset({"fraction", "proportion", "frac"})


def share_computed(question: str, sql: SqlAnalysis) -> str:
    """How ``sql`` answers a question that reads as asking for a percentage without naming one in
    its identifiers, or ``""``:

    * the mean of a condition (``AVG(CASE WHEN late THEN 1 ELSE 0 END)``): a fraction in [0, 1],
      the share of rows meeting it, which an answer may state as a percentage;
    * an output alias naming a fraction or proportion (``late_fraction``);
    * "how often" with no other share word (percent, share, rate, proportion), answered by a COUNT:
      a frequency is a number of times, not necessarily a percentage.
    """
    if "avg" in sql.aggregates and sql.conditional_agg:
        return "the mean of a condition (a fraction)"
    if sql.aliases & SHARE_ALIAS_PARTS:
        return "a fraction (output " + "/".join(sorted(sql.aliases & SHARE_ALIAS_PARTS)) + ")"
    if _HOW_OFTEN.search(question) and not _SHARE_CUES.search(_HOW_OFTEN.sub(" ", question)) \
            and "count" in sql.aggregates:
        return "a count (\"how often\" asks for a number of times)"
    return ""


_COUNT_QUESTION = re.compile(r"\bhow many\b|\bnumber of\b", re.I)


def listing_count(profile: QuestionProfile, info: StepInfo, answer: str | None) -> str:
    """A note when a how-many question is answered from the full row count of a listing: the
    statement aggregates nothing, the capture records its full ``row_count`` (larger than the rows
    shown), and the answer states exactly that count. The count is the rows' own size, so it is
    sound (the agent read ``row_count``, it did not count shown rows by hand); ``""`` otherwise."""
    if not answer or not _COUNT_QUESTION.search(profile.text) or info.sql.aggregates:
        return ""
    if not info.count_known or info.total <= info.shown:
        return ""
    if any(not m.percent and m.value == info.total for m in extract_numbers(answer)):
        return (f"the count {info.total:,} is the listing's full row count (step {info.index}), "
                "not a count of the shown rows")
    return ""


def filter_maps_to(profile: QuestionProfile, f: SqlFilter, entity: str | None = None) -> str:
    """How a filter literal relates to the question's words: ``"same"`` (the question writes it),
    ``"lexicon"`` (an abbreviation or synonym of the lexicon, or a place the entity is the adjective
    or demonym of: ``France`` for "French", :meth:`Lexicon.places_of`), ``"abbreviation"`` (its letters spell
    the entity's initials or the start of it), or ``""`` (the judge cannot map it)."""
    value = f.value.strip().strip("%")
    low = value.lower()
    if not low or _has_words(profile.norm, low) or _has_words(profile.norm, _norm(value)):
        return "same"
    targets = [entity.lower()] if entity else [e.lower() for e in profile.entities]
    lex = profile.lexicon
    expansions = lex.expand_code(value)
    if expansions and (any(x in profile.norm for x in expansions) or any(x in tgt or tgt in x for x in expansions
                                                                         for tgt in targets)):
        return "lexicon"
    related = lex.related(low) | lex.related(_stem(low))
    if any(r in profile.norm.split() or _stem(r) in profile.stems for r in related if r != low):
        return "lexicon"
    # an adjective or demonym of the place the literal names ("French" partners: country = 'France')
    if any(low in lex.places_of(tgt) for tgt in targets) or (
            entity is None and any(low in lex.places_of(w) for w in profile.norm.split())):
        return "lexicon"
    if any(_is_abbreviation(value, tgt) for tgt in targets):
        return "abbreviation"
    return ""


# ---------------------------------------------------------------------------------------------
# periods
# ---------------------------------------------------------------------------------------------
def _next_day(d: str) -> str:
    try:
        return (_dt.date.fromisoformat(d) + _dt.timedelta(days=1)).isoformat()
    except ValueError:
        return d


def sql_date_range(sql: SqlAnalysis) -> tuple[str, str, list[SqlFilter]] | None:
    """The ``[start, end)`` date range the statement's date filters select (``""`` = unbounded), with
    those filters; ``None`` when it has none. ``= '2024-03-05'`` is a day, ``LIKE '2024-03%'`` a month."""
    lo, hi, used = "", "", []
    for f in sql.filters:
        if not f.is_date:
            continue
        v = f.value.rstrip("%").rstrip("-")[:10]
        if len(v) == 4:  # a year prefix ('2024-%')
            a, b = f"{v}-01-01", f"{int(v) + 1:04d}-01-01"
        elif len(v) == 7:  # a month prefix
            from .question import _month_range

            a, b = _month_range(int(v[:4]), int(v[5:7]))
        else:
            a, b = v, _next_day(v)
        if f.op in ("eq", "like", "in"):
            f_lo, f_hi = a, b
        elif f.op in ("gte", "gt"):
            f_lo, f_hi = (a if f.op == "gte" else b), ""
        elif f.op in ("lt", "lte"):
            f_lo, f_hi = "", (a if f.op == "lt" else b)
        else:
            continue
        used.append(f)
        lo = max(lo, f_lo) if f_lo else lo
        hi = min(hi, f_hi) if (f_hi and hi) else (f_hi or hi)
    return (lo, hi, used) if used else None


_YEAR_PARTS = frozenset({"year", "yr", "season", "fy"})


def sql_year_range(sql: SqlAnalysis) -> tuple[float, float] | None:
    """The ``[first, past_last)`` years that comparisons on a year column select (``s.year < 2024`` ->
    ``(-inf, 2024)``, ``fiscal_year BETWEEN``/``>= 2022 AND <= 2023`` -> ``(2022, 2024)``), or ``None``
    when no year column is compared with a year by an inequality (equality alone is read through
    :attr:`SqlAnalysis.years`): an inequality's literal year is not the year it selects."""
    lo, hi, found, inequality = -math.inf, math.inf, False, False
    for f in sql.filters:
        if f.is_string or f.op not in ("eq", "gt", "gte", "lt", "lte") or not (_YEAR_PARTS & set(_parts(f.column))):
            continue
        try:
            year = float(f.value)
        except ValueError:
            continue
        if not (1900 <= year <= 2100 and year.is_integer()):
            continue
        found, inequality = True, inequality or f.op != "eq"
        f_lo, f_hi = {"eq": (year, year + 1), "gt": (year + 1, math.inf), "gte": (year, math.inf),
                      "lt": (-math.inf, year), "lte": (-math.inf, year + 1)}[f.op]
        lo, hi = max(lo, f_lo), min(hi, f_hi)
    return (lo, hi) if found and inequality else None


_YEAR_BOUND = re.compile(r"\b(since|from|starting (?:in|from)|after|before|until|till|through|up to|prior to)"
                         r"\s+(?:the\s+)?((?:19|20)\d\d)\b(?:\s+(onwards?|on))?", re.I)


def question_year_bound(question: str) -> tuple[float, float] | None:
    """The open year range a question states with a bound word (``since 2021`` -> ``[2021, inf)``,
    ``after 2021`` -> ``[2022, inf)``, ``before 2024`` -> ``(-inf, 2024)``, ``through 2023`` ->
    ``(-inf, 2024)``), or ``None``. ``from 2021`` counts only when no ``to``/``until`` year follows
    (``from 2021 to 2023`` names a closed range, read elsewhere)."""
    m = _YEAR_BOUND.search(question)
    if not m:
        return None
    word, year = m.group(1).lower(), float(m.group(2))
    if word == "from" and re.match(r"\s*(?:-|to|until|till|through)\s*(?:19|20)\d\d", question[m.end():], re.I):
        return None
    if word in ("since", "from") or word.startswith("starting"):
        return year, math.inf
    if word == "after":
        return year + 1, math.inf
    if word in ("before", "prior to"):
        return -math.inf, year
    return -math.inf, year + 1  # until, till, through, up to: the year itself included


# "more than 5", "at least 5", "5 or more", "fewer than 5", "at most 5", ... -> the operator they mean
_CMP_BEFORE = [(re.compile(r"\b(?:more|greater|higher|larger) than\s*$|\b(?:over|above|exceeding|in excess of)\s*$",
                           re.I), "gt"),
               (re.compile(r"\b(?:at least|no (?:less|fewer) than|(?:a )?minimum of)\s*$", re.I), "gte"),
               (re.compile(r"\b(?:fewer|less|lower|smaller) than\s*$|\b(?:under|below)\s*$", re.I), "lt"),
               (re.compile(r"\b(?:at most|no more than|(?:a )?maximum of)\s*$", re.I), "lte")]
_CMP_AFTER = [(re.compile(r"^(?:\s+[a-z]+){0,2}?\s+or (?:more|above|higher|greater|over)\b|^\+", re.I), "gte"),
              (re.compile(r"^(?:\s+[a-z]+){0,2}?\s+or (?:fewer|less|lower|below|under)\b", re.I), "lte")]
_OP_TEXT = {"gt": ">", "gte": ">=", "lt": "<", "lte": "<="}
#: a strict bound excludes its number: the first value kept above it, the last kept below it
_STEP = {"gt": 1, "gte": 0, "lt": -1, "lte": 0}


def question_thresholds(question: str) -> list[tuple[str, float]]:
    """The thresholds a question states: ``(op, number)`` with op gt/gte/lt/lte (``more than 5`` ->
    ``("gt", 5)``, ``5 or more`` -> ``("gte", 5)``, ``at most 5`` -> ``("lte", 5)``). Years are not
    thresholds."""
    out = []
    for n in extract_numbers(question):
        if n.is_year or n.ordinal:
            continue
        before = question[max(0, n.start - 30):n.start]
        op = next((o for rx, o in _CMP_BEFORE if rx.search(before)), None) or next(
            (o for rx, o in _CMP_AFTER if rx.search(question[n.end:n.end + 40])), None)
        if op is not None:
            out.append((op, n.value))
    return out


def _threshold_findings(profile: QuestionProfile, sql: SqlAnalysis, t: Targeting) -> None:
    """A threshold the question states against the SQL's comparisons with the same number (or the
    integer next to it, so ``more than 5`` and ``>= 6`` agree). The same direction with another
    boundary: the SQL drops the boundary value (narrowing) or keeps it although the question excludes
    it (wider). Only the opposite direction on that number: the SQL answers a different question."""
    for q_op, n in question_thresholds(profile.text):
        lower = q_op in ("gt", "gte")
        near = [f for f in sql.thresholds if _as_float(f.value) is not None and abs(_as_float(f.value) - n) <= 1]
        same = [f for f in near if (f.op in ("gt", "gte")) == lower]
        if same:
            f = min(same, key=lambda f: abs(_as_float(f.value) - n))
            v = _as_float(f.value)
            if v != n and not (float(n).is_integer() and float(v).is_integer()):
                continue  # "more than 5" against "> 5.5": not the same number, nothing to compare
            # the first whole value each keeps (a lower bound) or the last (an upper bound)
            q_first, s_first = n + _STEP[q_op], v + _STEP[f.op]
            if s_first == q_first:
                continue
            asked, kept = f"{_OP_TEXT[q_op]} {n:g}", f"{f.column} {_OP_TEXT[f.op]} {f.value}"
            drops = (s_first > q_first) if lower else (s_first < q_first)
            if drops:
                t.narrowing.append(f"the question asks for {asked} but the SQL keeps {kept}, which drops the "
                                   "boundary value")
            else:
                t.wider.append(f"the question asks for {asked} but the SQL keeps {kept}, which also keeps the "
                               "boundary value")
        else:
            opposite = [f for f in near if _as_float(f.value) == n]
            if opposite:
                f = opposite[0]
                t.wrong_scope.append(f"the question asks for {_OP_TEXT[q_op]} {n:g} but the SQL keeps "
                                     f"{f.column} {_OP_TEXT[f.op]} {f.value}")


def _as_float(value: str) -> float | None:
    try:
        return float(value)
    except ValueError:
        return None


def _fmt_years(lo: float, hi: float) -> str:
    if lo == -math.inf:
        return f"years before {hi:.0f}"
    if hi == math.inf:
        return f"{lo:.0f} onwards"
    return f"{lo:.0f}" if hi == lo + 1 else f"{lo:.0f} to {hi - 1:.0f}"


def _fmt_range(lo: str, hi: str) -> str:
    if lo and hi:
        return f"{lo} up to {hi}"
    return f"from {lo}" if lo else f"before {hi}"


def _lists_dates(info: StepInfo) -> bool:
    """The statement lists several rows with a date-like column (the asked period is among them)."""
    return info.total > 1 and any(p in ("date", "day", "month", "week", "year", "period")
                                  for c in info.step.columns for p in _parts(c))


def _period_findings(profile: QuestionProfile, info: StepInfo, t: Targeting, evidence: Any = None) -> None:
    """Compare the question's period with the statement's date and year filters.

    With a date range: one that misses every period the question names is a wrong scope; one open
    on a side (``>= '2024-01-01'`` alone for 2024) is unverifiable (right only if the data ends
    there); one wider than asked is a period flaw (``wider``) when it is aggregated into one row, and
    only noted when the rows list the dates (the asked period is among them); one strictly inside a
    named period narrows the set; one equal to a named period (or spanning several) is right.
    Without a date range, year filters are compared with the question's years; with no period
    filter at all, years shown by the rows decide (only other years: wrong scope); with no year in
    the rows, a question naming one year is a wrong scope (the rows cover every period) and one
    naming several years is unverifiable (right only if the data holds just those years).
    A date filter the question does not ask for narrows the set, unless the question names a
    relative period ("last month"), which the judge cannot date: then it is unverifiable.
    """
    sql = info.sql
    rng = sql_date_range(sql)
    if profile.periods:
        if rng is not None:
            lo, hi, _ = rng
            q_lo = min(a for a, _ in profile.periods)
            q_hi = max(b for _, b in profile.periods)
            asked = ", ".join(_fmt_range(a, b) for a, b in profile.periods[:3])
            selected = _fmt_range(lo, hi)
            if (lo and lo >= q_hi) or (hi and hi <= q_lo):
                t.wrong_scope.append(f"the question asks about {asked} but the SQL's date filters select {selected}")
            elif (not lo or not hi) and (lo or q_lo) >= q_lo and (hi or q_hi) <= q_hi and _lists_dates(info):
                t.notes.append(f"the date filter is open-ended ({selected}); the rows list the dates, so {asked} "
                               "is among them")
            elif (not lo or not hi) and (lo or q_lo) >= q_lo and (hi or q_hi) <= q_hi \
                    and not failure_classes.OPEN_ENDED_PERIOD_IS_DEFECT:
                t.unverifiable.append(f"the date filter is open-ended ({selected}): it matches {asked} only if the "
                                      "data ends there")
            elif (not lo or not hi) and (lo or q_lo) >= q_lo and (hi or q_hi) <= q_hi:
                # a bounded period asked, a filter open on one side: rows of other periods are in it
                # unless the data happen to end there, which the evidence does not show
                finding = (f"the question asks about {asked} but the date filter is open-ended ({selected}): "
                           "rows outside the asked period are included unless the data end there")
                t.open_ended.append(finding)
                t.wider.append(finding)
            elif not lo or not hi or lo < q_lo or hi > q_hi:
                listed = info.total > 1 and any(p in ("date", "day", "month", "week", "year", "period")
                                                 for c in info.step.columns for p in _parts(c))
                if listed:
                    t.notes.append(f"the date filter selects {selected}; the rows list the dates, so {asked} is "
                                   "among them")
                else:
                    t.wider.append(f"the question asks about {asked} but the SQL's date filters select {selected}, "
                                   "a wider period")
            elif (lo, hi) in profile.periods or (lo == q_lo and hi == q_hi):
                pass
            else:
                inside = next(((a, b) for a, b in profile.periods if a <= lo and hi <= b), None)
                if inside is not None:
                    t.narrowing.append(f"the date filter selects {selected}, only part of the "
                                       f"{_fmt_range(*inside)} the question asks about")
            return
        if profile.years:
            years = sql_year_range(sql)
            bound = question_year_bound(profile.text)
            if years is not None and bound is not None:
                q_lo, q_hi = bound
                asked = _fmt_years(q_lo, q_hi)
                if years[0] >= q_hi or years[1] <= q_lo:
                    t.wrong_scope.append(f"the question asks about {asked} but the SQL's year filters select "
                                         f"{_fmt_years(*years)}")
                elif years[0] > q_lo or years[1] < q_hi:
                    t.narrowing.append(f"the question asks about {asked} but the SQL's year filters select "
                                       f"{_fmt_years(*years)}, part of it")
            elif years is not None and not any(years[0] <= y < years[1] for y in profile.years):
                t.wrong_scope.append(f"the question asks about {_years(profile.years)} but the SQL's year filters "
                                     f"select {_fmt_years(*years)}")
            elif sql.years and not (profile.years & sql.years):
                t.wrong_scope.append(f"the question asks about {_years(profile.years)} but the SQL filters "
                                     f"{_years(sql.years)}")
            elif not sql.years and not any(str(y) in info.text for y in profile.years):
                shown = evidence.step_years.get(info.index, frozenset()) if evidence is not None else frozenset()
                if shown and not (shown & profile.years):
                    t.wrong_scope.append(f"the question asks about {_years(profile.years)} but the rows hold "
                                         f"{_years(shown)}")
                elif shown:
                    pass
                elif len(profile.years) == 1:
                    t.wrong_scope.append(f"the question asks about {_years(profile.years)} but the SQL has no "
                                         "period filter, so the rows cover every period")
                else:
                    t.unverifiable.append(f"the question names {_years(profile.years)} and the SQL has no period "
                                          "filter: right only if the data holds just those years")
        return
    if rng is None:
        return
    lo, hi, used = rng
    if profile.relative_period:
        t.unverifiable.append(f"the date filter ({_fmt_range(lo, hi)}) stands for a period the question names "
                              "relative to today, which the judge cannot date")
    else:
        cols = sorted({f.column for f in used})
        t.narrowing.append(f"the date filter on {', '.join(cols)} ({_fmt_range(lo, hi)}) is not in the question "
                           "and narrows the set")


def _schema_numeric_columns(schema_text: str) -> set[str]:
    return {m.group(1) for m in _TYPED_COLUMN.finditer(schema_text)}


_TYPED_COLUMN = re.compile(r"\b([a-z][a-z0-9_]*)\s*(?::\s*)?\(?\s*(?:integer|int|bigint|smallint|real|numeric|"
                           r"decimal|float|double|money|number)\b", re.I)


def _modifier_column(profile: QuestionProfile, measure: str, sql: SqlAnalysis) -> str:
    """The SQL column named by the word before a measure word of the question ("battery capacity" ->
    ``battery_kwh``, "seating capacity" -> ``seats``): a compound measure computed under its
    modifier's name; ``""`` when there is none."""
    m = profile.lexicon.measures[measure][0].search(profile.text)
    if m is None:
        return ""
    before = re.findall(r"[A-Za-z]+", profile.text[:m.start()])
    if not before or before[-1].lower() in profile.lexicon.not_names or len(before[-1]) < 4:
        return ""
    word = before[-1].lower()
    stems = {_stem(word), word[:-3] if word.endswith("ing") else word}  # "seating" -> seat
    for col in sorted(sql.all_columns):
        if any(len(p) >= 4 and (_stem(p) in stems or any(p.startswith(s) for s in stems if len(s) >= 4))
               for p in _parts(col)):
            return col
    return ""


def evidence_measures(profile: QuestionProfile, info: StepInfo, evidence: Any) -> list[str]:
    """Question words that name a numeric column the evidence knows (typed in the schema discovery
    output, or holding numbers in another statement's rows) that the answering statement never reads."""
    if evidence is None:
        return []
    cols: set[str] = {"_".join(c) for c in evidence.numeric_columns}
    for _, tool in evidence.tools:
        if tool.status == "ok" and tool.output is not None:
            cols |= {c.lower() for c in _schema_numeric_columns(tool.output if isinstance(tool.output, str)
                                                                 else repr(tool.output))}
    sql_parts = {p for p in info.sql.identifiers | info.sql.aliases}
    sql_stems = {_stem(p) for p in sql_parts}
    lex = profile.lexicon
    covered = {s for m in profile.measures for s in lex.measures[m][1]}
    out = []
    for word in sorted({w for w in profile.stems if len(w) >= 4 and w not in lex.not_names}):
        if any(word.startswith(s) or s.startswith(word) for s in covered if len(s) >= 3):
            continue
        named = [c for c in cols if any(p == word or (_stem(p) == word) for p in _parts(c))
                 and not any(p in ("id", "key") for p in _parts(c))]
        if not named:
            continue
        related = {_stem(r) for r in lex.related(word)} | {word}
        if any(s.startswith(tuple(related)) for s in sql_stems) or any(p.startswith(tuple(related)) for p in sql_parts):
            continue
        out.append(f"{word} (column {named[0]})")
    return out


_KEY_PARTS = frozenset({"id", "code", "key", "name", "no", "num", "number", "ref"})


def _names_for_filter(info: StepInfo, f: SqlFilter, others: Sequence[StepInfo] = ()) -> set[str]:
    """Proper names the rows show for the thing a filter selects: capitalised string cells in a
    column that shares a word with the filter's column or comes from a table named after it
    (``team_id = 7`` -> the ``team`` column; ``channel_id = 3`` -> ``ch.name`` of ``marketing_channels``),
    or, in another statement's rows, next to the filtered value in a column of the same name (a lookup)."""
    words = {_stem(w) for w in _parts(f.column)} - _KEY_PARTS
    if not words:
        return set()
    out: set[str] = set()

    def proper(v: Any) -> bool:
        return isinstance(v, str) and v[:1].isupper() and not _ISO_DATE.fullmatch(v) and len(v) < 80

    if info.step.columns:
        sources = dict(info.sql.output_sources)
        cols = []
        for j, c in enumerate(info.step.columns):
            cparts = {_stem(w) for w in _parts(c)} - _KEY_PARTS
            tparts = {_stem(w) for w in _parts(sources.get(c.lower(), ""))}
            if words & cparts or words & tparts:
                cols.append(j)
        for row in info.step.rows:
            for j in cols:
                if j < len(row) and proper(row[j]):
                    out.add(row[j])
    if not out:
        for o in others:
            cols = [c.lower() for c in o.step.columns]
            if f.column not in cols:
                continue
            k = cols.index(f.column)
            for row in o.step.rows:
                if k < len(row) and str(row[k]) == f.value:
                    out.update(v for v in row if proper(v))
    return out


def _answer_takes_first_row(info: StepInfo, answer: str | None) -> bool:
    """The first name the answer gives is held by the first row of the result and not by its last."""
    rows = info.step.rows
    if not answer or len(rows) < 2:
        return False
    low = answer.lower()
    first = [v.lower() for v in rows[0] if isinstance(v, str) and v[:1].isupper()]
    last = {v.lower() for v in rows[-1] if isinstance(v, str)}
    hits = sorted((low.find(v), v) for v in first if v and low.find(v) >= 0 and v not in last)
    if not hits:
        return False
    others = [low.find(v.lower()) for row in rows[1:] for v in row if isinstance(v, str) and v[:1].isupper()
              and v.lower() not in first and low.find(v.lower()) >= 0]
    return not others or hits[0][0] < min(others)


def _entity_columns(info: StepInfo, entity: str) -> list[str]:
    """Result columns holding names shaped like ``entity``: mostly capitalised names, at least one of
    them as many words as the entity (team names mix "Highmoor" and "Kestrel Bay", so the word count
    of most values says nothing): the column a filter on the entity itself would select by."""
    n_words = len(entity.split())
    out = []
    for j, c in enumerate(info.step.columns):
        values = [row[j] for row in info.step.rows[:50] if j < len(row) and isinstance(row[j], str)]
        names = [v for v in values if v[:1].isupper() and not v.isupper()]
        if names and len(names) >= max(1, len(values) // 2) and any(len(v.split()) == n_words for v in names):
            out.append(c)
    return out


def _coded_cell(profile: QuestionProfile, info: StepInfo, entity: str) -> str:
    """A short code in the rows (``TX``) that stands for the asked entity (``Texas``), or ``""``."""
    seen: set[str] = set()
    for row in info.step.rows[:200]:
        for v in row:
            if isinstance(v, str) and 2 <= len(v) <= 6 and v not in seen:
                seen.add(v)
                # only the lexicon: letters alone cannot tell MI (Michigan) from MS (Mississippi) in a column
                if filter_maps_to(profile, SqlFilter("cell", "eq", v, True), entity) == "lexicon":
                    return v
    return ""


_OPS = {"gt": ">", "gte": ">=", "lt": "<", "lte": "<="}


def _snake_form(name: str) -> set[str]:
    """``"tram operators"`` -> ``{"tram_operators", "tram_operator"}``: a several-word name as a
    snake_case value, as written and with its last word singular (a plural of a coded category)."""
    words = [w for w in re.split(r"[\s-]+", name.lower()) if w]
    last = words[-1]
    singular = (last[:-3] + "y" if last.endswith("ies") else last[:-2] if last.endswith(("ses", "xes", "ches", "shes"))
                else last[:-1] if last.endswith("s") else last)
    return {"_".join(words), "_".join(words[:-1] + [singular])}


def _snake_literals(literals: Any) -> set[str]:
    return {lit.lower() for lit in literals if "_" in lit}


#: UNION without ALL removes repeated rows: a count over it is a count of distinct rows
_UNION_DISTINCT = re.compile(r"\bunion\b(?!\s+all\b)", re.I)
_HOW_MANY_DISTINCT = re.compile(r"\bhow many (distinct|different|unique|individual|separate) ([a-z]+)", re.I)
_HOW_MANY = re.compile(r"\bhow many (?:distinct |different |unique |individual )?([a-z]+)", re.I)


#: words that make a "how many" question ask for a ratio, which may be fractional
_RATIO_WORDS = re.compile(r"\b(?:per|average|avg|mean|on average|rate|ratio|share|percent(?:age)?|proportion|"
                          r"fraction|typical(?:ly)?|median)\b|%", re.I)


def _amount_for_count(profile: QuestionProfile, info: StepInfo, evidence: Any) -> str:
    """A "how many <things>" question (no ratio asked) whose aggregating statement shows no whole
    number at all: a count is an integer, so rows holding only fractional values (``160887.79`` for
    "how many units") compute an amount, not the count asked for. Read from the rows, so it needs no
    word list of measures; years and ids are not values of the answer and are skipped."""
    m = _HOW_MANY.search(profile.text)
    sql = info.sql
    if not m or evidence is None or not sql.aggregates or _RATIO_WORDS.search(profile.text):
        return ""
    after = re.findall(r"[a-z]+", profile.text[m.start(1):m.start(1) + 40].lower())[:3]
    if any(is_amount_unit(w) for w in after):
        return ""  # "how many cubic metres / kilometres / kWh": an amount in a unit, not a count of things
    values = [c.value for c in evidence.cells if c.source == "row" and c.step == info.index
              and not ({"year", "season", "id"} & set(c.column) or (c.column and c.column[-1] == "id"))]
    if not values or any(float(v).is_integer() for v in values):
        return ""
    return (f"the question asks how many {m.group(1).lower()} but the rows of step {info.index} hold no whole "
            f"number (e.g. {values[0]:g}): the SQL computes an amount, not a count")


def _count_mismatch(profile: QuestionProfile, sql: SqlAnalysis) -> str:
    """A "how many <things>" question whose statement counts the rows of another table: only
    ``COUNT(*)`` (no DISTINCT of the things' key), the FROM table is not the things, and the things
    are another table of the join (``how many customers`` -> ``COUNT(*) FROM orders JOIN customers``)."""
    m = _HOW_MANY.search(profile.text)
    if not m or not sql.count_args or not sql.from_table or sql.group_by:
        return ""
    noun = _stem(m.group(1).lower())
    related = {_stem(w) for w in profile.lexicon.related(noun)} | {noun}
    if any(a != "*" for a in sql.count_args):
        return ""
    from_parts = {_stem(p) for p in _parts(sql.from_table)}
    if from_parts & related:
        return ""
    other_tables = [tb for tb in sql.tables if tb != sql.from_table and {_stem(p) for p in _parts(tb)} & related]
    if not other_tables:
        return ""
    return f"{m.group(1).lower()} (COUNT(*) counts rows of {sql.from_table}, not of {other_tables[0]})"


def assess_targeting(profile: QuestionProfile, info: StepInfo, horizon: int,
                     other_steps: Sequence[StepInfo] = (), evidence: Any = None,
                     answer: str | None = None) -> Targeting:
    """Compare the question with the statement that answers it (periods, entities, categories,
    measures, ordering, one-sided joins, narrowing and missing filters).

    ``other_steps``: the other successful statements; an entity they filter on or show in their rows
    is not "absent" (the turn retrieved it), though the answering statement still decides scope.
    A filter written as a code the judge cannot map to the question's words (``state = 'TX'`` for a
    question about a place it has no lexicon entry for) is *unverifiable* and named; only a filter
    on a different *name* (a capitalised literal that is neither the entity nor an abbreviation of
    it) is a wrong scope.
    """
    t = Targeting()
    sql = info.sql
    if not sql.parsed:
        return t
    _period_findings(profile, info, t, evidence)
    t.inflated.extend(sql.fan_out)
    t.wrong_statistic.extend(statistic_gaps(profile.text, info.step.sql, sql, info.total))
    t.miscomputed.extend(miscomputed_findings(profile.text, sql, info.step.rows))
    # entities
    literal_text = " | ".join(sql.literals)
    specific = [f for f in sql.filters if (f.specific or f.is_code) and not f.is_date
                and filter_maps_to(profile, f) != "same"]
    for ent in profile.entities:
        e = ent.lower()
        if e in literal_text:
            continue
        snake = sorted(_snake_form(e) & _snake_literals(sql.literals)) if (" " in e or "-" in e) else []
        if snake:
            t.notes.append(f"{ent} read as the value {snake[0]!r} of the SQL (words joined by _)")
            continue
        word = column_word(ent, sql, literal_text)
        if word:
            t.notes.append(f"{ent} read as the word {word!r} of the SQL, not a name")
            continue
        mapped = [f for f in specific if filter_maps_to(profile, f, ent)] or [
            lit for lit in (SqlFilter("literal", "eq", v, True) for v in sql.raw_literals)
            if filter_maps_to(profile, lit, ent) in ("lexicon", "abbreviation")]
        if mapped:
            f = mapped[0]
            t.notes.append(f"{f.column} = {_quote_lit(f)} read as {ent} ({filter_maps_to(profile, f, ent)})")
            continue
        coded = _coded_cell(profile, info, ent)
        if coded:
            t.notes.append(f"the rows' '{coded}' read as {ent}")
            continue
        if e in info.text:
            t.unfiltered.append(ent) if info.truncated else None
            continue
        if info.truncated and _mention_key(ent) not in info.absent_mentions:
            t.unfiltered.append(ent)
        elif any(e in " | ".join(o.sql.literals) or e in o.text for o in other_steps):
            continue
        elif any(_names_for_filter(info, f, other_steps) for f in specific):
            f = next(f for f in specific if _names_for_filter(info, f, other_steps))
            shown = sorted(_names_for_filter(info, f, other_steps))[:3]
            t.wrong_scope.append(f"the question names {ent} but the SQL filters {f.column} = {_quote_lit(f)}, "
                                 f"which the rows show as {', '.join(shown)}")
        elif any(f.is_code for f in specific) and _entity_columns(info, ent) and not any(
                set(_parts(f.column)) & set(_parts(c)) for f in specific if f.is_code for c in _entity_columns(info, ent)):
            # the rows list things of the entity's kind in another column: the code filter does not
            # stand for the entity, it narrows the set the entity belongs to
            f = next(f for f in specific if f.is_code)
            t.narrowing.append(f"the filter {f.column} = {_quote_lit(f)} is not in the question and narrows the set "
                               f"({ent} is not in the rows)")
        elif any(f.is_code for f in specific):
            f = next(f for f in specific if f.is_code)
            t.unverifiable.append(f"the filter {f.column} = {_quote_lit(f)} is a code the judge cannot map to "
                                  f"\"{ent}\" (neither the question nor the lexicon spells it)")
        elif any(f.is_string and not f.is_code for f in specific):
            f = next(f for f in specific if f.is_string and not f.is_code)
            t.wrong_scope.append(f"the question names {ent} but the SQL filters {f.column} = "
                                 f"{_quote_lit(f)} and {ent} is not in the rows")
        elif specific:
            f = specific[0]
            t.unverifiable.append(f"the filter {f.column} = {_quote_lit(f)} is an id the judge cannot tie to "
                                  f"\"{ent}\" (no row names it)")
            t.opaque_scope = True
        else:
            t.absent_entities.append(ent)
    for d in profile.dates:
        if d not in literal_text and info.truncated and sql_date_range(sql) is None:
            t.unfiltered.append(d)
    # categories and measures
    for lit in sql.literals:
        conflict = _literal_conflict(profile, lit)
        if conflict:
            t.wrong_scope.append(conflict)
    for meas in sorted(profile.measures):
        where = measure_in_sql(meas, sql, profile.lexicon)
        if where == "alias" and sql.count_only and not sql.arithmetic and not sql.conditional_agg:
            t.wrong_scope.append(f"the question asks for {meas} but the SQL only names a COUNT '{meas}' "
                                 "without any condition that selects them")
        elif where == "" and meas == "percentage" and share_computed(profile.text, sql):
            t.notes.append("the share is computed as " + share_computed(profile.text, sql))
        elif where == "" and (modifier := _modifier_column(profile, meas, sql)):
            t.notes.append(f"{meas} read as {modifier} (the column of the word before it)")
        elif where == "" and (profile.wants_aggregate or not profile.lexicon.measures[meas][0].search(info.text)):
            # a measure word the shown rows hold as a value ("who scored the try" over rows of
            # event_type 'try') is a thing being looked up, not a quantity left uncomputed
            t.missing_measure.append(meas)
    t.missing_measure.extend(evidence_measures(profile, info, evidence))
    counted = _count_mismatch(profile, sql)
    if counted:
        t.wrong_scope.append(f"the question asks how many {counted}")
    amount = _amount_for_count(profile, info, evidence)
    if amount:
        t.wrong_scope.append(amount)
    if sql.ungrouped_columns:
        cols = ", ".join(sql.ungrouped_columns)
        t.wrong_scope.append(f"the SQL puts {cols} beside an aggregate without GROUP BY, so one arbitrary row's "
                             f"{cols} stands against a total over every row")
    m = _HOW_MANY_DISTINCT.search(profile.text)
    if m and sql.count_args and not any(a.startswith("distinct") for a in sql.count_args) \
            and "distinct" not in info.step.sql.lower() and not _UNION_DISTINCT.search(info.step.sql):
        t.wider.append(f"the question asks how many {m.group(1).lower()} {m.group(2).lower()} but the SQL counts "
                       f"rows ({', '.join(f'COUNT({a})' for a in sql.count_args)}) without DISTINCT, so repeats "
                       "are counted")
    if "average" in profile.measures and sql.aggregates and "avg" not in sql.aggregates and not sql.arithmetic \
            and not profile.wants_set:
        t.wrong_scope.append(f"the question asks for an average but the SQL aggregates with "
                             f"{', '.join(sorted(a.upper() for a in sql.aggregates))} and never divides")
        t.missing_measure = [m for m in t.missing_measure if m != "average"]  # one finding, not two
    asked = [m for m in profile.measures if m not in ("average", "percentage", "margin")]
    if asked and all(m in t.missing_measure for m in asked) and sql.aggregates:
        t.wrong_scope.append(f"the question asks for {', '.join(sorted(asked))} but the SQL aggregates something "
                             "else")
    t.listing_count = listing_count(profile, info, answer)
    if t.listing_count:
        t.notes.append(t.listing_count)
    _threshold_findings(profile, sql, t)
    for f in sql.filters:
        if f.is_string or f.op not in ("gt", "gte", "lt", "lte"):
            continue
        parts = set(_parts(f.column))
        if parts & {"year", "season", "date", "month", "day", "id", "time", "at"} or f.column.endswith("_id"):
            continue
        try:
            v = float(f.value)
        except ValueError:
            continue
        if v == 0 or any(abs(abs(n.value) - abs(v)) < 1e-9 for n in profile.numbers):
            continue
        stated = threshold_stated(profile.text, f.column, v)
        if stated:
            t.notes.append(f"the filter {f.column} {_OPS[f.op]} {f.value} read as the question's {stated}")
            continue
        t.narrowing.append(f"the filter {f.column} {_OPS[f.op]} {f.value} is not in the question and narrows the set")
    # ordering direction
    # on a complete, uncut result the order decides nothing, unless the answer took the top row of it
    decides = sql.limit is not None or info.truncated or _answer_takes_first_row(info, answer)
    if profile.direction and sql.order and decides:
        key, desc = sql.order[0]
        if (profile.direction == "asc") == desc and "min(" not in key and "max(" not in key:
            t.wrong_scope.append(f"the question asks for the {'fewest/lowest' if profile.direction == 'asc' else 'most/highest'}"
                                 f" but the SQL orders by {key} {'DESC' if desc else 'ASC'}")
    # a LIMIT that cuts an unordered result keeps arbitrary rows, not the most/fewest or the top N
    # (MIN/MAX in the SELECT list rank by themselves)
    if (profile.direction or profile.top_n) and sql.limit is not None and not sql.order \
            and info.total >= sql.limit and not ({"min", "max"} & sql.aggregates):
        asked = (f"top {profile.top_n}" if profile.top_n
                 else "fewest/lowest" if profile.direction == "asc" else "most/highest")
        t.wrong_scope.append(f"the question asks for the {asked} but LIMIT {sql.limit} without ORDER BY keeps "
                             "arbitrary rows")
    # one-sided joins over a two-sided relation (home/away, billing/shipping, debit/credit, ...)
    if not profile.home_away:
        side_parts = profile.lexicon.side_parts
        cond_parts = {p for c in sql.condition_columns for p in _parts(c) if side_parts & set(_parts(c))}
        all_parts = {p for c in sql.all_columns for p in _parts(c)}
        for a, b in profile.lexicon.sides:
            for side, other in ((a, b), (b, a)):
                if side in cond_parts and other not in all_parts:
                    t.narrowing.append(f"the SQL only uses the {side} side ({side}_* columns) and never the "
                                       f"{other} side, which the question does not restrict")
    return t


def _quote_lit(f: SqlFilter) -> str:
    return f"'{f.value}'" if f.is_string else f.value


def _years(years: Iterable[int]) -> str:
    return ", ".join(str(y) for y in sorted(years))


