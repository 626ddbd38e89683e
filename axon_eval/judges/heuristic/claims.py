"""Claim support: is one number, name, date, rank or absolute claim of the answer supported by
the evidence index?

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
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from .evidence_index import Cell, Evidence
from .lexicon import UNIT_STEMS, _INJECTION, _NEG_DIRECTION, _POS_DIRECTION, _UNIVERSAL
from .text import (
    NumberMention,
    TextMention,
    _RANK_CLAIM,
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
