"""The evidence index: every value a claim may rest on, built once per judgement from the view
(shown rows, row counts, column sums, tool outputs, question, filter literals), with the
row/name lookups and the evidence sampler's search results."""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass, field
from typing import Any

from ...evidence import SqlStep, ToolStep
from .lexicon import COLUMN_SCALES, DEFAULT, INJECTION, WORD_NUMBERS, Lexicon
from .sql_facts import SqlAnalysis, _parts, analyse_sql
from .text import (
    _ISO_DATE,
    _YEAR_MAX,
    _YEAR_MIN,
    detect_injection,
    extract_dates,
    extract_numbers,
    extract_years,
)


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

    @functools.cached_property  # read for every mention a claim check compares the cell with
    def fraction(self) -> bool:
        """A value in [-1, 1] in a column not named as a percentage reads as a fraction."""
        return abs(self.value) <= 1 and not any(p.startswith(("pct", "percent")) for p in self.column)


@dataclass
class StepInfo:
    """A SQL step of the view with its analysis and row facts (``index`` is 1-based in the view)."""

    index: int
    step: SqlStep
    #: the statement's analysis; ``None`` until first read for a statement that did not succeed
    #: (a failed or blocked statement is parsed only when a check needs it)
    analysis: SqlAnalysis | None
    shown: int
    total: int
    text: str  # lower-case text of the shown rows
    #: the evidence sampler's selection of this statement's rows (``None``: the first rows, or all)
    selection: Any = None
    #: False when the capture did not record the full row count (evidence schema 2, ``row_count: null``):
    #: the shown rows are then a lower bound, never the whole result
    count_known: bool = True

    @property
    def sql(self) -> SqlAnalysis:
        if self.analysis is None:
            self.analysis = analyse_sql(self.step.sql)
        return self.analysis

    @property
    def truncated(self) -> bool:
        return self.total > self.shown or not self.count_known

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
    #: the lexicon of this judgement
    lexicon: Lexicon = DEFAULT
    #: column names (parts tuples) that hold numbers in some shown row of a successful statement
    numeric_columns: frozenset[tuple[str, ...]] = frozenset()
    #: lower-case words of schema discovery output (tool outputs): table and column names
    schema_words: frozenset[str] = frozenset()
    #: per statement (1-based step number): the years its shown rows hold
    step_years: dict[int, frozenset[int]] = field(default_factory=dict)

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


#: a quick test before extracting numbers from a text cell: a digit or a spelled number
_MAY_HOLD_NUMBER = re.compile(r"\d|\b(?:" + "|".join(WORD_NUMBERS) + r")\b", re.I).search
_SCHEMA_TOKEN = re.compile(r"[a-z][a-z0-9_]{1,60}")


def build_evidence(view: Any, lexicon: Lexicon = DEFAULT) -> Evidence:
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
    schema_words: set[str] = set()
    step_years: dict[int, set[int]] = {}
    numeric_parts: set[tuple[str, ...]] = set()
    row_years: set[int] = set()
    proper: dict[str, set[tuple[int, int]]] = {}
    for number, step in enumerate(view.steps, start=1):
        if isinstance(step, ToolStep):
            tools.append((number, step))
            if step.status != "ok" or step.output is None:
                continue
            out = step.output if isinstance(step.output, str) else repr(step.output)
            texts.append(out.lower())
            schema_words.update(_SCHEMA_TOKEN.findall(out.lower()))
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
        sql = analyse_sql(step.sql) if step.status == "ok" else None
        rows = step.rows
        shown = len(rows)
        total = step.row_count if step.row_count is not None else shown
        count_known = bool(getattr(step, "row_count_known", True))
        row_text_parts: list[str] = []
        if step.status == "ok":
            cols = [_parts(c) for c in step.columns] or [()] * (len(rows[0]) if rows else 0)
            numeric_cols: dict[int, list[float]] = {}
            col_scale = {j: next(COLUMN_SCALES[p] for p in c if p in COLUMN_SCALES)
                         for j, c in enumerate(cols) if any(p in COLUMN_SCALES for p in c)}
            # per column, decided once rather than per cell: the parts, the joined name, year-like
            year_cols = {j for j, c in enumerate(cols) if "year" in c or "season" in c}
            names = ["_".join(c) for c in cols]
            # instruction-like text never spans two cells (its patterns match no NUL), so one search
            # of the joined string cells tells whether any single cell needs the per-cell search
            inject = any(INJECTION.search("\0".join(v for v in row if isinstance(v, str))) for row in rows)
            for r_i, row in enumerate(rows):
                strings: list[tuple[str, str]] = []
                for j, value in enumerate(row):
                    if isinstance(value, bool):
                        continue
                    col = cols[j] if j < len(cols) else ()
                    if isinstance(value, (int, float)):
                        if isinstance(value, float) and not math.isfinite(value):
                            continue
                        fvalue = float(value)
                        cells.append(Cell(fvalue, col, "row", number, r_i))
                        if j in col_scale:  # revenue_k = 845 also reads as 845,000
                            cells.append(Cell(fvalue * col_scale[j], col, "row", number, r_i))
                        numeric_cols.setdefault(j, []).append(fvalue)
                        if j in year_cols and _YEAR_MIN <= value <= _YEAR_MAX:
                            row_years.add(int(value))
                            step_years.setdefault(number, set()).add(int(value))
                    elif isinstance(value, str):
                        row_text_parts.append(value)
                        low = value.lower()
                        strings.append((low, names[j] if j < len(names) else ""))
                        if value[:1].isupper() and len(value) >= 3 and not _ISO_DATE.fullmatch(value):
                            proper.setdefault(low, set()).add((number, r_i))
                        if inject:
                            for inj in detect_injection(value):
                                injections.append((f"step {number} row value", inj))
                        if not _MAY_HOLD_NUMBER(value):
                            continue
                        for d in extract_dates(value):
                            dates.add(d.token)
                            row_years.add(int(d.token[:4]))
                            step_years.setdefault(number, set()).add(int(d.token[:4]))
                            cells.append(Cell(float(d.token[:4]), col, "text", number, r_i))
                        if not _ISO_DATE.fullmatch(value):
                            for n in extract_numbers(value):
                                cells.append(Cell(n.value, col, "text", number, r_i))
                row_strings[(number, r_i)] = strings
            numeric_parts.update(cols[j] for j in numeric_cols if j < len(cols))
            # an unknown count (evidence schema 2) supports no claim about how many rows there are, and a
            # count equal to the rows shown is then neither the full count nor a sign of counting a prefix
            if count_known:
                cells.append(Cell(float(total), ("rows",), "row_count", number))
            if total <= shown and count_known:
                complete_counts.append(total)
                for j, values in numeric_cols.items():
                    if len(values) > 1:
                        col = cols[j] if j < len(cols) else ()
                        cells.append(Cell(float(sum(values)), col, "sum", number))
            elif count_known:
                shown_trunc.add(shown)
            for f in sql.filters:
                if f.is_string:
                    texts.append(f.value.lower())
                    if f.is_date:  # the period the rows are scoped to: "in 2024" restates it
                        cells.append(Cell(float(f.value[:4]), (f.column,), "filter", number))
                else:
                    try:
                        cells.append(Cell(float(f.value), (f.column,), "filter", number))
                    except ValueError:
                        pass
            texts.extend(c.lower() for c in step.columns)
            texts.extend(p.lower() for p in row_text_parts)
        selections = getattr(view, "row_selections", ()) or ()
        selection = selections[number - 1] if number - 1 < len(selections) else None
        steps.append(StepInfo(number, step, sql, shown, total, "\n".join(row_text_parts).lower(), selection,
                              count_known))
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
                    proper_cells={k: frozenset(v) for k, v in proper.items() if len(k) < 80},
                    lexicon=lexicon, numeric_columns=frozenset(numeric_parts), schema_words=frozenset(schema_words),
                    step_years={k: frozenset(v) for k, v in step_years.items()})


_PLAIN_NUMBER = re.compile(r"[-−–+]?(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)\s?(?:%|per ?cent|percent)?")


def _mention_key(token: str) -> str:
    """A mention as both the evidence sampler and the claim checks write it: a plain number as its
    digits (``+12`` and ``12`` -> ``12``; ``7.10%`` -> ``7.10``); anything else (names, dates, numbers
    with a scale word or spelled out) lower-cased, so it matches only the same text."""
    m = _PLAIN_NUMBER.fullmatch(token.strip())
    return m.group(1) if m else token.strip().lower().replace("’", "'")


