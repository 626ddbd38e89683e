"""Periods and thresholds as the statement and the question state them: the date range a
statement's date filters select, the years its year comparisons select, the open year range and the
numeric thresholds a question states with bound words, and the wording of those ranges in findings.

A date filter selects the half-open range ``[start, end)``: ``= '2024-03-05'`` is the day
``[2024-03-05, 2024-03-06)``, ``LIKE '2024-03%'`` the month ``[2024-03-01, 2024-04-01)``, and
several filters intersect (the largest start, the smallest end). A strict bound excludes its number:
on whole values ``> n`` keeps ``n + 1`` onwards and ``< n`` keeps up to ``n - 1``, so ``more than 5``
and ``>= 6`` select the same set. The readings are pure functions of the parsed statement
(:class:`~axon_eval.judges.heuristic.sql_facts.SqlAnalysis`) or the question's text; the findings
drawn from them live in :mod:`~axon_eval.judges.heuristic.targeting`.

References
----------
ISO 8601-1:2019, *Date and time: representations for information interchange*, for the calendar
dates the filters are read as.
"""

from __future__ import annotations

import datetime as _dt
import math
import re
from collections.abc import Iterable

from .evidence_index import StepInfo
from .sql_facts import SqlAnalysis, SqlFilter, _parts
from .text import extract_numbers


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


def _years(years: Iterable[int]) -> str:
    return ", ".join(str(y) for y in sorted(years))
