"""Wording: how the question's words read in the answering statement.

A filter literal is read against the question (:func:`filter_maps_to`: written as the question
writes it, a lexicon synonym, code or demonym, an abbreviation whose letters spell the entity's
initials or its start, or unmappable); a capitalised or plural question word may name a column,
table or literal rather than an entity (:func:`column_word`); the shown rows may hold the asked
entity as a code or under a name a filter selects; a measure word may be computed under its
modifier's column or name a numeric column the statement never reads (:func:`evidence_measures`);
a percentage may be computed as a fraction (:func:`share_computed`); and a "how many" question
may be answered by a count of another table's rows or by an amount. Each reading returns the
words of a note or a finding, never a score; :mod:`~axon_eval.judges.heuristic.targeting` turns
them into findings.

References
----------
Lei, W. et al. (2020). Re-examining the role of schema linking in text-to-SQL. *EMNLP 2020*,
6943-6954, for matching question words to schema items and values.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from .evidence_index import StepInfo
from .failure_classes import is_amount_unit
from .question import QuestionProfile
from .sql_facts import SqlAnalysis, SqlFilter, _parts
from .text import _ISO_DATE, _TOKEN, _norm, _stem, extract_numbers


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


def _quote_lit(f: SqlFilter) -> str:
    return f"'{f.value}'" if f.is_string else f.value
