"""Figures and quotes as people write them: the displayed-precision rule that reference grading
(:mod:`axon_eval.reference.numeric`) and the heuristic judge's claim checker
(:mod:`axon_eval.judges.heuristic.claims`) share, and the text normaliser that verifies a judge's quotes
and cited tokens against a response. Ground floor: imports nothing of the package. Pure.

Displayed precision
-------------------
A figure ``r`` written with ``d`` decimals at scale ``s`` (1 for plain digits; 1e3 for ``k`` /
``thousand``, 1e6 for ``M`` / ``million``, 1e9 for ``bn``) shows the unit ``u = 10**-d * s``; its
half-unit is ``h = u / 2`` (:func:`half_unit`). The figure *shows* a value ``v`` when rounding ``v`` to
the figure's digits gives ``r``::

    |v - r| <= h     (closed at both ends: a tie may be written either way, half-up or half-even,
                      and binary floats cannot tell a tie from a near-tie; FLOAT_SLACK absorbs the
                      representation error, relative to the larger magnitude)

An abbreviation is rounded, never truncated: ``$1M`` shows ``[0.5M, 1.5M]``, not ``[1M, 2M)``, so it
does not show 1,999,999 (which rounds to ``$2M``).

Precise or imprecise
--------------------
Rounding alone can accept a wide range: ``$1M`` shows anything from 0.5M to 1.5M, +-50%. The code
verifies a figure to the relative fallback :data:`RELATIVE_TOLERANCE` (1% of the reference, the rule
for a spelled number that shows no precision). With ``e = |v - r|`` (:func:`displayed_match`):

==========  ====================================================================================
match       ``e <= h`` and ``e <= RELATIVE_TOLERANCE * |v|``: the figure shows ``v`` and is accurate
            to the fallback
imprecise   ``e <= h`` but ``e > RELATIVE_TOLERANCE * |v|``: consistent with ``v`` after rounding, but
            shown too coarsely to verify it (possible only when ``h > RELATIVE_TOLERANCE * |v|``:
            the shown precision is coarser than the fallback); ``$1M`` for 1,400,000
mismatch    ``e > h``: rounding ``v`` to the shown digits does not give ``r``
==========  ====================================================================================

So a coarse figure that happens to be accurate still matches (``$1M`` for 1,004,000, ``42`` for 42),
a fine one that is wrong in its last digit never does (``7.10%`` for 7.12), and a coarse one that is
only consistent is reported as imprecise, neither verified nor wrong. A reference of 0 has no relative
slack: only ``e == 0`` matches it.

Text normalisation (quotes and cited tokens)
--------------------------------------------
:func:`normalise_text`: Unicode NFKC (no-break and thin spaces become spaces, ligatures and full-width
forms plain), case folded, typographic quotes made ASCII (``\u201c\u201d\u2018\u2019`` -> ``" '``), the
minus sign, hyphens and figure or en dashes made ``-``, em dashes and ``--`` made `` - ``, ``per cent``
/ ``percent`` after a number made ``%``, the space between a number and its unit removed (``7.10 %``
-> ``7.10%``, ``0.5 pp`` -> ``0.5pp``, ``$ 12`` -> ``$12``), whitespace collapsed and the ends stripped.
:func:`occurs_in` finds a normalised quote in a normalised text at word boundaries (``7`` is not in
``7.10%`` nor in ``17``). :func:`quote_is_sufficient`: a quote supports a criterion only with at
least :data:`MIN_QUOTE_WORDS` words, or a figure and its context (:data:`MIN_QUOTE_WORDS_WITH_FIGURE`
tokens in all: ``42 orders``, a table row ``| 2023 | 2,373,471.62 |``); a bare figure or a word or two
shows nothing.
"""

from __future__ import annotations

import math
import re
import unicodedata

#: The relative fallback: a figure is verified to 1% of the reference (also the tolerance of a spelled
#: number, which shows no precision).
RELATIVE_TOLERANCE = 0.01
#: Floating-point slack of a comparison, relative to the larger magnitude (at least 1): a few thousand
#: ulps of a double, far below any shown digit of a figure of up to 12 significant digits (an absolute
#: 1e-9 would be below one ulp of a figure in the billions).
FLOAT_SLACK = 1e-12
#: A quote with no figure needs at least this many words to show anything.
MIN_QUOTE_WORDS = 3
#: A quote holding a figure needs at least this many tokens (the figure and one token of context).
MIN_QUOTE_WORDS_WITH_FIGURE = 2

MATCH, IMPRECISE, MISMATCH = "match", "imprecise", "mismatch"


def half_unit(decimals: int, scale: float = 1.0) -> float:
    """Half a unit of the last shown digit: ``0.5 * 10**-decimals * scale`` (``1.2M`` -> 50,000)."""
    if decimals < 0:
        raise ValueError(f"decimals must be >= 0, got {decimals}")
    return 0.5 * 10.0 ** (-decimals) * scale


def _slack(*values: float) -> float:
    return FLOAT_SLACK * max(1.0, *(abs(v) for v in values))


def shows(reported: float, half: float, reference: float) -> bool:
    """Does the figure ``reported`` (half-unit ``half``) show ``reference`` once rounded to its digits?
    ``|reference - reported| <= half`` (module docstring)."""
    return abs(reference - reported) <= half + _slack(reported, reference)


def within_relative(reported: float, reference: float, relative: float = RELATIVE_TOLERANCE) -> bool:
    """``|reported - reference| <= relative * |reference|``: the relative fallback."""
    return abs(reported - reference) <= relative * abs(reference) + _slack(reported, reference)


def displayed_match(reported: float, half: float, reference: float) -> str:
    """:data:`MATCH`, :data:`IMPRECISE` or :data:`MISMATCH` for a figure ``reported`` shown with
    half-unit ``half`` against ``reference`` (the table of the module docstring)."""
    if not shows(reported, half, reference):
        return MISMATCH
    return MATCH if within_relative(reported, reference) else IMPRECISE


def shown_precision(half: float, reference: float) -> float | None:
    """The half-unit as a share of the reference (``$1M`` at 1,400,000 -> 0.357), ``None`` at 0."""
    return half / abs(reference) if reference else None


def describe_imprecision(token: str, half: float, reference: float) -> str:
    """Why ``token`` is too coarse to verify ``reference``: ``'$1M' is shown to ±500,000 (36% of
    1,400,000), coarser than the 1% the code verifies to`` (shares to 2 significant digits)."""
    share = shown_precision(half, reference)
    pct = f" ({_pct(share)} of {_fmt(reference)})" if share is not None else ""
    return (f"{token!r} is shown to ±{_fmt(half)}{pct}, coarser than the {_pct(RELATIVE_TOLERANCE)} "
            f"the code verifies to")


def _pct(share: float) -> str:
    v = 100.0 * share
    return f"{v:.2g}%" if v < 100 else f"{v:,.0f}%"


def _fmt(v: float) -> str:
    if float(v).is_integer() and abs(v) < 1e15:
        return f"{int(v):,}"
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    return f"{v:.4g}" if abs(v) >= 1e-4 else f"{v:.2e}"


# =============================================================================================
# Text normalisation
# =============================================================================================
_CHARS = str.maketrans({
    "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u201f": '"', "\u00ab": '"', "\u00bb": '"',
    "\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'", "\u2032": "'", "`": "'", "\u00b4": "'",
    "\u2212": "-", "\u2010": "-", "\u2011": "-", "\u2012": "-", "\u2013": "-", "\uff0d": "-",
    "\u2014": " - ", "\u2015": " - ",
})
_DOUBLE_DASH = re.compile(r"\s*-{2,}\s*")
_SPACED_DASH = re.compile(r"\s+-\s+")
_PER_CENT = re.compile(r"(?<=\d)\s*(?:per\s?cent|pct)\b")
_UNIT_SPACE = re.compile(r"(?<=\d)\s+(?=(?:%|pp|ppts?|bps?|k|m|mn|bn|tn)(?![\w]))")
_CURRENCY_SPACE = re.compile(r"(?<=[$\u20ac\u00a3\u00a5\u20b9])\s+(?=\d)")
_SPACE = re.compile(r"\s+")


def normalise_text(text: str) -> str:
    """``text`` normalised for comparison (module docstring): NFKC, case folded, quotes, dashes, per cent
    and number-unit spacing made plain, whitespace collapsed."""
    t = unicodedata.normalize("NFKC", text).translate(_CHARS).casefold()
    t = _DOUBLE_DASH.sub(" - ", t)
    t = _SPACE.sub(" ", t)
    t = _SPACED_DASH.sub(" - ", t)
    t = _PER_CENT.sub("%", t)
    t = _UNIT_SPACE.sub("", t)
    t = _CURRENCY_SPACE.sub("", t)
    return t.strip()


_EDGE = " \"'.,;:!?"


def normalise_quote(quote: str) -> str:
    """A quote as :func:`occurs_in` looks for it: :func:`normalise_text`, then surrounding quote marks
    and sentence punctuation stripped (``"the sale."`` -> ``the sale``)."""
    return normalise_text(quote).strip(_EDGE)


def _continues(text: str, i: int, step: int) -> bool:
    """Does the character at ``i`` continue the word or figure that ends (``step=+1``) or starts
    (``step=-1``) next to it? A letter or digit does; so does ``.`` or ``,`` between digits (``7.10``)."""
    if not 0 <= i < len(text):
        return False
    ch = text[i]
    if ch.isalnum():
        return True
    nxt = i + step
    return ch in ".," and 0 <= nxt < len(text) and text[nxt].isdigit()


def occurs_in(quote: str, text: str) -> bool:
    """Does ``quote`` occur in ``text`` after normalisation (:func:`normalise_quote`,
    :func:`normalise_text`), starting and ending at word boundaries? An empty quote never occurs."""
    q, t = normalise_quote(quote), normalise_text(text)
    if not q:
        return False
    i = t.find(q)
    while i >= 0:
        j = i + len(q)
        left_ok = not (q[0].isalnum() and _continues(t, i - 1, -1))
        right_ok = not (q[-1].isalnum() and _continues(t, j, +1))
        if left_ok and right_ok:
            return True
        i = t.find(q, i + 1)
    return False


_QUOTE_TOKEN = re.compile(r"[^\W_]+(?:[.,'][^\W_]+)*")


def quote_tokens(quote: str) -> list[str]:
    """The words and figures of a quote (``"Rate was 7.10%"`` -> ``['rate', 'was', '7.10']``)."""
    return _QUOTE_TOKEN.findall(normalise_text(quote))


def quote_is_sufficient(quote: str) -> bool:
    """Can ``quote`` support a criterion? At least :data:`MIN_QUOTE_WORDS` tokens, or at least
    :data:`MIN_QUOTE_WORDS_WITH_FIGURE` tokens of which one is a figure (the figure and its context: a
    unit, a subject or a table row's label, ``42 orders``, ``| 2023 | 2,373,471.62 |``); a bare figure
    (``7``, ``7.10%``) or a word or two (``because``, ``the sale``) is not enough."""
    tokens = quote_tokens(quote)
    if len(tokens) >= MIN_QUOTE_WORDS:
        return True
    return len(tokens) >= MIN_QUOTE_WORDS_WITH_FIGURE and any(ch.isdigit() for w in tokens for ch in w)


def same_value(a: float, b: float) -> bool:
    """Equal up to :data:`FLOAT_SLACK` (``1.2 * 1e6`` and ``1_200_000.0``)."""
    return math.isclose(a, b, rel_tol=FLOAT_SLACK, abs_tol=FLOAT_SLACK)
