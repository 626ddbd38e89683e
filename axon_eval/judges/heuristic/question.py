"""The question profile: what a question asks for, read with plain rules (cached per text and lexicon)."""

from __future__ import annotations

import datetime as _dt
import functools
import re
from dataclasses import dataclass

from .lexicon import (
    AGGREGATE_WORDS,
    ASC_WORDS,
    CHAT_WORDS,
    DEFAULT,
    DESC_WORDS,
    MONTHS,
    SCHEMA_WORDS,
    TOP_N,
    WORD_NUMBERS,
    WRITE_WORDS,
    Lexicon,
)
from .failure_classes import UNITS
from .text import (
    _ISO_DATE,
    _QUOTED,
    _TOKEN,
    NumberMention,
    _norm,
    _stem,
    extract_dates,
    extract_names,
    extract_numbers,
    extract_years,
)

_MONTH_YEAR = re.compile(r"\b(" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?,?\s+(?:of\s+)?((?:19|20)\d\d)\b"
                         r"|\b((?:19|20)\d\d)-(0[1-9]|1[0-2])\b(?!-\d)", re.I)
_MONTH_NAMES = "|".join(sorted(MONTHS, key=len, reverse=True))
#: two months joined under one year ("January or February 2025", "March to May 2024", "June-August 2023"):
#: one period from the first month's start to the second's end
_MONTH_SPAN = re.compile(rf"\b({_MONTH_NAMES})\.?\s*(?:or|and|to|through|until|till|-|–|—)\s*({_MONTH_NAMES})\.?,?\s+"
                         r"(?:of\s+)?((?:19|20)\d\d)\b", re.I)
_QUARTER = re.compile(r"\bQ([1-4])\s*(?:of\s+|FY\s?|'|)((?:19|20)\d\d)\b|\b((?:19|20)\d\d)\s*-?\s*Q([1-4])\b|"
                      r"\b(first|second|third|fourth|1st|2nd|3rd|4th) quarter (?:of |in )?((?:19|20)\d\d)\b", re.I)
_HALF = re.compile(r"\bH([12])\s*((?:19|20)\d\d)\b|\b(first|second) half (?:of |in )?((?:19|20)\d\d)\b", re.I)
_THE_N = re.compile(r"\b(?:the|which|what) (\d{1,3}|" + "|".join(w for w, v in WORD_NUMBERS.items() if v > 1)
                    + r") (?!of\b|per\b|percent\b|%)[a-z]", re.I)
_QUARTER_WORDS = {"first": 1, "second": 2, "third": 3, "fourth": 4, "1st": 1, "2nd": 2, "3rd": 3, "4th": 4}
#: Periods the question names relative to "now" (the judge cannot resolve them from the evidence).
RELATIVE_PERIOD = re.compile(r"\b(last|this|past|previous|prior|current|next|trailing) (?:\d+ )?(?:days?|weeks?|"
                             r"months?|quarters?|years?|fiscal year|fy|season)\b|\b(yesterday|today|ytd|mtd|qtd|"
                             r"year[- ]to[- ]date|month[- ]to[- ]date|recently|lately)\b", re.I)


@dataclass(frozen=True)
class QuestionProfile:
    """What the question asks for, read with plain rules.

    ``entities``: names and quoted strings; ``years``/``dates``; ``periods``: ``[start, end)`` ISO date
    ranges the question names (a year, a month, a quarter, a half, a day); ``relative_period``: it
    names a period relative to now ("last month"); ``measures``: keys of the lexicon's measures;
    ``direction``: ``"desc"`` (most/highest/top), ``"asc"`` (fewest/lowest) or ``None``; ``top_n``: N
    of "top N"; ``wants_aggregate``: how many / total / average / rate; ``wants_set``: a full list is
    asked for (list all, which <plural>, ...); ``schema_question``: about tables/columns rather than
    data; ``write_request``: asks to change data (drop, delete, update ...); ``data_question``: every
    other question except small talk -- it needs rows; ``home_away``: the question names one side of
    a two-sided relation (the lexicon's side words).
    """

    text: str
    entities: tuple[str, ...]
    years: frozenset[int]
    dates: frozenset[str]
    measures: frozenset[str]
    direction: str | None
    top_n: int | None
    wants_aggregate: bool
    wants_set: bool
    schema_question: bool
    data_question: bool
    home_away: bool
    numbers: tuple[NumberMention, ...]
    norm: str
    stems: frozenset[str]
    periods: tuple[tuple[str, str], ...] = ()
    relative_period: bool = False
    write_request: bool = False
    lexicon: Lexicon = DEFAULT


def _int_word(token: str) -> int | None:
    if token.isdigit():
        return int(token)
    return WORD_NUMBERS.get(token.lower())


def _month_range(year: int, month: int, months: int = 1) -> tuple[str, str]:
    end_m = month + months
    end = _dt.date(year + (end_m - 1) // 12, (end_m - 1) % 12 + 1, 1)
    return (_dt.date(year, month, 1).isoformat(), end.isoformat())


def question_periods(question: str) -> tuple[tuple[str, str], ...]:
    """``[start, end)`` ISO ranges of the periods ``question`` names, finest first: days (ISO dates),
    months (``March 2024``, ``2024-03``), quarters (``Q1 2024``, ``first quarter of 2024``), halves
    (``H1 2024``) and years named on their own."""
    out: list[tuple[str, str]] = []
    covered_years: set[int] = set()
    for d in extract_dates(question):
        day = _dt.date.fromisoformat(d.token) if _valid_date(d.token) else None
        if day:
            out.append((day.isoformat(), (day + _dt.timedelta(days=1)).isoformat()))
            covered_years.add(day.year)
    spans = []
    for m in _MONTH_SPAN.finditer(question):
        first, last, year = MONTHS[m.group(1).lower().rstrip(".")], MONTHS[m.group(2).lower().rstrip(".")], int(m.group(3))
        if last > first:
            out.append(_month_range(year, first, last - first + 1))
            covered_years.add(year)
            spans.append((m.start(), m.end()))
    for m in _MONTH_YEAR.finditer(question):
        if any(a <= m.start() < b for a, b in spans):
            continue  # the second month of a span is part of the span, not a period of its own
        if m.group(1):
            month, year = MONTHS[m.group(1).lower().rstrip(".")], int(m.group(2))
        else:
            month, year = int(m.group(4)), int(m.group(3))
        out.append(_month_range(year, month))
        covered_years.add(year)
    for m in _QUARTER.finditer(question):
        if m.group(1):
            q, year = int(m.group(1)), int(m.group(2))
        elif m.group(3):
            q, year = int(m.group(4)), int(m.group(3))
        else:
            q, year = _QUARTER_WORDS[m.group(5).lower()], int(m.group(6))
        out.append(_month_range(year, 3 * q - 2, 3))
        covered_years.add(year)
    for m in _HALF.finditer(question):
        h = int(m.group(1)) if m.group(1) else (1 if m.group(3).lower() == "first" else 2)
        year = int(m.group(2) or m.group(4))
        out.append(_month_range(year, 6 * h - 5, 6))
        covered_years.add(year)
    for y in sorted(extract_years(question) - covered_years):
        out.append((f"{y:04d}-01-01", f"{y + 1:04d}-01-01"))
    return tuple(dict.fromkeys(out))


def _valid_date(token: str) -> bool:
    try:
        _dt.date.fromisoformat(token)
    except ValueError:
        return False
    return True


# Caches are bounded so that a streamed run's memory stays flat over a large file; they pay only when
# texts repeat within a run (identical questions or SQL), which a few thousand entries cover.
@functools.lru_cache(maxsize=2048)
def profile_question(question: str, lexicon: Lexicon = DEFAULT) -> QuestionProfile:
    """Profile a question (cached per text and lexicon). See :class:`QuestionProfile`."""
    # a hyphenated run of common words ("June-August", "Mid-March") is a period or a phrase, no name
    names = [n.token for n in extract_names(question, lexicon)
             if not ("-" in n.token and all(p.lower() in lexicon.not_names for p in re.split(r"[-\s]+", n.token) if p))
             and n.token.lower() not in UNITS]  # "in MWh", "in kWh": a unit, no name
    quoted = [m.group(1) for m in _QUOTED.finditer(question) if not m.group(1).endswith("s ")]
    entities = tuple(dict.fromkeys(e for e in names + quoted if len(_norm(e)) > 1 and not _ISO_DATE.fullmatch(e)))
    measures = frozenset(k for k, (pat, _) in lexicon.measures.items() if pat.search(question))
    desc, asc = bool(DESC_WORDS.search(question)), bool(ASC_WORDS.search(question))
    direction = "desc" if desc and not asc else "asc" if asc and not desc else None
    top_n = None
    m = TOP_N.search(question)
    if m:
        top_n = _int_word(m.group(1) or m.group(2))
    elif direction == "desc" or direction == "asc":
        # "the 10 variants with the most ...": a count of things ranked by the superlative
        k = _THE_N.search(question)
        if k:
            top_n = _int_word(k.group(1))
    schema = bool(SCHEMA_WORDS.search(question)) and not re.search(r"\b(19|20)\d\d\b", question)
    write = bool(WRITE_WORDS.search(question)) and not schema
    chat = bool(CHAT_WORDS.search(question)) and not re.search(r"\d", question)
    norm = _norm(question)
    return QuestionProfile(
        text=question, entities=entities, years=extract_years(question),
        dates=frozenset(d.token for d in extract_dates(question)), measures=measures,
        direction=direction, top_n=top_n,
        wants_aggregate=bool(AGGREGATE_WORDS.search(question)),
        wants_set=bool(lexicon.set_words.search(question)) and top_n is None and direction is None,
        schema_question=schema, data_question=not (schema or write or chat),
        home_away=bool(lexicon.side_words and lexicon.side_words.search(question)),
        numbers=tuple(extract_numbers(question)), norm=norm,
        stems=frozenset(_stem(t) for t in _TOKEN.findall(norm)),
        periods=question_periods(question), relative_period=bool(RELATIVE_PERIOD.search(question)),
        write_request=write, lexicon=lexicon,
    )
