"""Pure evidence checks behind the offline heuristic judge (:mod:`axon_eval.judges.heuristic`).

Every function here reads only text and values taken from an :class:`~axon_eval.view.EvidenceView`
(question, SQL text, statuses, shown rows, row counts, tool outputs, answer). Nothing reads labels,
turn ids or scenario names. The functions are small and individually tested.

Building blocks
---------------
``extract_numbers(text)``     numeric mentions with displayed precision, percent, scale word and sign
``extract_dates(text)``       ISO dates (``2024-05-12``), kept whole so their parts are not numbers
``extract_names(text)``       capitalised names (multi-word anywhere, single words mid-sentence)
``profile_question(q)``       entities, years, dates, measures, superlative direction, top-N, ...
``analyse_sql(sql)``          sqlglot facts about one statement (cached per SQL string)
``build_evidence(view)``      every value a claim may rest on (shown rows, row counts, tool outputs)
``number_support(m, ...)``    is one numeric mention supported (rounding, percent, sign, scale)?
``check_intent / check_sql_quality / check_relevance / check_faithfulness``
                              one subscore each, 0-10, plus the findings that explain it

Numeric support (the rule, in one place)
----------------------------------------
A mention written with ``d`` decimals has the tolerance ``tol = 0.5 * 10**-d`` (times the scale word:
``1.2 million`` -> ``0.05e6``). A cell value ``c`` supports a mention ``v`` when

* ``|c - v| <= tol``                                  (displayed-precision rounding: 24.6 <- 24.57), or
* the mention is a percentage and the cell is a fraction (``|c| <= 1`` in a column not named as a
  percentage) and ``|100 c - v| <= tol``                (7.10% <- 0.070989); a fraction cell never
  supports the same digits read as a percentage (0.58% is NOT supported by 0.5833).

Scale is never forgiven: 420 is not 42 and 12,345 is not 1,234.5. Sign: a mention is negative only
when written with a minus sign (``-12``, ``−12``); an explicit ``+`` or wording that asserts a gain
(``won``, ``to the good``, ``ahead``, ``surplus``, ``positive``) makes it positive. A positive mention
whose magnitude matches only a *negative* cell is supported only when the surrounding words carry the
negative direction (``lost by 12``, ``12 behind``, ``a deficit of 12``); otherwise the sign is wrong
and the mention is unsupported. An explicit ``-12`` is never supported by ``12``.

When a unit noun follows the number (``15 yellow cards``, ``47 tries``, ``23,456 spectators``) and
some retrieved column is named after that unit, only those columns (plus row counts and their column
sums) can support it. Numbers restated from the question, WHERE-clause literals of successful
statements (the scope of the rows: a year filter supports "in 2024"), row counts, sums of a numeric
column over a complete result, and counts of listed items in tool outputs are also support. A small
count ``n`` with no column-matched unit is accepted when ``n`` does not exceed the row count of a
completely shown result (``0 <= n <= row count``: it may count a subset of those rows; the heuristic cannot test the
condition, so it does not call it unsupported).

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

import functools
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import sqlglot
from sqlglot import exp

from ..evidence import SqlStep, ToolStep, split_questions

# =============================================================================================
# Lexicon (domain-general words of analytics questions; no ids, no scenario names)
# =============================================================================================
WORD_NUMBERS: dict[str, int] = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14,
    "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20,
    "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90,
}
ORDINAL_WORDS: dict[str, int] = {
    "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7, "eighth": 8,
    "ninth": 9, "tenth": 10,
}
SCALE_WORDS: dict[str, float] = {"thousand": 1e3, "k": 1e3, "million": 1e6, "m": 1e6, "mn": 1e6,
                                 "billion": 1e9, "bn": 1e9}

#: Measures a question can ask for -> (question pattern, stems of SQL identifiers/literals that
#: compute it). A stem matches an underscore/hyphen-separated part of a column, table, function or
#: literal that *starts with* it.
MEASURES: dict[str, tuple[re.Pattern[str], tuple[str, ...]]] = {
    name: (re.compile(pattern, re.I), stems) for name, pattern, stems in [
        ("tries", r"\btr(?:y|ies)\b", ("try", "tries")),
        ("points", r"\bpoints?\b", ("point", "score")),
        ("score", r"\bthe (?:final )?score\b|\bscoreline\b", ("score", "point")),
        ("conceded", r"\bconced", ("against", "conced")),
        ("penalties", r"\bpenalt", ("penalt",)),
        ("conversions", r"\bconversions?\b", ("conversion",)),
        ("drop goals", r"\bdrop goals?\b", ("drop",)),
        ("cards", r"\bcards?\b|\bsent off\b|\bdisciplin", ("card", "yellow", "red")),
        ("attendance", r"\battendance|\bcrowds?\b|\bspectators?\b|\battended\b", ("attendance",)),
        ("capacity", r"\bcapacity\b", ("capacity",)),
        ("average", r"\baverage|\baveraged\b|\bon average\b|\bper (?:game|match)\b|\bmean\b", ("avg", "average")),
        ("percentage", r"\bpercent|%|\bshare\b|\brate\b|\bproportion\b|\bhow often\b", ("pct", "percent", "rate", "share", "100")),
        ("margin", r"\bmargin\b|\bdifference\b", ("margin", "difference", "diff")),
    ]
}
#: Words that follow a number and name its unit -> column-name stems that can support it.
UNIT_STEMS: dict[str, tuple[str, ...]] = {
    "try": ("tri", "try"), "tries": ("tri", "try"),
    "point": ("point", "score"), "points": ("point", "score"),
    "yellow": ("yellow",), "yellows": ("yellow",), "red": ("red",), "reds": ("red",),
    "conversion": ("conversion",), "conversions": ("conversion",),
    "penalty": ("penalt",), "penalties": ("penalt",),
    "spectators": ("attendance",), "people": ("attendance",), "fans": ("attendance",),
    "matches": ("matches", "played", "games"), "games": ("matches", "played", "games"),
    "wins": ("won", "win"), "win": ("won", "win"),
    "players": ("players",), "tables": ("tables",), "columns": ("columns",),
}
_SCHEMA_WORDS = re.compile(
    r"\b(tables?|columns?|schema|fields?|data ?model|recorded|stored|how do i (?:find|query|join|get)|"
    r"which data|what data|foreign keys?|primary keys?|join)\b", re.I)
_DATA_WORDS = re.compile(
    r"\b(how many|how much|who|which|what (?:was|were|is|are)|when|did|total|average|most|least|"
    r"fewest|highest|lowest|percentage|rate|score|won|win|record)\b", re.I)
_AGGREGATE_WORDS = re.compile(r"\b(how many|how much|total|number of|count|average|on average|"
                              r"per (?:game|match)|percentage|share|how often|rate)\b", re.I)
_DESC_WORDS = re.compile(r"\b(most|highest|biggest|largest|best|top|leading|maximum|greatest)\b", re.I)
_ASC_WORDS = re.compile(r"\b(fewest|least|lowest|smallest|minimum)\b", re.I)
_TOP_N = re.compile(r"\b(?:top|leading|best|first|biggest|highest)\s+(\d+|" + "|".join(WORD_NUMBERS) +
                    r")\b|\b(\d+|" + "|".join(WORD_NUMBERS) + r")\s+(?:leading|best|top|highest|biggest)\b", re.I)
_SET_WORDS = re.compile(r"\b(who scored|which (?:teams|players|matches|grounds|venues)|list (?:all|every|the)|"
                        r"all (?:the )?(?:players|teams|scorers|matches)|scorers|the tries)\b", re.I)
_HOME_AWAY_WORDS = re.compile(r"\b(home|away|host|hosts|visiting|visitors)\b", re.I)
#: Words in the question that qualify a compound category (``semi``-final, ``yellow`` card, ...).
QUALIFIERS = frozenset({"semi", "quarter", "pre", "grand", "red", "yellow", "drop", "home", "away"})
_HEDGE = re.compile(r"\b(at least|partial|couldn'?t|could not|unable|not able|incomplete|missing|"
                    r"failed|timed out|not available|only (?:retrieved|returned|shows?|have)|some of)\b", re.I)
_UNIVERSAL = re.compile(r"\b(never|unbeaten|undefeated|not once|no one|nobody|none of|every|always|"
                        r"without (?:a|any) (?:defeat|loss|win))\b", re.I)
_NEG_DIRECTION = re.compile(r"\b(lost|los(?:e|ing)|defeat(?:ed)?|beaten|behind|trail(?:ed|ing)?|deficit|"
                            r"down|fewer|less|short|negative|minus|in the red|worse)\b", re.I)
_POS_DIRECTION = re.compile(r"\b(won|win|winning|victory|beat|ahead|surplus|to the good|positive|plus|"
                            r"in credit|gain(?:ed)?)\b", re.I)
_INJECTION = re.compile(
    r"(ignore (?:all |any |the )?(?:previous|prior|above|earlier) (?:instructions|rules)|"
    r"give (?:this|the|it)?\s*(?:answer |turn )?(?:full|maximum|top) (?:marks|score)|"
    r"score every dimension|rate this (?:answer|turn)|\bsystem\s*:|note to the (?:evaluator|judge|grader)|"
    r"you are now|disregard (?:the|your) (?:rules|instructions))", re.I)

# Capitalised words that are not names when they stand alone (sentence starters, months, days, ...).
_NOT_NAME_WORDS = frozenset("""
the a an in on at of for to from by with and or but if then so as it its this that these those there
their they he she his her we our you your i me my is are was were be been has have had do does did
no yes not what which who whom whose when where why how all any each every both either neither some
most more less few fewer top overall total average home away across after before during over under
between since until while also only just about around per use using note notes system answer
january february march april may june july august september october november december
monday tuesday wednesday thursday friday saturday sunday mr mrs ms dr st pool round final semi
quarter season stage match matches team teams player players venue venues try tries points
""".split())
# Generic words trimmed from the ends of a capitalised sequence before it counts as a name.
_GENERIC_EDGE = frozenset("""
the a an in on at of for to from by with and or this that these those their its pool round final
finals semi quarter season seasons stage match matches cup league table team teams player players
top overall note system no yes it there home away average total did does has have how who what
which when where is was were are can could would should give list show tell send drop change
""".split())
#: Particles inside a name (``of`` is not one: "A of B" is a player and his team).
_CONNECTORS = frozenset({"de", "da", "van", "von", "der", "du", "la", "le", "di", "al", "el"})

# =============================================================================================
# Regexes (compiled once)
# =============================================================================================
_ISO_DATE = re.compile(r"(?<!\d)(\d{4})-(\d{2})-(\d{2})(?!\d)")
_NUMBER = re.compile(
    r"(?P<sign>(?<![\w.,])[-−–+](?=\d))?"
    r"(?<![\w.])(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)(?![\w]*\d)"
    r"(?P<ord>st|nd|rd|th)?\b"
    r"(?P<pct>\s?%|\s?per ?cent\b|\s?percent\b)?"
    r"(?:\s?(?P<scale>thousand|million|billion|bn|mn|k|m)\b)?",
)
_WORD_NUMBER = re.compile(
    r"\b(?P<tens>" + "|".join(w for w, v in WORD_NUMBERS.items() if v >= 20) + r")(?:[- ](?P<unit>"
    + "|".join(w for w, v in WORD_NUMBERS.items() if 1 <= v <= 9) + r"))?\b|\b(?P<word>"
    + "|".join(WORD_NUMBERS) + r")\b", re.I)
_RANK_CLAIM = re.compile(r"\b(?P<rank>" + "|".join(ORDINAL_WORDS) + r"|\d+(?:st|nd|rd|th))[- ](?:highest|best|most|"
                         r"lowest|largest|biggest|worst|fewest|place[d]?|leading)\b", re.I)
_WORD = re.compile(r"[A-Za-zÀ-ÖØ-öø-ÿ][\w'’\-]*")
_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[])|\s*\n\s*")
_CLAUSE_SPLIT = re.compile(r"[;:]\s+|,\s+|\s+-\s+|\s+—\s+|\(|\)")
_QUOTED = re.compile(r"[\"“']([^\"”']{2,60})[\"”']")
_TOKEN = re.compile(r"[a-z0-9]+")
_YEAR_MIN, _YEAR_MAX = 1900, 2100


# =============================================================================================
# Mentions
# =============================================================================================
@dataclass(frozen=True)
class NumberMention:
    """One number as written in a text.

    ``token`` is the exact substring (``"7.10%"``, ``"12,345"``, ``"+12"``, ``"seven"``); ``value`` the
    signed value after a scale word (a percentage keeps its written digits: ``7.10%`` -> 7.1);
    ``tolerance`` half a unit of the last displayed digit; ``explicit_sign`` is ``"+"``, ``"-"`` or
    ``""``; ``unit`` the following word (lower case) when any.
    """

    token: str
    start: int
    end: int
    value: float
    tolerance: float
    percent: bool = False
    explicit_sign: str = ""
    word: bool = False
    ordinal: bool = False
    unit: str = ""

    @property
    def is_year(self) -> bool:
        return (not self.percent and not self.ordinal and self.tolerance == 0.5 and self.explicit_sign == ""
                and _YEAR_MIN <= self.value <= _YEAR_MAX and float(self.value).is_integer())


@dataclass(frozen=True)
class TextMention:
    """A name, date, rank or absolute claim as written: exact ``token`` and its span."""

    kind: str  # name | date | rank | universal
    token: str
    start: int
    end: int
    value: Any = None


def _unit_after(text: str, end: int) -> str:
    m = re.match(r"[\s\-]*(?:of the\s+|more\s+|pool\s+|penalty\s+)?([A-Za-z]+)", text[end:end + 30])
    return m.group(1).lower() if m else ""


def extract_dates(text: str) -> list[TextMention]:
    """ISO dates ``YYYY-MM-DD`` as whole mentions (their digits are not read as separate numbers)."""
    return [TextMention("date", m.group(0), m.start(), m.end(), m.group(0)) for m in _ISO_DATE.finditer(text)]


def extract_numbers(text: str, skip_spans: Sequence[tuple[int, int]] = ()) -> list[NumberMention]:
    """Numeric mentions in ``text``, left to right; digits inside ``skip_spans`` (dates) are ignored.

    Handles thousands separators (``12,345``), decimals (precision kept), percentages (``7.1%``,
    ``7.1 per cent``), scale words (``1.2 million``, ``12k``), ordinals (``3rd``), explicit signs
    (``-12``, ``+12``; a hyphen between two numbers such as ``24-17`` is a separator, not a sign) and
    spelled numbers (``seven``, ``twenty-one``; ``one`` only when not followed by ``of``).
    """
    out: list[NumberMention] = []
    spans = list(skip_spans) + [(d.start, d.end) for d in extract_dates(text)]

    def skipped(a: int, b: int) -> bool:
        return any(s <= a < e or s < b <= e for s, e in spans)

    for m in _NUMBER.finditer(text):
        if skipped(m.start("num"), m.end("num")):
            continue
        num = m.group("num")
        digits = num.replace(",", "")
        decimals = len(digits.split(".")[1]) if "." in digits else 0
        value = float(digits)
        scale = SCALE_WORDS.get((m.group("scale") or "").lower(), 1.0)
        if m.group("scale") in ("m", "k") and not m.group(0).rstrip().endswith(m.group("scale")):
            scale = 1.0
        sign = m.group("sign") or ""
        sign = "-" if sign in ("-", "−", "–") else sign
        # A hyphen directly after a digit/letter ("24-17") was excluded by the lookbehind.
        signed = -value if sign == "-" else value
        tol = 0.5 * 10 ** (-decimals) * scale
        token = m.group(0).rstrip()
        out.append(NumberMention(token=token, start=m.start(), end=m.start() + len(token),
                                 value=signed * scale, tolerance=tol,
                                 percent=bool(m.group("pct")), explicit_sign=sign,
                                 ordinal=bool(m.group("ord")), unit=_unit_after(text, m.start() + len(token))))
    for m in _WORD_NUMBER.finditer(text):
        if skipped(m.start(), m.end()):
            continue
        if m.group("word"):
            w = m.group("word").lower()
            if w == "one" and re.match(r"\s+of\b|\s*-\s*(?:sided|off)\b", text[m.end():m.end() + 8], re.I):
                continue
            value = WORD_NUMBERS[w]
        else:
            value = WORD_NUMBERS[m.group("tens").lower()] + (WORD_NUMBERS[m.group("unit").lower()] if m.group("unit") else 0)
        if m.start() > 0 and text[m.start() - 1] == "-":  # e.g. "one-sided", "a two-try"
            continue
        out.append(NumberMention(token=m.group(0), start=m.start(), end=m.end(), value=float(value),
                                 tolerance=0.5, word=True, unit=_unit_after(text, m.end())))
    out.sort(key=lambda n: n.start)
    return out


def _is_cap(word: str) -> bool:
    return word[:1].isupper() and not word.isupper()


def _sentence_starts(text: str) -> set[int]:
    starts = {0}
    for m in re.finditer(r"(?:[.!?:;]\s+|\n\s*|[\[(]\s*|\d+[.)]\s+|\s-\s+|^\s*)", text):
        starts.add(m.end())
    return starts


def extract_names(text: str) -> list[TextMention]:
    """Capitalised names: sequences of capitalised words (joined by particles such as ``of``/``van``).

    A sequence of two or more capitalised words counts anywhere (after trimming generic edge words:
    ``The``, ``Pool``, ``Final``...); a single capitalised word counts only mid-sentence and when it
    is not a common word (so sentence starters are not names). All-caps words (SQL keywords, acronyms)
    and possessive ``'s`` are dropped.
    """
    starts = _sentence_starts(text)
    words = [(m.group(0), m.start(), m.end()) for m in _WORD.finditer(text)]
    out: list[TextMention] = []
    i = 0
    while i < len(words):
        w, s, e = words[i]
        if not _is_cap(w):
            i += 1
            continue
        seq = [(w, s, e)]
        j = i + 1
        while j < len(words):
            nw, ns, ne = words[j]
            gap = text[seq[-1][2]:ns]
            if gap not in (" ", "\u00a0"):
                break
            if _is_cap(nw):
                seq.append((nw, ns, ne))
                j += 1
                continue
            if nw.lower() in _CONNECTORS and j + 1 < len(words) and _is_cap(words[j + 1][0]) \
                    and text[ne:words[j + 1][1]] == " ":
                seq.append((nw, ns, ne))
                j += 1
                continue
            break
        i = j
        # strip possessives and trim generic edge words
        seq = [(re.sub(r"['’]s$", "", a), b, c - (len(a) - len(re.sub(r"['’]s$", "", a)))) for a, b, c in seq]
        while seq and (seq[0][0].lower() in _GENERIC_EDGE or seq[0][0].lower() in _NOT_NAME_WORDS):
            seq.pop(0)
        while seq and (seq[-1][0].lower() in _GENERIC_EDGE or seq[-1][0].lower() in _CONNECTORS):
            seq.pop()
        if not seq:
            continue
        if len(seq) == 1:
            word, ws, we = seq[0]
            if ws in starts or word.lower() in _NOT_NAME_WORDS or len(word) < 3:
                continue
        token = text[seq[0][1]:seq[-1][2]]
        out.append(TextMention("name", token, seq[0][1], seq[-1][2], token))
    return out


def extract_years(text: str) -> frozenset[int]:
    """Years 1900-2100 written in ``text`` (plain, in ISO dates, and ``2023/24`` season forms)."""
    years = {int(m.group(0)) for m in re.finditer(r"(?<!\d)(?:19|20)\d\d(?!\d)", text)}
    for m in re.finditer(r"(?<!\d)((?:19|20)\d\d)[/-](\d\d)(?!\d)", text):
        y = int(m.group(1))
        if int(m.group(2)) == (y + 1) % 100:
            years.add(y + 1)
    return frozenset(y for y in years if _YEAR_MIN <= y <= _YEAR_MAX)


def detect_injection(text: str | None) -> list[str]:
    """Instruction-like phrases aimed at an evaluator (``ignore previous instructions``, ...).

    The heuristic never follows them (it reads no instructions); they are only reported.
    """
    if not text:
        return []
    return [m.group(0) for m in _INJECTION.finditer(text)]


def split_sentences(text: str) -> list[tuple[int, int]]:
    """Sentence spans of ``text`` (split after ``.``/``!``/``?`` + space + capital/digit, and at newlines)."""
    spans, start = [], 0
    for m in _SENTENCE_SPLIT.finditer(text):
        if m.start() > start:
            spans.append((start, m.start()))
        start = m.end()
    if start < len(text):
        spans.append((start, len(text)))
    return spans


def enclosing_text(text: str, start: int, end: int, limit: int = 160) -> str:
    """The sentence around ``[start, end)``; when longer than ``limit``, the clause around it."""
    for a, b in split_sentences(text):
        if a <= start < b:
            sentence = text[a:b].strip()
            if len(sentence) <= limit:
                return sentence
            cuts = [0] + [m.end() for m in _CLAUSE_SPLIT.finditer(text[a:b])] + [b - a]
            lo = max(c for c in cuts if c <= start - a)
            hi = min((c for c in cuts if c >= end - a), default=b - a)
            return text[a + lo:a + hi].strip(" ,;:()")
    return text[start:end]


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text.lower().replace("’", "'").replace("_", " ").replace("-", " ")).strip()


def _stem(word: str) -> str:
    w = word.lower()
    for suffix in ("ies", "es", "s"):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3:
            return w[: -len(suffix)] + ("y" if suffix == "ies" else "")
    return w


# =============================================================================================
# Question profile
# =============================================================================================
@dataclass(frozen=True)
class QuestionProfile:
    """What the question asks for, read with plain rules.

    ``entities``: names and quoted strings; ``years``/``dates``; ``measures``: keys of
    :data:`MEASURES`; ``direction``: ``"desc"`` (most/highest/top), ``"asc"`` (fewest/lowest) or
    ``None``; ``top_n``: N of "top N"; ``wants_aggregate``: how many / total / average / rate;
    ``wants_set``: a full list is asked for (who scored the tries, which teams, ...);
    ``schema_question``: about tables/columns rather than data; ``home_away``: the question itself
    mentions home or away.
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


def _int_word(token: str) -> int | None:
    if token.isdigit():
        return int(token)
    return WORD_NUMBERS.get(token.lower())


# Caches are bounded so that a streamed run's memory stays flat over a large file; they pay only when
# texts repeat within a run (identical questions or SQL), which a few thousand entries cover.
@functools.lru_cache(maxsize=2048)
def profile_question(question: str) -> QuestionProfile:
    """Profile a question (cached per text). See :class:`QuestionProfile`."""
    names = [n.token for n in extract_names(question)]
    quoted = [m.group(1) for m in _QUOTED.finditer(question) if not m.group(1).endswith("s ")]
    entities = tuple(dict.fromkeys(e for e in names + quoted if len(_norm(e)) > 1))
    measures = frozenset(k for k, (pat, _) in MEASURES.items() if pat.search(question))
    desc, asc = bool(_DESC_WORDS.search(question)), bool(_ASC_WORDS.search(question))
    direction = "desc" if desc and not asc else "asc" if asc and not desc else None
    top_n = None
    m = _TOP_N.search(question)
    if m:
        top_n = _int_word(m.group(1) or m.group(2))
    schema = bool(_SCHEMA_WORDS.search(question)) and not re.search(r"\b(19|20)\d\d\b", question)
    norm = _norm(question)
    return QuestionProfile(
        text=question, entities=entities, years=extract_years(question),
        dates=frozenset(d.token for d in extract_dates(question)), measures=measures,
        direction=direction, top_n=top_n,
        wants_aggregate=bool(_AGGREGATE_WORDS.search(question)),
        wants_set=bool(_SET_WORDS.search(question)) and top_n is None and direction is None,
        schema_question=schema, data_question=bool(_DATA_WORDS.search(question)) and not schema,
        home_away=bool(_HOME_AWAY_WORDS.search(question)),
        numbers=tuple(extract_numbers(question)), norm=norm,
        stems=frozenset(_stem(t) for t in _TOKEN.findall(norm)),
    )


# =============================================================================================
# SQL analysis (sqlglot, cached per SQL string)
# =============================================================================================
@dataclass(frozen=True)
class SqlFilter:
    """One ``column <op> literal`` condition found in a WHERE / HAVING / JOIN ON clause."""

    column: str
    op: str
    value: str
    is_string: bool

    @property
    def specific(self) -> bool:
        """A filter on one specific thing: a proper name, an ISO date, or an id number."""
        if self.is_string:
            return bool(_ISO_DATE.fullmatch(self.value)) or any(c.isupper() for c in self.value[:1])
        return self.column == "id" or self.column.endswith("_id")


@dataclass(frozen=True)
class SqlAnalysis:
    """Facts about one SQL statement.

    ``identifiers``: lower-case parts of referenced columns, tables and function names (output
    aliases excluded); ``aliases``: output alias parts; ``literals``: string literals anywhere;
    ``filters``: literal conditions in WHERE/HAVING/JOIN ON (any scope, CTEs included);
    ``years``: years in WHERE literals (numbers and dates); ``condition_columns``: columns used in
    WHERE/JOIN ON; ``order``: (expression text, descending) of the outer ORDER BY; ``limit``.
    """

    parsed: bool
    kind: str
    tables: frozenset[str] = frozenset()
    identifiers: frozenset[str] = frozenset()
    aliases: frozenset[str] = frozenset()
    literals: frozenset[str] = frozenset()
    filters: tuple[SqlFilter, ...] = ()
    years: frozenset[int] = frozenset()
    aggregates: frozenset[str] = frozenset()
    count_only: bool = False
    group_by: bool = False
    order: tuple[tuple[str, bool], ...] = ()
    limit: int | None = None
    condition_columns: frozenset[str] = frozenset()
    all_columns: frozenset[str] = frozenset()
    error: str = ""

    @property
    def has_where(self) -> bool:
        return bool(self.filters) or bool(self.condition_columns)


def _parts(name: str) -> list[str]:
    return [p for p in re.split(r"[_\-\s.]+", name.lower()) if p]


_KINDS = ((exp.Select, "select"), (exp.Union, "select"), (exp.Insert, "insert"), (exp.Update, "update"),
          (exp.Delete, "delete"), (exp.Drop, "drop"), (exp.Create, "create"), (exp.Alter, "alter"))


@functools.lru_cache(maxsize=4096)
def analyse_sql(sql: str) -> SqlAnalysis:
    """Parse ``sql`` (SQLite dialect) and collect :class:`SqlAnalysis` facts; cached per string.

    A statement sqlglot cannot parse gives ``parsed=False`` with the parser's message in ``error``.
    """
    try:
        tree = sqlglot.parse_one(sql, read="sqlite")
    except Exception as exc:  # sqlglot raises ParseError / TokenError; both mean "unparseable"
        return SqlAnalysis(parsed=False, kind="unknown", error=str(exc).splitlines()[0][:160])
    if tree is None:
        return SqlAnalysis(parsed=False, kind="unknown", error="empty statement")
    kind = next((k for cls, k in _KINDS if isinstance(tree, cls)), type(tree).__name__.lower())
    tables = frozenset(t.name.lower() for t in tree.find_all(exp.Table) if t.name)
    columns = [c for c in tree.find_all(exp.Column)]
    alias_names = {a.alias.lower() for a in tree.find_all(exp.Alias) if a.alias}
    all_columns = frozenset(c.name.lower() for c in columns if c.name)
    identifiers: set[str] = set()
    for name in all_columns | tables:
        identifiers.update(_parts(name))
    aggregates: set[str] = set()
    for f in tree.find_all(exp.Func):
        fname = (f.sql_name() if hasattr(f, "sql_name") else type(f).__name__).lower()
        identifiers.update(_parts(fname))
        if isinstance(f, exp.AggFunc):
            aggregates.add(fname)
    literals = {lit.this.lower() for lit in tree.find_all(exp.Literal) if lit.is_string}
    numeric_literals = [lit.this for lit in tree.find_all(exp.Literal) if not lit.is_string]
    identifiers.update(numeric_literals)
    aliases: set[str] = set()
    for a in alias_names:
        aliases.update(_parts(a))

    conditions: list[exp.Expression] = []
    for node in tree.find_all(exp.Where, exp.Having):
        conditions.append(node.this)
    for j in tree.find_all(exp.Join):
        on = j.args.get("on")
        if on is not None:
            conditions.append(on)
    filters: list[SqlFilter] = []
    years: set[int] = set()
    cond_cols: set[str] = set()
    for cond in conditions:
        cond_cols.update(c.name.lower() for c in cond.find_all(exp.Column) if c.name)
        for lit in cond.find_all(exp.Literal):
            text = lit.this
            if lit.is_string:
                d = _ISO_DATE.search(text)
                if d:
                    years.add(int(d.group(1)))
                elif re.fullmatch(r"(19|20)\d\d", text):
                    years.add(int(text))
            else:
                try:
                    v = float(text)
                except ValueError:
                    continue
                if v.is_integer() and _YEAR_MIN <= v <= _YEAR_MAX:
                    years.add(int(v))
        for node in cond.find_all(exp.EQ, exp.NEQ, exp.In, exp.Like, exp.GT, exp.GTE, exp.LT, exp.LTE):
            if isinstance(node, exp.In):
                col = node.this
                lits = [e for e in node.expressions if isinstance(e, exp.Literal)]
            else:
                left, right = node.this, node.expression
                col, lit_node = (left, right) if isinstance(right, exp.Literal) else (right, left)
                lits = [lit_node] if isinstance(lit_node, exp.Literal) else []
            if not lits or not isinstance(col, exp.Column):
                continue
            op = type(node).__name__.lower()
            for lit in lits:
                filters.append(SqlFilter(col.name.lower(), op, lit.this, lit.is_string))

    order: tuple[tuple[str, bool], ...] = ()
    limit: int | None = None
    outer = tree
    if isinstance(outer, exp.Select | exp.Union):
        o = outer.args.get("order")
        if o is not None:
            order = tuple((ordered.this.sql(dialect="sqlite").lower(), bool(ordered.args.get("desc")))
                          for ordered in o.expressions)
        lim = outer.args.get("limit")
        if lim is not None:
            expr = lim.args.get("expression") or lim.this
            try:
                limit = int(expr.this) if isinstance(expr, exp.Literal) else None
            except (TypeError, ValueError):
                limit = None
    count_only = bool(aggregates) and aggregates <= {"count"}
    group_by = any(True for _ in tree.find_all(exp.Group))
    return SqlAnalysis(parsed=True, kind=kind, tables=tables, identifiers=frozenset(identifiers),
                       aliases=frozenset(aliases), literals=frozenset(literals), filters=tuple(filters),
                       years=frozenset(years), aggregates=frozenset(aggregates), count_only=count_only,
                       group_by=group_by, order=order, limit=limit, condition_columns=frozenset(cond_cols),
                       all_columns=all_columns)


def measure_in_sql(measure: str, sql: SqlAnalysis) -> str:
    """Where ``measure`` appears in ``sql``: ``"computed"`` (a column, table, function or literal),
    ``"alias"`` (only as an output name), or ``""`` (absent)."""
    stems = MEASURES[measure][1]

    def hit(parts: Iterable[str]) -> bool:
        return any(p.startswith(s) for p in parts for s in stems)

    literal_parts = [p for lit in sql.literals for p in _parts(lit)]
    if hit(sql.identifiers) or hit(literal_parts):
        return "computed"
    if hit(sql.aliases):
        return "alias"
    return ""


# =============================================================================================
# Evidence: everything a claim may rest on
# =============================================================================================
@dataclass(frozen=True)
class Cell:
    """One numeric value the rows (or another source) hold; ``column`` parts are lower-case."""

    value: float
    column: tuple[str, ...]
    source: str  # "row", "sum", "row_count", "tool", "question", "filter", "text"
    step: int = -1
    row: int = -1

    @property
    def fraction(self) -> bool:
        """A value in [-1, 1] in a column not named as a percentage reads as a fraction."""
        return abs(self.value) <= 1 and not any(p.startswith(("pct", "percent")) for p in self.column)


@dataclass
class StepInfo:
    """A SQL step of the view with its analysis and row facts (``index`` is 1-based in the view)."""

    index: int
    step: SqlStep
    sql: SqlAnalysis
    shown: int
    total: int
    text: str  # lower-case text of the shown rows
    #: the evidence sampler's selection of this statement's rows (``None``: the first rows, or all)
    selection: Any = None

    @property
    def truncated(self) -> bool:
        return self.total > self.shown

    def _searched(self, attr: str) -> frozenset[str]:
        sel = self.selection
        if sel is None or not sel.searched_all:
            return frozenset()
        return frozenset(_mention_key(t) for t in getattr(sel, attr))

    @property
    def absent_mentions(self) -> frozenset[str]:
        """Mentions (normalised by :func:`_mention_key`) that a search of every row found in none."""
        return self._searched("absent_mentions")

    @property
    def complete_mentions(self) -> frozenset[str]:
        """Mentions (normalised) whose every holding row is shown, per a search of every row."""
        return self._searched("complete_mentions")

    @property
    def ok(self) -> bool:
        return self.step.status == "ok"


@dataclass
class Evidence:
    """Support material of one view (built once per judgement)."""

    steps: list[StepInfo]
    tools: list[tuple[int, ToolStep]]
    cells: list[Cell]
    corpus: str  # lower-case: row strings, column names, tool outputs, question, filter literals
    dates: frozenset[str]
    truncated_steps: list[StepInfo]
    complete_row_counts: list[int]
    shown_counts_truncated: frozenset[int]
    any_success: bool
    injections: list[tuple[str, str]] = field(default_factory=list)
    #: (step, row index) -> lower-case string cells of that shown row, with their column
    row_strings: dict[tuple[int, int], list[tuple[str, str]]] = field(default_factory=dict)
    #: years held by the rows (year-like columns and ISO dates)
    row_years: frozenset[int] = frozenset()
    #: capitalised string cells (names) -> the (step, row) keys holding them
    proper_cells: dict[str, frozenset[tuple[int, int]]] = field(default_factory=dict)

    def rows_named_in(self, sentence: str) -> set[tuple[int, int]]:
        """Shown rows whose capitalised cells (team, player, venue names) occur in ``sentence``."""
        low = sentence.lower().replace("’", "'")
        keys: set[tuple[int, int]] = set()
        for value, rows in self.proper_cells.items():
            idx = low.find(value)
            if idx >= 0 and not (idx > 0 and low[idx - 1].isalnum()) and not (
                    idx + len(value) < len(low) and low[idx + len(value)].isalnum()):
                keys |= rows
        return keys

    def names_in(self, sentence: str) -> dict[int, set[str]]:
        """Per statement: the capitalised cell values of its shown rows that occur in ``sentence``."""
        low = sentence.lower().replace("’", "'")
        out: dict[int, set[str]] = {}
        for value, rows in self.proper_cells.items():
            idx = low.find(value)
            if idx >= 0 and not (idx > 0 and low[idx - 1].isalnum()) and not (
                    idx + len(value) < len(low) and low[idx + len(value)].isalnum()):
                for step, _ in rows:
                    out.setdefault(step, set()).add(value)
        return out

    def searched_absent(self, token: str) -> bool:
        """True when there are cut results and a search of every row of each found ``token`` in none."""
        key = _mention_key(token)
        return bool(self.truncated_steps) and all(key in s.absent_mentions for s in self.truncated_steps)

    def searched_fully(self, token: str) -> bool:
        """True when there are cut results and, in each, a search of every row found ``token`` in no row
        or showed every row holding it: the shown rows are then all the rows that bear on it."""
        key = _mention_key(token)
        return bool(self.truncated_steps) and all(key in s.absent_mentions | s.complete_mentions
                                                  for s in self.truncated_steps)

    def entities_complete(self, sentence: str) -> bool:
        """True when every cut result shows, for the sentence, rows of named entities and every row
        holding each of them (so those entities' rows are complete, as on an uncut result)."""
        named = self.names_in(sentence)
        return bool(self.truncated_steps) and all(
            named.get(s.index) and named[s.index] <= s.complete_mentions for s in self.truncated_steps)

    def rows_naming(self, name: str) -> set[tuple[int, int]]:
        """Shown rows with a string cell equal to (or containing) ``name`` (case-insensitive)."""
        n = name.lower()
        return {key for key, cells in self.row_strings.items() if any(n == v or n in v for v, _ in cells)}

    def name_column(self, name: str) -> set[str]:
        n = name.lower()
        return {c for cells in self.row_strings.values() for v, c in cells if n == v or n in v}

    @property
    def ok_steps(self) -> list[StepInfo]:
        return [s for s in self.steps if s.ok]


def _cell_text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def build_evidence(view: Any) -> Evidence:
    """Collect the evidence of ``view`` (an :class:`~axon_eval.view.EvidenceView`).

    Numbers: every numeric cell of the shown rows of successful statements (with its column), years
    and numbers written inside string cells, row counts, sums of numeric columns over completely
    shown results, numbers and listed-item counts of successful tool outputs, numbers of the
    question and numeric WHERE literals of successful statements. Text: string cells, column names,
    tool outputs, the question, string literals of successful statements' filters.
    """
    steps: list[StepInfo] = []
    tools: list[tuple[int, ToolStep]] = []
    cells: list[Cell] = []
    texts: list[str] = [view.question.lower(), getattr(view, "full_question", view.question).lower()]
    dates: set[str] = set()
    injections: list[tuple[str, str]] = []
    complete_counts: list[int] = []
    shown_trunc: set[int] = set()
    row_strings: dict[tuple[int, int], list[tuple[str, str]]] = {}
    row_years: set[int] = set()
    proper: dict[str, set[tuple[int, int]]] = {}
    for number, step in enumerate(view.steps, start=1):
        if isinstance(step, ToolStep):
            tools.append((number, step))
            if step.status != "ok" or step.output is None:
                continue
            out = step.output if isinstance(step.output, str) else repr(step.output)
            texts.append(out.lower())
            for inj in detect_injection(out):
                injections.append((f"step {number} tool output", inj))
            for n in extract_numbers(out):
                cells.append(Cell(n.value, (), "tool", number))
            lines = [ln for ln in out.splitlines() if ln.strip()]
            cells.append(Cell(float(len(lines)), (), "tool", number))
            indented = [ln for ln in lines if ln[:1].isspace()]
            if indented:
                cells.append(Cell(float(len(indented)), (), "tool", number))
            dates.update(d.token for d in extract_dates(out))
            continue
        sql = analyse_sql(step.sql)
        rows = step.rows
        shown = len(rows)
        total = step.row_count if step.row_count is not None else shown
        row_text_parts: list[str] = []
        if step.status == "ok":
            cols = [tuple(_parts(c)) for c in step.columns] or [()] * (len(rows[0]) if rows else 0)
            numeric_cols: dict[int, list[float]] = {}
            for r_i, row in enumerate(rows):
                strings: list[tuple[str, str]] = []
                for j, value in enumerate(row):
                    col = cols[j] if j < len(cols) else ()
                    if isinstance(value, bool):
                        continue
                    if isinstance(value, int | float):
                        if isinstance(value, float) and not math.isfinite(value):
                            continue
                        cells.append(Cell(float(value), col, "row", number, r_i))
                        numeric_cols.setdefault(j, []).append(float(value))
                        if any(p in ("year", "season") for p in col) and _YEAR_MIN <= value <= _YEAR_MAX:
                            row_years.add(int(value))
                    elif isinstance(value, str):
                        row_text_parts.append(value)
                        strings.append((value.lower(), "_".join(col)))
                        if value[:1].isupper() and len(value) >= 3 and not _ISO_DATE.fullmatch(value):
                            proper.setdefault(value.lower(), set()).add((number, r_i))
                        for inj in detect_injection(value):
                            injections.append((f"step {number} row value", inj))
                        for d in extract_dates(value):
                            dates.add(d.token)
                            row_years.add(int(d.token[:4]))
                            cells.append(Cell(float(d.token[:4]), col, "text", number, r_i))
                        if not _ISO_DATE.fullmatch(value):
                            for n in extract_numbers(value):
                                cells.append(Cell(n.value, col, "text", number, r_i))
                row_strings[(number, r_i)] = strings
            cells.append(Cell(float(total), ("rows",), "row_count", number))
            if total <= shown:
                complete_counts.append(total)
                for j, values in numeric_cols.items():
                    if len(values) > 1:
                        col = cols[j] if j < len(cols) else ()
                        cells.append(Cell(float(sum(values)), col, "sum", number))
            else:
                shown_trunc.add(shown)
            for f in sql.filters:
                if f.is_string:
                    texts.append(f.value.lower())
                else:
                    try:
                        cells.append(Cell(float(f.value), (f.column,), "filter", number))
                    except ValueError:
                        pass
            texts.extend(c.lower() for c in step.columns)
            texts.extend(p.lower() for p in row_text_parts)
        selections = getattr(view, "row_selections", ()) or ()
        selection = selections[number - 1] if number - 1 < len(selections) else None
        steps.append(StepInfo(number, step, sql, shown, total, "\n".join(row_text_parts).lower(), selection))
    for n in extract_numbers(view.question):
        cells.append(Cell(n.value, (), "question"))
    for y in extract_years(view.question):
        cells.append(Cell(float(y), (), "question"))
    dates.update(d.token for d in extract_dates(view.question))
    for inj in detect_injection(view.question):
        injections.append(("question", inj))
    corpus = "\n".join(texts).replace("’", "'")
    truncated = [s for s in steps if s.ok and s.truncated]
    return Evidence(steps=steps, tools=tools, cells=cells, corpus=corpus, dates=frozenset(dates),
                    truncated_steps=truncated, complete_row_counts=complete_counts,
                    shown_counts_truncated=frozenset(shown_trunc),
                    any_success=any(s.ok for s in steps) or any(t.status == "ok" for _, t in tools),
                    injections=injections, row_strings=row_strings, row_years=frozenset(row_years),
                    proper_cells={k: frozenset(v) for k, v in proper.items() if len(k) < 80})


# =============================================================================================
# Claim support
# =============================================================================================
SUPPORTED, UNSUPPORTED, UNVERIFIABLE = "supported", "unsupported", "unverifiable"


@dataclass(frozen=True)
class ClaimCheck:
    """The verdict on one claim of the answer: status and a short reason."""

    token: str
    kind: str  # figure | name | date | rank | absolute
    status: str
    reason: str
    start: int
    end: int


def _unit_columns(unit: str, cells: Sequence[Cell]) -> tuple[str, ...] | None:
    stems = UNIT_STEMS.get(unit)
    if not stems:
        return None
    if any(c.source in ("row", "sum") and any(p.startswith(stems) for p in c.column) for c in cells):
        return stems
    return None


def _matches(m: NumberMention, c: float, fraction: bool) -> bool:
    if m.percent:
        if fraction:
            return abs(100.0 * c - m.value) <= m.tolerance + 1e-9
        return abs(c - m.value) <= m.tolerance + 1e-9
    return abs(c - m.value) <= m.tolerance + 1e-9


def number_support(m: NumberMention, cells: Sequence[Cell], context: str = "",
                   complete_row_counts: Sequence[int] = (),
                   rows: set[tuple[int, int]] | None = None, preceding: str = "") -> tuple[str, str]:
    """Is the numeric mention ``m`` supported by ``cells``? Returns ``(status, reason)``.

    ``context`` is the text around the mention (for sign wording). The rules are the module
    docstring's: displayed-precision rounding, percent/fraction, scale never forgiven, sign by
    explicit symbol or direction words, unit-named columns. ``status`` is ``supported`` or
    ``unsupported`` (the horizon rule that turns some into ``unverifiable`` is applied by the caller).

    ``rows``: when the sentence names entities found in shown rows, the ``(step, row)`` keys of those
    rows; cells of *other* rows of the same statements are then not support (a figure attached to a
    team must come from that team's row). Sums, row counts, filters, question and tool numbers stay.

    ``preceding``: the words of the sentence just before the number. When they name a numeric column
    (``a points difference of +6`` -> ``points_difference``; multi-word column names only, within the
    30 characters before the number), only that column's cells can support the number.
    """
    if rows:
        restricted_steps = {k[0] for k in rows}
        cells = [c for c in cells if c.source not in ("row", "text") or c.step not in restricted_steps
                 or (c.step, c.row) in rows]
    stems = _unit_columns(m.unit, cells)
    named = _columns_named_in(preceding, cells) if preceding and stems is None else set()
    if named:
        cells = [c for c in cells if c.source not in ("row", "sum", "text", "row_count") or c.column in named]
    if stems is not None:
        # row counts count rows, not the named measure: they do not support "12 yellow cards"
        pool = [c for c in cells if c.source not in ("row", "sum", "text", "row_count")
                or (c.source != "row_count" and any(p.startswith(stems) for p in c.column))]
    else:
        pool = list(cells)
    direct = [c for c in pool if _matches(m, c.value, c.fraction)]
    positive_words = m.explicit_sign == "+" or bool(_POS_DIRECTION.search(context))
    negative_words = bool(_NEG_DIRECTION.search(context))
    if direct:
        if m.value > 0 and positive_words and not negative_words:
            # "+12" / "to the good": a matching positive value must exist (it does: direct match)
            return SUPPORTED, "matches a retrieved value"
        return SUPPORTED, "matches a retrieved value"
    if m.value != 0:
        flipped = NumberMention(m.token, m.start, m.end, -m.value, m.tolerance, m.percent)
        opposite = [c for c in pool if _matches(flipped, c.value, c.fraction)]
        if opposite:
            shown = _fmt_value(opposite[0].value)
            if m.value > 0 and m.explicit_sign != "+" and negative_words and not positive_words:
                return SUPPORTED, f"magnitude of {shown}, sign carried by the wording"
            return UNSUPPORTED, f"sign: the rows show {shown}"
    if (stems is None and not m.percent and m.value >= 0 and float(m.value).is_integer()
            and m.tolerance <= 0.5 and any(m.value <= n for n in complete_row_counts)):
        return SUPPORTED, "a count within a completely shown result"
    near = [c for c in pool if c.value and 0 < abs(m.value / c.value) and
            any(abs(m.value / c.value - k) < 1e-6 for k in (10.0, 100.0, 1000.0, 0.1, 0.01, 0.001))]
    if near:
        return UNSUPPORTED, f"scale: the rows show {_fmt_value(near[0].value)}"
    return UNSUPPORTED, "no retrieved value matches"


def _columns_named_in(text: str, cells: Sequence[Cell]) -> set[tuple[str, ...]]:
    low = " " + re.sub(r"[^a-z0-9]+", " ", text.lower()) + " "
    named = set()
    for col in {c.column for c in cells if c.source == "row" and c.column}:
        if len(col) >= 2 and f" {' '.join(col)} " in low:
            named.add(col)
    return named


def _fmt_value(v: float) -> str:
    return f"{int(v):,}" if float(v).is_integer() else f"{v:g}"


_PLAIN_NUMBER = re.compile(r"[-−–+]?(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)\s?(?:%|per ?cent|percent)?")


def _mention_key(token: str) -> str:
    """A mention as both the evidence sampler and the claim checks write it: a plain number as its
    digits (``+12`` and ``12`` -> ``12``; ``7.10%`` -> ``7.10``); anything else (names, dates, numbers
    with a scale word or spelled out) lower-cased, so it matches only the same text."""
    m = _PLAIN_NUMBER.fullmatch(token.strip())
    return m.group(1) if m else token.strip().lower().replace("’", "'")


def _may_count_rows(m: NumberMention, evidence: Evidence) -> bool:
    """A whole number >= 0 with no unit column that does not exceed a cut result's row count: it may
    count rows, which no row holds (complete results accept it, see the module docstring)."""
    return (not m.percent and m.value >= 0 and float(m.value).is_integer() and m.tolerance <= 0.5
            and _unit_columns(m.unit, evidence.cells) is None
            and any(m.value <= s.total for s in evidence.truncated_steps))


def name_supported(name: str, corpus: str) -> bool:
    """A name is supported when it occurs (case-insensitive, word-bounded) in the evidence text."""
    needle = name.lower().replace("’", "'")
    idx = corpus.find(needle)
    while idx >= 0:
        before = corpus[idx - 1] if idx > 0 else " "
        after = corpus[idx + len(needle)] if idx + len(needle) < len(corpus) else " "
        if not (before.isalnum() or after.isalnum()):
            return True
        idx = corpus.find(needle, idx + 1)
    return False


# =============================================================================================
# Check results
# =============================================================================================
@dataclass
class CheckResult:
    """One dimension's subscore (0-10, or ``None``) with the findings that explain it."""

    score: int | None
    findings: list[str] = field(default_factory=list)
    flags: dict[str, Any] = field(default_factory=dict)


def _clamp(x: float) -> int:
    return int(max(0, min(10, round(x))))


def step_grounding(profile: QuestionProfile, info: StepInfo) -> float:
    """How well a statement matches the question (used to pick the statement that answers it).

    +2 per question measure the SQL computes, +2 per question entity in the filters or rows,
    +1 per question year in the filters, +1 when a top-N question meets a LIMIT/ORDER BY, +1 per
    question word stem found in the SQL's identifiers or literals.
    """
    sql = info.sql
    score = 0.0
    for meas in profile.measures:
        if measure_in_sql(meas, sql) == "computed":
            score += 2
    literal_text = " ".join(sql.literals)
    for ent in profile.entities:
        e = ent.lower()
        if e in literal_text or e in info.text:
            score += 2
    score += len(profile.years & sql.years)
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
            if prev in QUALIFIERS and prev != lit_prev:
                return f"the question says \"{prev} {head}\" but the SQL filters '{literal}'"
    return None


_PARTICIPANT_PARTS = frozenset({"team", "score", "side", "club", "player", "points", "goals", "tries"})


def assess_targeting(profile: QuestionProfile, info: StepInfo, horizon: int,
                     other_steps: Sequence[StepInfo] = ()) -> Targeting:
    """Compare the question with the statement that answers it (years, entities, categories,
    measures, ordering, one-sided joins, narrowing and missing filters).

    ``other_steps``: the other successful statements; an entity they filter on or show in their rows
    is not "absent" (the turn retrieved it), though the answering statement still decides scope.
    """
    t = Targeting()
    sql = info.sql
    if not sql.parsed:
        return t
    # period
    if profile.years:
        if sql.years and not (profile.years & sql.years):
            t.wrong_scope.append(f"the question asks about {_years(profile.years)} but the SQL filters "
                                 f"{_years(sql.years)}")
        elif not sql.years and not any(str(y) in info.text for y in profile.years):
            t.wrong_scope.append(f"the question asks about {_years(profile.years)} but the SQL has no "
                                 "period filter, so the rows cover every season")
    # entities
    literal_text = " | ".join(sql.literals)
    specific = [f for f in sql.filters if f.specific and f.value.lower() not in profile.norm
                and _norm(f.value) not in profile.norm]
    for ent in profile.entities:
        e = ent.lower()
        if e in literal_text:
            continue
        if e in info.text:
            t.unfiltered.append(ent) if info.truncated else None
            continue
        if info.truncated and _mention_key(ent) not in info.absent_mentions:
            t.unfiltered.append(ent)
        elif any(e in " | ".join(o.sql.literals) or e in o.text for o in other_steps):
            continue
        elif specific:
            f = specific[0]
            t.wrong_scope.append(f"the question names {ent} but the SQL filters {f.column} = "
                                 f"{_quote_lit(f)} and {ent} is not in the rows")
        else:
            t.absent_entities.append(ent)
    for d in profile.dates:
        if d not in literal_text and info.truncated:
            t.unfiltered.append(d)
    # categories and measures
    for lit in sql.literals:
        conflict = _literal_conflict(profile, lit)
        if conflict:
            t.wrong_scope.append(conflict)
    for meas in sorted(profile.measures):
        where = measure_in_sql(meas, sql)
        if where == "alias" and sql.count_only:
            t.wrong_scope.append(f"the question asks for {meas} but the SQL only names a COUNT '{meas}' "
                                 "without any condition that selects them")
        elif where == "":
            t.missing_measure.append(meas)
    # ordering direction
    if profile.direction and sql.order:
        key, desc = sql.order[0]
        if (profile.direction == "asc") == desc and "min(" not in key and "max(" not in key:
            t.wrong_scope.append(f"the question asks for the {'fewest/lowest' if profile.direction == 'asc' else 'most/highest'}"
                                 f" but the SQL orders by {key} {'DESC' if desc else 'ASC'}")
    # one-sided home/away joins
    if not profile.home_away:
        # a side column of a participant (home_team_id, away_score, ...), not e.g. home_venue_id
        cond_parts = {p for c in sql.condition_columns for p in _parts(c)
                      if _PARTICIPANT_PARTS & set(_parts(c))}
        all_parts = {p for c in sql.all_columns for p in _parts(c)}
        for side, other in (("home", "away"), ("away", "home")):
            if side in cond_parts and other not in all_parts:
                t.narrowing.append(f"the SQL only uses the {side} side ({side}_* columns) and never the "
                                   f"{other} side, which the question does not restrict")
    # narrowing filters on specific values the question never mentions
    for f in specific:
        if f.is_string and _ISO_DATE.fullmatch(f.value) and not profile.dates:
            t.narrowing.append(f"the filter {f.column} = '{f.value}' is not in the question and narrows the set")
    return t


def _quote_lit(f: SqlFilter) -> str:
    return f"'{f.value}'" if f.is_string else f.value


def _years(years: Iterable[int]) -> str:
    return ", ".join(str(y) for y in sorted(years))


# =============================================================================================
# Bundled turns: the part of the answer that serves this segment
# =============================================================================================
def _overlap(profile: QuestionProfile, sentence: str) -> float:
    s = sentence.lower()
    score = 2.0 * sum(1 for e in profile.entities if e.lower() in s)
    score += 2.0 * sum(1 for meas in profile.measures if MEASURES[meas][0].search(sentence))
    score += sum(1 for y in profile.years if str(y) in s)
    words = {_stem(w) for w in _TOKEN.findall(_norm(sentence)) if len(w) > 3}
    score += 0.5 * len({w for w in profile.stems if len(w) > 3} & words)
    return score


def answer_for_segment(view: Any) -> str | None:
    """The part of the answer that addresses this segment's question (whole answer when not bundled).

    Numbered answers (``1. ... 2. ...``) with one item per segment give the segment's item; an
    answer of exactly one sentence per segment gives the segment's sentence. Otherwise each sentence goes to the segment question it overlaps most (entities, measures,
    years, content words); when the other questions are not recoverable, sentences overlapping
    this question by at least half of the best overlap are kept. Falls back to the whole answer.
    """
    answer = view.answer
    if answer is None or not getattr(view, "bundled", False):
        return answer
    n, k = view.n_segments, view.segment_index
    items = split_questions(answer)
    if len(items) == n:
        return items[k - 1]
    sentences = [answer[a:b].strip() for a, b in split_sentences(answer)]
    if len(sentences) <= 1:
        return answer
    if len(sentences) == n:  # one sentence per question, answered in order
        return sentences[k - 1]
    questions = split_questions(view.full_question)
    own = profile_question(view.question)
    if len(questions) == n:
        profiles = [profile_question(q) for q in questions]
        keep = []
        for s in sentences:
            scores = [_overlap(p, s) for p in profiles]
            best = max(scores)
            if best == 0 or scores[k - 1] == best:
                keep.append(s)
    else:
        scores = [_overlap(own, s) for s in sentences]
        best = max(scores)
        keep = [s for s, sc in zip(sentences, scores) if best > 0 and sc >= best / 2]
    return " ".join(keep) if keep else answer


# =============================================================================================
# The four checks
# =============================================================================================
def check_intent(profile: QuestionProfile, evidence: Evidence, answer_step: StepInfo | None,
                 targeting: Targeting, answer: str | None) -> CheckResult:
    """intent_understood, 0-10.

    Start at 10 and subtract: 7 when the answering statement targets a different scope (other
    season, other team, conflicting category, opposite ordering, a measure only named by a COUNT
    alias, no period filter for a dated question); 3 per asked measure the SQL does not compute (at
    most 4); 3 when an asked entity is absent from both filters and rows. Without any SQL: 10 for a
    schema question answered from tools; 7 (answer addresses the question's entities/measures) or 5
    when a data question got no SQL. When every execution failed intent is only shown by statements
    that never ran: bounded to 5-8. An unrecovered failure leaves part of the intent unconfirmed: <= 8.
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
            MEASURES[m][0].search(text) for m in profile.measures) or len(
            {w for w in profile.stems if len(w) > 3} & answer_stems) >= 2
        r.score = 7 if addressed else 5
        r.findings.append("no SQL ran, so understanding is shown only by the answer"
                          + (" (it addresses the question's subject)" if addressed else ""))
        return r
    penalty = 0
    if targeting.wrong_scope:
        penalty += 7
        r.findings.extend(targeting.wrong_scope)
    if targeting.missing_measure:
        penalty += min(4, 3 * len(targeting.missing_measure))
        r.findings.append("the SQL computes nothing about " + ", ".join(targeting.missing_measure))
    if targeting.absent_entities:
        penalty += 3
        r.findings.append(", ".join(targeting.absent_entities) + " appears neither in the SQL filters nor in the rows")
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


def _facts(evidence: Evidence) -> dict[str, bool]:
    executed = [s for s in evidence.steps if s.step.status in ("ok", "error", "timeout")]
    failed = [s.step.status in ("error", "timeout") for s in executed]
    return {"all_failed": bool(executed) and all(failed),
            "ended_on_failure": bool(executed) and failed[-1],
            "only_blocked": bool(evidence.steps) and not executed}


def check_sql_quality(profile: QuestionProfile, evidence: Evidence, answer_step: StepInfo | None,
                      targeting: Targeting, horizon: int) -> CheckResult:
    """sql_quality, 0-10.

    * No SQL at all: 10 for a question that needed none (schema/metadata), 1 for a data question.
    * Only guardrail-blocked statements: 10 (the block is the system working).
    * Every execution failed: 2. An unrecovered final failure: -4. Recovered failures: no penalty.
    * On the answering statement: the largest *material* flaw counts once, -4 (wrong scope,
      narrowing filter/one-sided join, a LIMIT that cuts a set asked for in full, a LIMIT below the
      asked top N); unfiltered entity on a result larger than the horizon -3; missing aggregation
      for how-many/total/average over several rows -2; unparseable SQL -3; no ORDER BY for a top-N
      question -2.
    """
    r = CheckResult(10)
    facts = _facts(evidence)
    if not evidence.steps:
        if profile.schema_question or not profile.data_question:
            r.findings.append("no SQL was needed and none ran")
            return r
        r.score = 1
        r.findings.append("the question needs data but no SQL ran")
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
    if profile.wants_aggregate and answer_step.total > 1 and not unfiltered and (
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


def expected_total(profile: QuestionProfile, answer: str | None) -> list[tuple[int, str, str]]:
    """Counts the question or answer states for a measure: ``(n, unit, token)`` such as (7, tries, "7 tries")."""
    out = []
    for text in (profile.text, answer or ""):
        for m in extract_numbers(text):
            if m.unit in UNIT_STEMS and m.value > 1 and float(m.value).is_integer() and not m.percent \
                    and not m.is_year and m.explicit_sign == "":
                out.append((int(m.value), m.unit, f"{m.token} {m.unit}"))
    return out


def check_relevance(profile: QuestionProfile, evidence: Evidence, answer_step: StepInfo | None,
                    targeting: Targeting, answer: str | None, horizon: int) -> CheckResult:
    """result_relevance, 0-10 (judged from the shown rows plus the full row count).

    No SQL: 10 for a schema question whose tool output covers it (8 otherwise); 0 with no steps;
    2 when a data question got only tool output. Only guardrail blocks: 9 (nothing may be retrieved;
    refusing is the right outcome). All executions failed: 0. On the answering statement: empty
    result 2; wrong scope -8; asked entity absent -5; an incomplete set -5 (narrowing filter or
    one-sided join, a LIMIT that cuts the set, or the rows' measure column summing to less than the
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
    if targeting.wrong_scope:
        score -= 8
        r.findings.append(f"the rows of step {st.index} answer a different question")
    if targeting.absent_entities:
        score -= 5
        r.findings.append(f"{', '.join(targeting.absent_entities)} is not in the rows of step {st.index}")
    incomplete: list[str] = list(targeting.narrowing)
    sql = st.sql
    if sql.limit is not None and st.total >= sql.limit and profile.wants_set and not profile.direction \
            and not profile.top_n:
        incomplete.append(f"LIMIT {sql.limit} returned exactly {st.total} rows, so the set may be cut")
    if not st.truncated:
        for n, unit, token in expected_total(profile, answer):
            stems = UNIT_STEMS[unit]
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
    if st.truncated:
        r.findings.append(f"step {st.index} returned {st.total} rows; the judge sees only the first "
                          f"{st.shown} (row horizon {horizon})")
    r.score = _clamp(score)
    return r


def _claims(answer: str, skip: Sequence[tuple[int, int]]) -> tuple[list[NumberMention], list[TextMention]]:
    def outside(a: int, b: int) -> bool:
        return not any(s <= a < e for s, e in skip)

    dates = [d for d in extract_dates(answer) if outside(d.start, d.end)]
    numbers = [n for n in extract_numbers(answer, skip_spans=skip) if outside(n.start, n.end)]
    names = [n for n in extract_names(answer) if outside(n.start, n.end)]
    ranks = [TextMention("rank", m.group(0), m.start(), m.end()) for m in _RANK_CLAIM.finditer(answer)
             if outside(m.start(), m.end())]
    universals = [TextMention("absolute", m.group(0), m.start(), m.end()) for m in _UNIVERSAL.finditer(answer)
                  if outside(m.start(), m.end())]
    # numbers inside a rank claim ("3rd-highest") are judged as the rank claim
    numbers = [n for n in numbers if not any(r.start <= n.start < r.end for r in ranks)]
    return numbers, dates + names + ranks + universals


def injection_spans(text: str) -> list[tuple[int, int]]:
    """Spans of the sentences that carry instruction-like text (excluded from claim extraction)."""
    spans = []
    for a, b in split_sentences(text):
        if _INJECTION.search(text[a:b]):
            spans.append((a, b))
    return spans


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
    unsupported is poor"). When nothing was retrieved successfully (no rows, no tool output) and the
    answer states anything unsupported, at most 1. An answer that presents an incomplete set as
    complete (no hedging such as "at least", "could not") is capped at 7; instructions to the
    evaluator in the answer cap it at 7 (never extra credit).
    """
    if answer is None:
        return CheckResult(None, ["no answer captured: faithfulness is null"]), []
    r = CheckResult(10)
    skip = injection_spans(answer)
    numbers, texts = _claims(answer, skip)
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
        if m.is_year and re.search(r"\b(since|from|after)\s+$", answer[max(0, m.start - 8):m.start]) \
                and evidence.row_years and min(evidence.row_years) >= m.value:
            checks.append(ClaimCheck(m.token, "figure", SUPPORTED, "a lower bound of the rows' years",
                                     m.start, m.end))
            continue
        if m.value > 0 and float(m.value).is_integer() and trunc and int(m.value) in evidence.shown_counts_truncated \
                and m.unit not in ("", "tries", "points") and _unit_columns(m.unit, evidence.cells) is None:
            checks.append(ClaimCheck(m.token, "figure", UNSUPPORTED,
                                     f"counts the {int(m.value)} shown rows, but the statement returned "
                                     f"{trunc[0].total}", m.start, m.end))
            continue
        sent_start = sentence_of(m.start)[0]
        status, reason = number_support(m, evidence.cells, ctx, evidence.complete_row_counts,
                                        rows_for(m.start) or None,
                                        preceding=answer[max(sent_start, m.start - 30):m.start])
        if status == UNSUPPORTED and trunc and not reason.startswith(("sign", "scale")):
            a, b = sentence_of(m.start)
            if _may_count_rows(m, evidence):
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
            ok = name_supported(t.token, evidence.corpus)
            status = SUPPORTED if ok else (UNVERIFIABLE if trunc and not evidence.searched_absent(t.token)
                                           else UNSUPPORTED)
            reason = "" if ok else "name not in the rows, tool output or question"
            if ok:
                partner = affiliation_partner(answer, t, names)
                if partner is not None and not _same_row(evidence, partner.token, t.token):
                    status = UNSUPPORTED
                    reason = f"no retrieved row pairs {t.token} with {partner.token}"
            checks.append(ClaimCheck(t.token, "name", status, reason, t.start, t.end))
        elif t.kind == "rank":
            ok = ordered_steps
            checks.append(ClaimCheck(t.token, "rank", SUPPORTED if ok else UNSUPPORTED,
                                     "" if ok else "no ordered result supports a ranking", t.start, t.end))
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
    if incomplete and not _HEDGE.search(answer):
        score = min(score, 7)
        r.findings.append("the answer presents an incomplete set as the full answer")
    if skip:
        score = min(score, 7)
        r.findings.append("the answer contains instructions to the evaluator, which are not a report of the rows")
    r.score = _clamp(score)
    r.flags["k"], r.flags["u"] = k, u
    return r, checks


_AFFILIATION = re.compile(r"(?:\bfor|\bof|\()\s*$")


def affiliation_partner(text: str, name: TextMention, names: Sequence[TextMention]) -> TextMention | None:
    """The name that ``name`` is attached to as an affiliation, or ``None``.

    ``A of B`` and ``A (B)`` (B directly after A) and ``A, who ... for B`` (``for B`` in the same
    sentence, no other name or ``;`` between) attach B to A; comparisons such as ``ahead of B`` do not.
    """
    before = text[max(0, name.start - 6):name.start]
    if not _AFFILIATION.search(before):
        return None
    previous = [n for n in names if n.end <= name.start]
    if not previous:
        return None
    prev = previous[-1]
    gap = text[prev.end:name.start]
    if re.fullmatch(r"\s*(?:of|\()\s*", gap):
        return prev
    if before.rstrip().endswith("for") and len(gap) <= 80 and not re.search(r"[;.]", gap):
        return prev
    return None


def _same_row(evidence: Evidence, a: str, b: str) -> bool:
    """Whether a pairing of two names is consistent with the rows.

    True when some shown row holds both; also True (cannot be tested, not flagged) when either name
    is in no shown row, when they come from different statements, or when both sit in the same
    column (two teams: a comparison, not an affiliation). False otherwise: each is in the rows, in
    different columns of one statement, but never in the same row.
    """
    rows_a, rows_b = evidence.rows_naming(a), evidence.rows_naming(b)
    if not rows_a or not rows_b or rows_a & rows_b:
        return True
    if not {k[0] for k in rows_a} & {k[0] for k in rows_b}:
        return True
    return bool(evidence.name_column(a) & evidence.name_column(b))
