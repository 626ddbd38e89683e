"""Claim support: is one number, name, date, rank or absolute claim of the answer supported by
the evidence index?

Numeric support (the rule, in one place)
----------------------------------------
The displayed-precision rule is :mod:`axon_eval.figures`, shared with reference grading. A mention
written with ``d`` decimals has the half-unit ``h = 0.5 * 10**-d`` (times the scale word or suffix:
``1.2 million`` and ``1.2M`` -> ``0.05e6``). A cell value ``c`` supports a mention ``v`` when rounding
``c`` to the mention's digits gives ``v``:

* ``|c - v| <= h``                                    (displayed-precision rounding: 24.6 <- 24.57), or
* the mention is a percentage and the cell is a fraction (``|c| <= 1`` in a column not named as a
  percentage) and ``|100 c - v| <= h``                  (7.10% <- 0.070989); a fraction cell never
  supports the same digits read as a percentage (0.58% is NOT supported by 0.5833).

An abbreviation is rounded, never truncated: ``$1.2M`` is not supported by 1,250,000.5 (it rounds to
``$1.3M``). When the only support is a cell the mention matches by rounding but not to the relative
fallback (1% of the cell, :data:`axon_eval.figures.RELATIVE_TOLERANCE`: ``$1.3M`` for 1,250,000.5,
``5k`` for 5,400), the claim is still supported (the answer rounded, it did not invent) but its reason
starts with ``imprecise:`` and says that the figure is too coarse to verify; the explanation lists it.

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
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from ...figures import IMPRECISE, MATCH, MISMATCH, describe_imprecision, displayed_match, shows
from .evidence_index import Cell, Evidence
from .lexicon import DEFAULT, INJECTION, SIGNED_PARTS, Lexicon
from .text import (
    NumberMention,
    TextMention,
    _RANK_CLAIM,
    _stem,
    extract_dates,
    extract_names,
    extract_numbers,
    split_sentences,
)


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

    @property
    def imprecise(self) -> bool:
        """Supported only by rounding to a precision coarser than the relative fallback (module docstring)."""
        return self.reason.startswith(IMPRECISE_PREFIX)


#: how the reason of a claim supported only at a coarse precision starts
IMPRECISE_PREFIX = "imprecise: "


_NOT_UNITS = frozenset("""
a an the and or but of in on at to for from by with per than as is was were be are it its this that
each every all more less most least about around over under between during after before since until
while also only just than which who whom what when where why how so if then into onto out up down off
""".split())


def _unit_columns(unit: str, cells: Sequence[Cell], lexicon: Lexicon = DEFAULT) -> tuple[str, ...] | None:
    """Column-name stems that can support a number followed by the noun ``unit``, or ``None``.

    The lexicon's unit words first (``spectators`` -> ``attendance``); otherwise the noun itself and
    its synonyms, stemmed (``orders`` -> ``order``): when a numeric column of the rows is named after
    it (``orders``, ``order_count``, ``n_orders``), only such columns can support the number.
    """
    if not unit:
        return None
    stems = lexicon.units.get(unit)
    if not stems:
        if len(unit) < 3 or unit in _NOT_UNITS or unit in lexicon.not_names - {"orders", "customers"}:
            return None
        stems = tuple(sorted({s for w in lexicon.related(unit) | lexicon.related(_stem(unit))
                              for s in (_stem(w), w) if len(s) >= 3 and " " not in s}))
        if not stems:
            return None
    if any(c.source in ("row", "sum") and any(p.startswith(stems) for p in c.column) for c in cells):
        return stems
    return None


def _readings(m: NumberMention, c: float, fraction: bool) -> tuple[float, ...]:
    """The ways the cell value ``c`` may be read against ``m``: as it is; a fraction as a percentage;
    for basis points also as a percentage or a fraction."""
    if m.kind == "bps":
        return tuple(k * c for k in ((1.0, 100.0, 10000.0) if fraction else (1.0, 100.0)))
    if m.percent and fraction:
        return (100.0 * c,)
    return (c,)


def _match(m: NumberMention, c: float, fraction: bool) -> tuple[str, float]:
    """How the cell value ``c`` fits ``m`` (:func:`axon_eval.figures.displayed_match` of its best
    reading): ``(MATCH | IMPRECISE | MISMATCH, the reading)``."""
    ranked = {MATCH: 0, IMPRECISE: 1, MISMATCH: 2}
    return min(((displayed_match(m.value, m.tolerance, r), r) for r in _readings(m, c, fraction)),
               key=lambda sr: (ranked[sr[0]], abs(sr[1] - m.value)))


def _matches(m: NumberMention, c: float, fraction: bool) -> bool:
    """Does the cell value ``c`` support ``m`` by rounding to its digits (precisely or not)?"""
    return any(shows(m.value, m.tolerance, r) for r in _readings(m, c, fraction))


def _with_precision(m: NumberMention, found: Sequence[tuple[float, bool]], reason: str) -> str:
    """``reason`` as it stands when some ``(cell value, read as a fraction)`` of ``found`` fits ``m``
    precisely; else prefixed with :data:`IMPRECISE_PREFIX` and saying why the figure is too coarse."""
    fits = [_match(m, c, fraction) for c, fraction in found]
    if not fits or any(status == MATCH for status, _ in fits):
        return reason
    return f"{IMPRECISE_PREFIX}{reason} only after rounding; {describe_imprecision(m.token, m.tolerance, fits[0][1])}"


def _signed_column(column: tuple[str, ...], cells: Sequence[Cell]) -> bool:
    """A column of a quantity that carries a sign: named so (net, profit, change, ...) or holding a
    negative value in some shown row."""
    if any(p.startswith(SIGNED_PARTS) for p in column):
        return True
    return any(c.column == column and c.value < 0 for c in cells if c.source == "row")


def number_support(m: NumberMention, cells: Sequence[Cell], context: str = "",
                   complete_row_counts: Sequence[int] = (),
                   rows: set[tuple[int, int]] | None = None, preceding: str = "",
                   lexicon: Lexicon = DEFAULT) -> tuple[str, str]:
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
    30 characters before the number), only that column's cells can support the number. When they
    carry a negative direction (``a loss of``, ``fell by``) and the only matching cells are positive
    values of a signed column (``net_income``, ``change``), the sign is wrong.
    """
    if rows:
        restricted_steps = {k[0] for k in rows}
        cells = [c for c in cells if c.source not in ("row", "text") or c.step not in restricted_steps
                 or (c.step, c.row) in rows]
    stems = None if m.currency else _unit_columns(m.unit, cells, lexicon)
    named = _columns_named_in(preceding, cells) if preceding and stems is None else set()
    if named:
        cells = [c for c in cells if c.source not in ("row", "sum", "text", "row_count") or c.column in named]
    if stems is not None:
        # row counts count rows, not the named measure: they do not support "12 yellow cards";
        # except the row count of a statement that lists one row per id of the named thing
        # ("277 loans" over a listing with a loan_id column)
        keyed = {c.step for c in cells if c.source == "row" and len(c.column) >= 2 and c.column[-1] == "id"
                 and c.column[-2].startswith(stems)}
        pool = [c for c in cells if c.source not in ("row", "sum", "text", "row_count")
                or (c.source != "row_count" and any(p.startswith(stems) for p in c.column))
                or (c.source == "row_count" and c.step in keyed)]
    else:
        pool = list(cells)
    # whether a cell reads as a fraction matters only to percentages and basis points
    as_share = m.percent or m.kind == "bps"
    direct = [c for c in pool if _matches(m, c.value, as_share and c.fraction)]
    if direct:
        tight_negative = bool(preceding) and bool(lexicon.negative.search(preceding[-30:])) \
            and not lexicon.positive.search(preceding[-30:])
        if (m.value > 0 and not m.explicit_sign and tight_negative
                and all(c.source == "row" and c.value > 0 and _signed_column(c.column, cells) for c in direct)):
            return UNSUPPORTED, f"sign: the rows show +{_fmt_value(direct[0].value)}, a gain, not a loss or fall"
        return SUPPORTED, _with_precision(m, [(c.value, as_share and c.fraction) for c in direct],
                                          "matches a retrieved value")
    if m.value != 0:
        flipped = replace(m, value=-m.value)
        opposite = [c for c in pool if _matches(flipped, c.value, as_share and c.fraction)]
        if opposite:
            shown = _fmt_value(opposite[0].value)
            # the wording around the mention matters only once a cell matches it with the other sign
            positive_words = m.explicit_sign == "+" or bool(lexicon.positive.search(context))
            negative_words = bool(lexicon.negative.search(context))
            found = [(c.value, as_share and c.fraction) for c in opposite]
            if m.value > 0 and m.explicit_sign != "+" and negative_words and not positive_words:
                return SUPPORTED, _with_precision(flipped, found, f"magnitude of {shown}, sign carried by the wording")
            if m.value > 0 and m.explicit_sign != "+" and lexicon.outflow.search(context) and not positive_words:
                return SUPPORTED, _with_precision(flipped, found,
                                                  f"magnitude of {shown}, an outflow stored as a negative amount")
            return UNSUPPORTED, f"sign: the rows show {shown}"
    if (stems is None and not m.percent and not m.kind and not m.currency and m.value >= 0
            and float(m.value).is_integer() and m.tolerance <= 0.5 and any(m.value <= n for n in complete_row_counts)):
        return SUPPORTED, "a count within a completely shown result"
    near = [c for c in pool if c.value and 0 < abs(m.value / c.value) and
            any(abs(m.value / c.value - k) < 1e-6 for k in (10.0, 100.0, 1000.0, 0.1, 0.01, 0.001))]
    if near:
        return UNSUPPORTED, f"scale: the rows show {_fmt_value(near[0].value)}"
    return UNSUPPORTED, "no retrieved value matches"


_DIFFERENCE_WORDS = re.compile(r"\b(differen\w*|gap|spread|more|fewer|less|up|down|ahead|behind|margin|"
                               r"increase\w*|decrease\w*|change\w*|rose|fell|grew|dropped|by|between|versus|vs)\b",
                               re.I)
_RISE_WORDS = re.compile(r"\b(up|rose|risen|grew|grown|gain\w*|increas\w*|improv\w*|climb\w*|jump\w*)\b", re.I)
_FALL_WORDS = re.compile(r"\b(down|fell|fallen|drop\w*|declin\w*|decreas\w*|worsen\w*|slipp\w*|shrank|"
                         r"deteriorat\w*)\b", re.I)
#: at most this many numeric cells per statement are paired when looking for a difference
MAX_DIFFERENCE_CELLS = 40


def derived_support(m: NumberMention, cells: Sequence[Cell], preceding: str = "") -> str:
    """A figure equal to the difference of two retrieved values of one statement (a spread in
    percentage points, "12 more than", "up 0.53 points"): the reason, or ``""``.

    Only for figures written with decimals, as a percentage or percentage points, or after
    difference wording (``up``, ``gap``, ``more``, ``by`` ...), so a small whole number is not matched
    by chance. Both values come from the shown rows of the same statement (at most
    :data:`MAX_DIFFERENCE_CELLS` of them).
    """
    if m.value == 0 or not (m.tolerance < 0.5 or m.kind in ("pp", "percent") or _DIFFERENCE_WORDS.search(preceding)):
        return ""
    tail = preceding[-30:]
    direction = (1 if _RISE_WORDS.search(tail) and not _FALL_WORDS.search(tail)
                 else -1 if _FALL_WORDS.search(tail) and not _RISE_WORDS.search(tail) else 0)
    by_step: dict[int, list[Cell]] = {}
    for c in cells:
        if c.source == "row":
            by_step.setdefault(c.step, []).append(c)
    target = abs(m.value)
    probe = replace(m, value=target)
    for step, pool in by_step.items():
        pool = pool[:MAX_DIFFERENCE_CELLS]
        for i, a in enumerate(pool):
            for b in pool[i + 1:]:
                if a.fraction != b.fraction:
                    continue
                if _matches(probe, abs(a.value - b.value), a.fraction and b.fraction):
                    change = b.value - a.value  # the later row minus the earlier one
                    if a.column == b.column and a.row != b.row and direction:
                        if (direction > 0) != (change > 0):
                            return (f"sign: the rows go from {_fmt_value(a.value)} to {_fmt_value(b.value)}, "
                                    f"a {'fall' if change < 0 else 'rise'}")
                    return _with_precision(probe, [(abs(a.value - b.value), a.fraction and b.fraction)],
                                           f"the difference of {_fmt_value(a.value)} and {_fmt_value(b.value)} "
                                           f"(step {step})")
    return ""


def _columns_named_in(text: str, cells: Sequence[Cell]) -> set[tuple[str, ...]]:
    low = " " + re.sub(r"[^a-z0-9]+", " ", text.lower()) + " "
    named = set()
    for col in {c.column for c in cells if c.source == "row" and c.column}:
        if len(col) >= 2 and f" {' '.join(col)} " in low:
            named.add(col)
    return named


def _fmt_value(v: float) -> str:
    return f"{int(v):,}" if float(v).is_integer() else f"{v:g}"


def _may_count_rows(m: NumberMention, evidence: Evidence) -> bool:
    """A whole number >= 0 with no unit column that does not exceed a cut result's row count: it may
    count rows, which no row holds (complete results accept it, see the module docstring)."""
    return (not m.percent and not m.kind and not m.currency and m.value >= 0 and float(m.value).is_integer()
            and m.tolerance <= 0.5 and _unit_columns(m.unit, evidence.cells, evidence.lexicon) is None
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


def name_form_supported(name: str, corpus: str, lexicon: Lexicon = DEFAULT) -> bool:
    """Another form of a one-word name occurs in the evidence text: the place an adjective or
    demonym stands for ("Swedish" -> Sweden, :meth:`Lexicon.places_of`), or the singular of a
    plural or capitalised column word ("ISBNs" -> ``isbn``, "Seniors" -> 'senior'). Names of more
    than one word must occur as written (:func:`name_supported`)."""
    word = name.strip()
    if not word or " " in word:
        return False
    if any(name_supported(place, corpus) for place in lexicon.places_of(word)):
        return True
    low = word.lower()
    forms = {_stem(low), low[:-1] if low.endswith("s") else low} - {low}
    return any(len(f) >= 3 and name_supported(f, corpus) for f in forms)


#: a question that asks for a thing by name: its answer's opening word can be that name ("Which branch
#: lent the most?" -> "Kestrel lent the most"); elsewhere an opening word is read as a name only in a run
_NAME_QUESTION = re.compile(r"\b(which|who|whose|whom)\b", re.I)


def _claims(answer: str, skip: Sequence[tuple[int, int]],
            lexicon: Lexicon = DEFAULT, question: str = "") -> tuple[list[NumberMention], list[TextMention]]:
    def outside(a: int, b: int) -> bool:
        return not any(s <= a < e for s, e in skip)

    dates = [d for d in extract_dates(answer) if outside(d.start, d.end)]
    numbers = [n for n in extract_numbers(answer, skip_spans=skip) if outside(n.start, n.end)]
    names = [n for n in extract_names(answer, lexicon, sentence_start_names=bool(_NAME_QUESTION.search(question)))
             if outside(n.start, n.end)]
    ranks = [TextMention("rank", m.group(0), m.start(), m.end()) for m in _RANK_CLAIM.finditer(answer)
             if outside(m.start(), m.end())]
    universals = [TextMention("absolute", m.group(0), m.start(), m.end()) for m in lexicon.absolute.finditer(answer)
                  if outside(m.start(), m.end())]
    # numbers inside a rank claim ("3rd-highest") are judged as the rank claim
    numbers = [n for n in numbers if not any(r.start <= n.start < r.end for r in ranks)]
    return numbers, dates + names + ranks + universals


def injection_spans(text: str) -> list[tuple[int, int]]:
    """Spans of the sentences that carry instruction-like text (excluded from claim extraction)."""
    spans = []
    for a, b in split_sentences(text):
        if INJECTION.search(text[a:b]):
            spans.append((a, b))
    return spans


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
