"""Targeting: which statement answers the question, and how its filters, measures and ordering
compare with what the question asks (shared by the intent, SQL and relevance checks).

The answering statement is the best-grounded one (:func:`step_grounding`: +2 per question measure
the SQL computes, +2 per question entity in its filters or rows, +1 per question year in its
filters, +2/+1 for a date range overlapping/inside a named period, +1 for a top-N question meeting
LIMIT or ORDER BY, +0.5 per question word stem among its identifiers or literals; ties go to the
later statement). :func:`assess_targeting` then compares it with the question and returns a
:class:`Targeting`: named findings, each a sentence, that the checks turn into subscores. The
readings it rests on live in :mod:`~axon_eval.judges.heuristic.periods` (date ranges, year ranges,
thresholds) and :mod:`~axon_eval.judges.heuristic.wording` (literals, codes, column words,
measures); their public names are re-exported here.

References
----------
Lei, W. et al. (2020). Re-examining the role of schema linking in text-to-SQL. *EMNLP 2020*,
6943-6954.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .evidence_index import StepInfo, _mention_key
from . import failure_classes
from .failure_classes import miscomputed_findings, statistic_gaps, threshold_stated
from .question import QuestionProfile
from .sql_facts import SqlAnalysis, SqlFilter, _parts, measure_in_sql
from .text import _stem
from .periods import (  # noqa: F401 - the readings' public names re-exported where they were
    _OP_TEXT,
    _STEP,
    _as_float,
    _fmt_range,
    _fmt_years,
    _lists_dates,
    _years,
    question_thresholds,
    question_year_bound,
    sql_date_range,
    sql_year_range,
)
from .wording import (  # noqa: F401 - the readings' public names re-exported where they were
    SHARE_ALIAS_PARTS,
    _amount_for_count,
    _answer_takes_first_row,
    _coded_cell,
    _count_mismatch,
    _entity_columns,
    _literal_conflict,
    _modifier_column,
    _names_for_filter,
    _quote_lit,
    _snake_form,
    _snake_literals,
    column_word,
    evidence_measures,
    filter_maps_to,
    listing_count,
    share_computed,
)

__all__ = [
    "SHARE_ALIAS_PARTS", "Targeting", "assess_targeting", "column_word", "evidence_measures", "filter_maps_to",
    "listing_count", "pick_answer_step", "question_thresholds", "question_year_bound", "share_computed",
    "sql_date_range", "sql_year_range", "step_grounding",
]


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


_OPS = {"gt": ">", "gte": ">=", "lt": "<", "lte": "<="}


#: UNION without ALL removes repeated rows: a count over it is a count of distinct rows
_UNION_DISTINCT = re.compile(r"\bunion\b(?!\s+all\b)", re.I)
_HOW_MANY_DISTINCT = re.compile(r"\bhow many (distinct|different|unique|individual|separate) ([a-z]+)", re.I)


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
