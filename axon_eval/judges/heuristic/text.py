"""Text extraction: numbers (precision, percent, scale, sign, spelled), ISO dates, capitalised
names, years, sentences and clauses, instruction-like phrases; plus the small normalisers
(``_norm``, ``_stem``) the other modules share."""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .lexicon import (CONNECTORS, CURRENCY_CODES, DEFAULT, INJECTION, ORDINAL_WORDS, SCALE_WORDS, UNIT_TOKENS,
                      WORD_NUMBERS, Lexicon)


# =============================================================================================
# Regexes (compiled once)
# =============================================================================================
_ISO_DATE = re.compile(r"(?<!\d)(\d{4})-(\d{2})-(\d{2})(?!\d)")
_CURRENCY = r"(?:US\$|A\$|C\$|NZ\$|HK\$|R\$|[$€£¥₹])"
_NUMBER = re.compile(
    r"(?P<open>\((?=[-−–]?" + _CURRENCY + r"?\s?\d))?"
    r"(?P<sign>(?<![\w.,])[-−–+](?=" + _CURRENCY + r"?\d))?"
    r"(?P<cur>(?<![\w])" + _CURRENCY + r")?"
    r"(?P<sign2>(?<=[$€£¥₹])[-−–](?=\d))?"
    r"(?<![\w.])(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)"
    r"(?:(?P<ord>st|nd|rd|th)\b|(?P<suffix>[kKmMbB]|mn|MM|mm|bn|Bn|BN|tn|mil)(?![\w])"
    r"|(?=pp\b|ppts?\b|bps?\b)|(?![\w]*\d)\b)"
    r"(?P<pct>\s?%|\s?per ?cent\b|\s?percent\b|\s?(?:pp|ppt|ppts)\b|\s?percentage[- ]points?\b"
    r"|\s?(?:basis[- ]points?|bps|bp)\b)?"
    r"(?:\s(?P<scale>thousand|million|billion|trillion|bn|mn)\b)?"
    r"(?P<close>\))?",
)
_WORD_NUMBER = re.compile(
    r"\b(?P<tens>" + "|".join(w for w, v in WORD_NUMBERS.items() if v >= 20) + r")(?:[- ](?P<unit>"
    + "|".join(w for w, v in WORD_NUMBERS.items() if 1 <= v <= 9) + r"))?\b|\b(?P<word>"
    + "|".join(WORD_NUMBERS) + r")\b", re.I)
_RANK_CLAIM = re.compile(r"\b(?P<rank>" + "|".join(ORDINAL_WORDS) + r"|\d+(?:st|nd|rd|th))[- ](?:highest|best|most|"
                         r"lowest|largest|biggest|worst|fewest|place[d]?|leading)\b"
                         r"|\b(?:came|finished|ranked|placed|ranks|comes|sits|sat)\s+(?:in\s+)?(?P<rank2>"
                         + "|".join(ORDINAL_WORDS) + r"|\d+(?:st|nd|rd|th))\b", re.I)
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
    #: ``"percent"`` (``%``, per cent), ``"pp"`` (percentage points), ``"bps"`` (basis points) or ``""``
    kind: str = ""
    #: the currency sign as written (``$``, ``€``, ``US$``), else ``""``
    currency: str = ""
    #: the scale factor of a suffix or scale word (``1.2M`` -> 1e6), else 1
    scale: float = 1.0
    #: written with an abbreviated scale (``1.2M``, ``845K``, ``3.4bn``); read as rounded, never
    #: truncated, like every figure (:mod:`axon_eval.figures`)
    abbreviated: bool = False

    @property
    def is_year(self) -> bool:
        return (not self.percent and not self.ordinal and self.tolerance == 0.5 and self.explicit_sign == ""
                and not self.currency and not self.kind
                and _YEAR_MIN <= self.value <= _YEAR_MAX and float(self.value).is_integer())


@dataclass(frozen=True)
class TextMention:
    """A name, date, rank or absolute claim as written: exact ``token`` and its span."""

    kind: str  # name | date | rank | universal
    token: str
    start: int
    end: int
    value: Any = None


#: What precedes a figure that stands as the value itself (``was (1,234)``, ``: (174.60)``) rather
#: than as an aside after a name (``Texas ($249,168.44)``): only there do brackets mean a negative.
_VALUE_SLOT = re.compile(r"(?:^|[:=]|\b(?:was|were|is|are|be|been|of|at|to|totall?ed|totals?|came to|stood at|"
                         r"showed|shows|recorded|booked|posted|reported|net|result|balance|income|profit|loss|"
                         r"change|delta|margin))\s*$", re.I)
def _ledger_item(text: str, m: re.Match[str]) -> bool:
    """A bracketed figure that is one item of a statement-style list (``refunds (69,789.79); COGS
    (162,065.63); ...``): it closes its item (``;`` or the end of the sentence follows) and the
    sentence has several ``;``-separated items."""
    after = text[m.end():m.end() + 2]
    if after and not re.match(r"\s*(?:;|\.(?:\s|$)|$)", after):
        return False
    a = max(text.rfind(". ", 0, m.start()), text.rfind("\n", 0, m.start())) + 1
    b = text.find(". ", m.end())
    sentence = text[a:b if b >= 0 else len(text)]
    return sentence.count(";") >= 2


_UNIT_SKIP = re.compile(r"[\s\-]*(?:(?:of the|more|other|new|unique|distinct|different|separate|individual|"
                        r"active|total)\s+)?([A-Za-z]+)")


def _unit_after(text: str, end: int) -> str:
    """The noun after a number (``12 orders`` -> ``orders``; ``8 more orders`` -> ``orders``)."""
    m = _UNIT_SKIP.match(text, end, min(len(text), end + 40))
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

    Without ``skip_spans`` the result is cached per text (:func:`_numbers_in`): the same cells,
    questions and answers are read by several checks of a judgement and by every segment of a turn.
    """
    if not skip_spans:
        return list(_numbers_in(text))
    return _scan_numbers(text, skip_spans)


@functools.lru_cache(maxsize=8192)
def _numbers_in(text: str) -> tuple[NumberMention, ...]:
    """:func:`extract_numbers` of ``text`` with no skipped spans, cached (mentions are frozen)."""
    return tuple(_scan_numbers(text, ()))


def _scan_numbers(text: str, skip_spans: Sequence[tuple[int, int]]) -> list[NumberMention]:
    """The scan behind :func:`extract_numbers` (two regex passes: digits, then spelled numbers)."""
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
        suffix = m.group("suffix") or ""
        scale_word = (m.group("scale") or "").lower()
        scale = SCALE_WORDS.get(scale_word or suffix.lower(), 1.0)
        cur = m.group("cur") or ""
        sign = m.group("sign") or m.group("sign2") or ""
        sign = "-" if sign in ("-", "−", "–") else sign
        pct_text = (m.group("pct") or "").strip().lower()
        kind = ("" if not pct_text else "bps" if pct_text.startswith(("b", "basis")) else
                "pp" if pct_text.startswith(("pp", "percentage", "p.p")) else "percent")
        # an accounting negative: "(1,234)", "($1.2M)" -- a parenthesised count such as "(2)" is not one
        accounting = bool(m.group("open") and m.group("close") and (cur or "," in num or decimals == 2)
                          and sign != "+" and (_VALUE_SLOT.search(text, 0, m.start()) or _ledger_item(text, m)))
        if accounting:
            sign = "-"
        start = m.start() if accounting else min(i for i in (m.start("sign"), m.start("cur"), m.start("num")) if i >= 0)
        end = m.end() if accounting else (m.end("close") - 1 if m.group("close") else m.end())
        token = text[start:end].rstrip()
        end = start + len(token)
        signed = -value if sign == "-" else value
        tol = 0.5 * 10 ** (-decimals) * scale
        out.append(NumberMention(token=token, start=start, end=end, value=signed * scale, tolerance=tol,
                                 percent=kind in ("percent", "pp"), explicit_sign=sign,
                                 ordinal=bool(m.group("ord")), unit=_unit_after(text, end),
                                 kind=kind, currency=cur, scale=scale,
                                 abbreviated=scale > 1 and scale_word not in ("thousand", "million", "billion",
                                                                               "trillion")))
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


def _is_acronym(word: str) -> bool:
    return 2 <= len(word) <= 5 and word.isupper() and word.isalpha()


_FIGURE_AFTER = re.compile(r"[ \u00a0]?[-+(]?[$€£¥]?\d")
_FIGURE_BEFORE = re.compile(r"\d[\d,.]*[ \u00a0]?$")
_FIGURE_CODES = CURRENCY_CODES | UNIT_TOKENS


def figure_code(text: str, word: str, start: int, end: int) -> bool:
    """``word`` (at ``[start, end)`` of ``text``) is a currency code or unit token written next to a
    figure ("Valencia EUR 7,897.50", "310 MWh"): it belongs to the figure, never to a name."""
    return word.lower() in _FIGURE_CODES and bool(
        _FIGURE_AFTER.match(text, end) or _FIGURE_BEFORE.search(text[max(0, start - 24):start]))


_SENTENCE_START = re.compile(r"(?:[.!?:;]\s+|\n\s*|[\[(]\s*|\d+[.)]\s+|\s-\s+|^\s*)")
_POSSESSIVE = re.compile(r"['’]s$")


#: opening words that are never names, whatever verb follows ("Here are ...", "Both were ...")
_OPENERS = frozenset("""here these those such both none neither either everyone everybody nobody nothing
something overall together altogether meanwhile currently today yesterday tomorrow again also""".split())


def _subject_verb_follows(text: str, end: int) -> bool:
    m = re.match(r" ([a-z]+)\b", text[end:end + 16])
    return bool(m) and m.group(1) in SUBJECT_VERBS


def _sentence_starts(text: str) -> set[int]:
    starts = {0}
    for m in _SENTENCE_START.finditer(text):
        starts.add(m.end())
    return starts


#: verbs that make a sentence's first word its subject ("Kestrel had 40 loans"): a one-word name there is
#: read as a claim only before one of these, so a sentence starter ("Overall, ...") is never a name
SUBJECT_VERBS = frozenset("""
had has was were is are led topped ranked came finished placed recorded logged made took saw drew sent
received handled carried ran reached sold spent earned paid cost returned hosted delivered shipped
generated scored won lost booked served issued lent borrowed ordered owed billed charged posted
""".split())


def extract_names(text: str, lexicon: Lexicon = DEFAULT, sentence_start_names: bool = False) -> list[TextMention]:
    """Capitalised names: sequences of capitalised words (joined by particles such as ``of``/``van``).

    A sequence of two or more capitalised words counts anywhere (after trimming generic edge words:
    ``The``, ``Pool``, ``Final``...); a single capitalised word counts only mid-sentence and when it
    is not a common word (so sentence starters are not names), or, with ``sentence_start_names``
    (answers), also as a sentence's first word directly before a verb of :data:`SUBJECT_VERBS`. All-caps words (SQL keywords, acronyms)
    and possessive ``'s`` are dropped. A currency code or unit token next to a figure
    (:func:`figure_code`: "Norwich Millennium GBP 1,483.51") ends the name before it.
    """
    starts: set[int] | None = None  # read only for one-word names, so found on first need
    words = [(m.group(0), m.start(), m.end()) for m in _WORD.finditer(text)]
    out: list[TextMention] = []
    i = 0
    while i < len(words):
        w, s, e = words[i]
        if _is_acronym(w) and i + 1 < len(words) and _is_cap(words[i + 1][0]) and text[e:words[i + 1][1]] == " " \
                and words[i + 1][0].lower() not in lexicon.name_edges and not figure_code(text, w, s, e):
            pass  # an acronym opening a name ("DHL Express")
        elif not _is_cap(w) or figure_code(text, w, s, e):
            i += 1
            continue
        seq = [(w, s, e)]
        j = i + 1
        while j < len(words):
            nw, ns, ne = words[j]
            gap = text[seq[-1][2]:ns]
            if gap not in (" ", "\u00a0") or figure_code(text, nw, ns, ne):
                break
            if _is_cap(nw) or (_is_acronym(nw) and _is_cap(seq[-1][0])):
                seq.append((nw, ns, ne))
                j += 1
                continue
            if nw.lower() in CONNECTORS and j + 1 < len(words) and _is_cap(words[j + 1][0]) \
                    and text[ne:words[j + 1][1]] == " ":
                seq.append((nw, ns, ne))
                j += 1
                continue
            break
        i = j
        # strip possessives and trim generic edge words
        seq = [(bare, b, c - (len(a) - len(bare))) for a, b, c in seq for bare in (_POSSESSIVE.sub("", a),)]
        while seq and (seq[0][0].lower() in lexicon.name_edges or seq[0][0].lower() in lexicon.not_names):
            seq.pop(0)
        while seq and (seq[-1][0].lower() in lexicon.name_edges or seq[-1][0].lower() in CONNECTORS):
            seq.pop()
        if not seq:
            continue
        if len(seq) == 1:
            word, ws, we = seq[0]
            if starts is None:
                starts = _sentence_starts(text)
            if word.lower() in lexicon.not_names or len(word) < 3 or figure_code(text, word, ws, we):
                continue
            if ws in starts and not (sentence_start_names and word.lower() not in _OPENERS
                                     and _subject_verb_follows(text, we)):
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
    return [m.group(0) for m in INJECTION.finditer(text)]


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


@functools.lru_cache(maxsize=4096)
def _stem(word: str) -> str:
    w = word.lower()
    for suffix in ("ies", "es", "s"):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3:
            return w[: -len(suffix)] + ("y" if suffix == "ies" else "")
    return w


