"""The rendered evidence view: exactly what a judge sees of one segment.

A judge (LLM or heuristic) never reads a :class:`~axon_eval.evidence.Turn` directly. It reads an
:class:`EvidenceView` built by :func:`render_view`:

* the segment's question (and, for a bundled turn, a statement that the turn answered several
  questions and that only this one is judged here),
* every step in order, with each SQL result cut to at most ``row_horizon`` rows while the full
  ``row_count`` is kept and shown (``showing N of M rows``),
* the answer text, or the explicit marker ``NO ANSWER CAPTURED (composed by the client's own AI)``.

Row samplers (which rows fill the horizon)
------------------------------------------
The row horizon is a budget of rows per SQL statement; the rubric's ``row_sampler`` says how it is
spent (:data:`~axon_eval.rubric.ROW_SAMPLERS`, each versioned):

``head`` (v1, the default)
    the first ``row_horizon`` rows. Its text is byte-identical to the original view, so ``axon-v1``
    views, hashes and cached verdicts are unchanged.
``evidence`` (v1)
    when a statement returned more rows than the budget ``B``, the shown rows are chosen from the
    stored rows in this order of priority, each only while the budget lasts:

    1. the first ``max(1, B // 4)`` rows (``first``);
    2. the last row (``last``; ``last stored`` when the capture kept fewer rows than the count);
    3. the rows holding a value or name that the question or the answer mentions (see *mentions*
       below), rarest mention first: all rows of a mention when they fit in what is left of the
       budget, otherwise only its first holding row, and nothing for a mention some shown row
       already holds;
    4. for each numeric column in order, the row with its largest and the row with its smallest
       value (first such row on ties) (``max <column>`` / ``min <column>``): the extremes an answer
       is most likely to claim;
    5. the next rows in order after the first rows (``next``) until the budget is spent.

    The shown rows are listed in their original order. Two lines above them say which positions
    (1-based) were shown and why, and, when every row of the result was captured, what a search of
    all of them found: the mentions whose every holding row is shown, and the mentions no row holds.
    The search is over the stored rows only; when the capture stored fewer rows than the count the
    view says so and makes no claim about the rows it never had.

With ``row_horizon=0`` no row is shown (counts only); ``row_horizon=None`` shows every stored row.

Imported evidence (schema version 2) may not know a statement's full row count: the view then says
``row count unknown`` instead of a total, and the ``evidence`` sampler makes no claim about rows it
never had. A statement whose query text was sanitised (``?`` for literals) carries the line
``query text sanitised`` under its SQL. Neither line can occur in version-1 evidence, whose views are
unchanged.
A result no larger than the budget is shown whole, and then both samplers render the same text (so a
verdict cached for it serves both).

Mentions
--------
Read from the question and the answer with plain rules (:func:`extract_mentions`): numbers as written
(``12``, ``23,457``, ``7.10%``, ``1.2 million``; each with the tolerance of its displayed precision,
``0.5 * 10**-decimals`` times its scale), ISO dates (``2024-05-12``), and names (runs of capitalised
words; a single capitalised word only mid-sentence). A row *holds* a number when one of its numeric
cells is within the tolerance (for a percentage also ``100 * cell`` when ``|cell| <= 1``) or one of its
text cells contains the number as written; it holds a date or a name when a text cell contains it
(case-insensitive, on word boundaries). These rules are deliberately generous, so "no row holds X" is
a safe statement: no reading of the rows supports X.

Injection safety
----------------
All evidence sits inside one ``<evidence>`` ... ``</evidence>`` block. Every value taken from the
capture (question, SQL text, errors, columns, row cells, tool args/outputs, answer, mentions) is
JSON-encoded and then the characters ``<``, ``>`` and ``&`` are written as the JSON escapes
``\\u003c``, ``\\u003e`` and ``\\u0026``. The encoded values are still valid JSON and decode to the
original text, but no captured text can ever produce a literal ``<evidence>`` / ``</evidence>``
delimiter, so nothing inside a row or an answer can close the data block and speak to the judge as
instructions.

Determinism
-----------
Rendering is a pure function of the segment, the row horizon and the sampler (no timestamps, no ids in
the text, sorted JSON keys, no randomness). ``sha256`` is the hex SHA-256 of ``text`` (UTF-8) and enters
the verdict cache key; ``VIEW_FORMAT_VERSION`` is written into the text so that a change of layout
changes every hash, and the ``evidence`` sampler writes its own version on every statement it samples.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from .evidence import Segment, SqlStep, ToolStep, TrajectoryFacts, Turn, facts_from_statuses, split_segments
from .rubric import DEFAULT_ROW_SAMPLER, ROW_SAMPLERS, Rubric

#: Version of the text layout produced by :func:`render_view`. Bump on any change of layout.
VIEW_FORMAT_VERSION = 1
EVIDENCE_OPEN = f'<evidence format="axon-view/{VIEW_FORMAT_VERSION}">'
EVIDENCE_CLOSE = "</evidence>"
#: Shown instead of the answer when the client's own AI composed it and no text was captured.
NO_ANSWER_MARKER = "NO ANSWER CAPTURED (composed by the client's own AI)"
#: Tool outputs longer than this many characters (after JSON encoding) are cut in the view.
TOOL_OUTPUT_CHARS = 600

_HTML_SAFE = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026"})


def encode_value(value: Any) -> str:
    """JSON-encode ``value`` (sorted keys, UTF-8 kept) with ``<``, ``>``, ``&`` escaped as ``\\u00XX``.

    The result decodes with ``json.loads`` to the original value, and never contains ``<`` or ``>``,
    so it cannot form the evidence delimiters.
    """
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str).translate(_HTML_SAFE)


# =============================================================================================
# Mentions: the values and names a question or answer refers to
# =============================================================================================
@dataclass(frozen=True)
class Mention:
    """One value or name written in the question or the answer.

    ``text`` is the mention as written, without sign, percent sign or scale word for numbers
    (``"23,457"``, ``"7.10"``, ``"Aldo Ashgrove"``, ``"2024-05-12"``); ``kind`` is ``number``,
    ``date`` or ``name``; ``value``/``tolerance`` (numbers only) are the value after the scale word
    and half a unit of its last displayed digit; ``percent`` marks ``7.10%``; ``source`` is
    ``question``, ``answer`` or ``both``.
    """

    text: str
    kind: str
    source: str
    value: float | None = None
    tolerance: float = 0.0
    percent: bool = False


_ISO_DATE = re.compile(r"(?<!\d)\d{4}-\d{2}-\d{2}(?!\d)")
_NUMBER = re.compile(
    r"(?<![\w.])(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)(?![\w]*\d)"
    r"(?:st|nd|rd|th)?\b"
    r"(?P<pct>\s?%|\s?per ?cent\b|\s?percent\b)?"
    r"(?:\s?(?P<scale>thousand|million|billion|bn|mn|k|m)\b)?")
_SCALES = {"thousand": 1e3, "k": 1e3, "million": 1e6, "m": 1e6, "mn": 1e6, "billion": 1e9, "bn": 1e9}
_CAP_WORD = re.compile(r"[A-ZÀ-ÖØ-Þ][\w'’\-]*")
#: Capitalised words that do not make a name on their own (sentence words, months, rugby terms).
_NOT_NAMES = frozenset("""
the a an in on at of for to from by with and or but if then so as it its this that these those there
their they he she his her we our you your i me my is are was were be been has have had do does did
no yes not what which who whom whose when where why how all any each every both either neither some
most more less few top overall total average home away across after before during over under since
until while also only just about per use using note system answer here according
january february march april may june july august september october november december
monday tuesday wednesday thursday friday saturday sunday pool round final finals semi quarter season
stage match matches team teams player players venue venues try tries points sql step steps rows row
""".split())


def _sentence_starts(text: str) -> set[int]:
    starts = {0}
    for m in re.finditer(r"(?:[.!?:;]\s+|\n\s*|[\[(\"“]\s*|\d+[.)]\s+|\s-\s+)", text):
        starts.add(m.end())
    return starts


def _names(text: str) -> list[str]:
    """Runs of capitalised words (single space apart), trimmed of common words at either end; a run of
    one word counts only mid-sentence."""
    starts = _sentence_starts(text)
    words = [(m.group(0), m.start(), m.end()) for m in _CAP_WORD.finditer(text)]
    out: list[str] = []
    i = 0
    while i < len(words):
        run = [words[i]]
        j = i + 1
        while j < len(words) and text[run[-1][2]:words[j][1]] == " ":
            run.append(words[j])
            j += 1
        i = j
        run = [(re.sub(r"['’]s$", "", w), s, e - (len(w) - len(re.sub(r"['’]s$", "", w)))) for w, s, e in run]
        while run and run[0][0].lower() in _NOT_NAMES:
            run.pop(0)
        while run and run[-1][0].lower() in _NOT_NAMES:
            run.pop()
        if not run or (len(run) == 1 and (run[0][1] in starts or len(run[0][0]) < 3)):
            continue
        out.append(text[run[0][1]:run[-1][2]])
    return out


def extract_mentions(question: str, answer: str | None) -> tuple[Mention, ...]:
    """The numbers, ISO dates and names of ``question`` and ``answer`` (see the module docstring).

    Each distinct mention appears once (keyed by kind and text, case-insensitive for names), in the
    order of first appearance (question first); ``source`` records where it was written.
    """
    found: dict[tuple[str, str], Mention] = {}
    for source, text in (("question", question), ("answer", answer or "")):
        dates = [(m.start(), m.end()) for m in _ISO_DATE.finditer(text)]
        items: list[Mention] = [Mention(m.group(0), "date", source) for m in _ISO_DATE.finditer(text)]
        for m in _NUMBER.finditer(text):
            if any(a <= m.start("num") < b for a, b in dates):
                continue
            num = m.group("num")
            digits = num.replace(",", "")
            decimals = len(digits.split(".")[1]) if "." in digits else 0
            scale_word = (m.group("scale") or "").lower()
            scale = _SCALES.get(scale_word, 1.0)
            items.append(Mention(num, "number", source, float(digits) * scale, 0.5 * 10 ** -decimals * scale,
                                 bool(m.group("pct"))))
        items.extend(Mention(n, "name", source) for n in _names(text))
        for item in items:
            key = (item.kind, item.text.lower() if item.kind == "name" else item.text)
            if key in found:
                if found[key].source != source:
                    found[key] = Mention(**{**found[key].__dict__, "source": "both"})
                continue
            found[key] = item
    return tuple(found.values())


class _ResultIndex:
    """The stored rows of one statement, indexed for mention lookups (numeric columns as lists of
    floats, text columns as distinct lower-case values -> row positions)."""

    def __init__(self, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
        self.n = len(rows)
        width = len(columns) if columns else (len(rows[0]) if rows else 0)
        self.numeric: list[tuple[int, list[float]]] = []
        self.text: dict[str, list[int]] = {}
        for j in range(width):
            values = [row[j] if j < len(row) else None for row in rows]
            present = [v for v in values if v is not None]
            if present and all(isinstance(v, int | float) and not isinstance(v, bool) for v in present):
                self.numeric.append((j, [float(v) if v is not None else math.nan for v in values]))
            for i, v in enumerate(values):
                if isinstance(v, str):
                    self.text.setdefault(v.lower(), []).append(i)

    def holding(self, mention: Mention) -> list[int]:
        """Positions (0-based, ascending) of the rows that hold ``mention``."""
        hit: set[int] = set()
        if mention.kind == "number":
            v, tol = float(mention.value or 0.0), mention.tolerance + 1e-9
            for _, values in self.numeric:
                for i, c in enumerate(values):
                    if abs(c - v) <= tol or (mention.percent and abs(c) <= 1 and abs(100 * c - v) <= tol):
                        hit.add(i)
            pattern = re.compile(r"(?<![\d.])" + re.escape(mention.text.lower()) + r"(?![\d])")
        else:
            pattern = re.compile(r"(?<![\w])" + re.escape(mention.text.lower()) + r"(?![\w])")
        for value, positions in self.text.items():
            if pattern.search(value):
                hit.update(positions)
        return sorted(hit)


# =============================================================================================
# Row selection
# =============================================================================================
@dataclass(frozen=True)
class MentionCoverage:
    """What the search of a statement's stored rows found for one mention.

    ``holding`` rows of the result hold it, ``shown`` of them are in the view. ``complete`` (every
    holding row shown) and ``absent`` (no row holds it) are statements about the whole result only
    when :attr:`RowSelection.searched_all` is true.
    """

    mention: Mention
    holding: int
    shown: int

    @property
    def complete(self) -> bool:
        return self.holding > 0 and self.shown == self.holding

    @property
    def absent(self) -> bool:
        return self.holding == 0


@dataclass(frozen=True)
class RowSelection:
    """The rows a sampler chose from one SQL statement's result.

    ``positions``: 0-based positions of the shown rows in the stored rows, ascending; ``reasons``:
    the reason each was chosen (``first``, ``last``, ``last stored``, ``has "<mention>"``,
    ``max <column>``, ``min <column>``, ``next``), aligned with ``positions``; ``stored``: rows the
    capture kept; ``total``: the full row count; ``mentions``: one :class:`MentionCoverage` per mention
    of the question and answer; ``sampler``/``version``/``budget``: what chose them.
    """

    sampler: str
    version: int
    budget: int
    total: int
    stored: int
    positions: tuple[int, ...]
    reasons: tuple[str, ...]
    mentions: tuple[MentionCoverage, ...]
    count_known: bool = True

    @property
    def searched_all(self) -> bool:
        """True when the capture stored every row, so the mention search covered the whole result."""
        return self.count_known and self.stored == self.total

    @property
    def complete_mentions(self) -> tuple[str, ...]:
        """Mentions (as written) whose every holding row is shown; empty unless :attr:`searched_all`."""
        return tuple(c.mention.text for c in self.mentions if self.searched_all and c.complete)

    @property
    def absent_mentions(self) -> tuple[str, ...]:
        """Mentions (as written) that no row of the result holds; empty unless :attr:`searched_all`."""
        return tuple(c.mention.text for c in self.mentions if self.searched_all and c.absent)


def _numeric_columns(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[tuple[int, str]]:
    out = []
    width = len(columns) if columns else (len(rows[0]) if rows else 0)
    for j in range(width):
        values = [r[j] for r in rows if j < len(r) and r[j] is not None]
        if values and all(isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(float(v))
                          for v in values):
            out.append((j, columns[j] if j < len(columns) else f"column {j + 1}"))
    return out


def select_evidence_rows(columns: Sequence[str], rows: Sequence[Sequence[Any]], total: int, budget: int,
                         mentions: Sequence[Mention], count_known: bool = True) -> RowSelection:
    """The ``evidence`` sampler (v1) on one statement: at most ``budget`` of the stored ``rows``.

    ``total`` is the statement's full row count (>= ``len(rows)``). The priority order is the module
    docstring's. Pure and deterministic: the same inputs always give the same selection.
    """
    if budget < 0:
        raise ValueError(f"budget must be >= 0, got {budget!r}")
    n = len(rows)
    index = _ResultIndex(columns, rows)
    holdings = [index.holding(m) for m in mentions]
    chosen: dict[int, str] = {}

    def room() -> int:
        return budget - len(chosen)

    def add(i: int, reason: str) -> None:
        if i not in chosen and room() > 0:
            chosen[i] = reason

    if budget >= n:
        for i in range(n):
            add(i, "all")
    else:
        for i in range(min(max(1, budget // 4), n)):
            add(i, "first")
        if n:
            add(n - 1, "last" if n == total and count_known else "last stored")
        for k in sorted(range(len(mentions)), key=lambda k: (len(holdings[k]), k)):
            held = holdings[k]
            unseen = [i for i in held if i not in chosen]
            if not unseen:
                continue
            label = f"has {encode_value(mentions[k].text)}"
            if len(unseen) <= room():
                for i in unseen:
                    add(i, label)
            elif len(unseen) == len(held):
                add(unseen[0], label)
        for j, name in _numeric_columns(columns, rows):
            values = [float(r[j]) for r in rows]
            add(values.index(max(values)), f"max {encode_value(name)}")
            add(values.index(min(values)), f"min {encode_value(name)}")
        i = 0
        while room() > 0 and i < n:
            add(i, "next")
            i += 1
    positions = tuple(sorted(chosen))
    shown = set(positions)
    coverage = tuple(MentionCoverage(m, len(h), sum(1 for i in h if i in shown)) for m, h in zip(mentions, holdings))
    return RowSelection(sampler="evidence", version=ROW_SAMPLERS["evidence"], budget=budget, total=total,
                        stored=n, positions=positions, reasons=tuple(chosen[i] for i in positions),
                        mentions=coverage, count_known=count_known)


def _spans(positions: Sequence[int]) -> str:
    """``1-5 9 12-13``: 1-based runs of consecutive positions."""
    parts: list[str] = []
    k = 0
    while k < len(positions):
        j = k
        while j + 1 < len(positions) and positions[j + 1] == positions[j] + 1:
            j += 1
        parts.append(str(positions[k] + 1) if j == k else f"{positions[k] + 1}-{positions[j] + 1}")
        k = j + 1
    return " ".join(parts)


def _reason_group(reason: str) -> str:
    """The reason as shown in the text: first and next rows are one group, mentions another."""
    if reason in ("first", "next", "all"):
        return "in order"
    if reason.startswith("has "):
        return "hold a mention"
    return reason


def _selection_lines(sel: RowSelection) -> list[str]:
    """The two lines that say which rows were chosen and why, and what the search found (kept short:
    they are paid for in every judged view)."""
    groups: dict[str, list[int]] = {}
    for pos, reason in zip(sel.positions, sel.reasons):
        groups.setdefault(_reason_group(reason), []).append(pos)
    why = ", ".join(f"{_spans(pos)} {group}" for group, pos in groups.items())
    if not sel.count_known:
        return [f"  rows: showing {len(sel.positions)} of {sel.stored} captured rows, row count unknown, a sample "
                f"(evidence v{sel.version}) at positions {why}",
                "  the full row count was not recorded; rows beyond those captured were never seen or searched"]
    lines = [f"  rows: showing {len(sel.positions)} of {sel.total} rows, a sample (evidence v{sel.version}) "
             f"at positions {why}"]
    if not sel.searched_all:
        lines.append(f"  only the first {sel.stored} rows were captured; later rows were never seen or searched")
        return lines
    bits = []
    if sel.complete_mentions:
        bits.append("every row with " + ", ".join(encode_value(t) for t in sel.complete_mentions) + " is shown")
    if sel.absent_mentions:
        bits.append("no row has " + ", ".join(encode_value(t) for t in sel.absent_mentions))
    if bits:
        lines.append(f"  searched all {sel.total} rows: " + "; ".join(bits))
    return lines


# =============================================================================================
# The view
# =============================================================================================
@dataclass(frozen=True)
class EvidenceView:
    """What a judge sees of one segment. Frozen; ``text`` is the rendered view, ``sha256`` its hash.

    ``steps`` are copies of the turn's steps where each SQL step's ``rows`` are the shown rows (in
    their original order) and ``row_count`` is the full result size (``SqlStep.total_rows`` of the
    original; ``None`` when the count is unknown, see ``SqlStep.row_count_known``). ``answer`` is ``None`` when no answer text was captured. ``question`` is this
    segment's question; ``full_question`` is the whole relayed message of the turn. ``row_horizon``
    is the row budget per statement (for ``render_view(..., None)``: the largest number of stored
    rows of any statement, i.e. everything). ``row_selections`` is aligned with ``steps``: the
    :class:`RowSelection` of each SQL statement the ``evidence`` sampler cut, else ``None``.
    """

    segment_id: str
    turn_id: str
    question: str
    full_question: str
    segment_index: int
    n_segments: int
    answer: str | None
    steps: tuple[ToolStep | SqlStep, ...]
    row_horizon: int
    surface: str
    text: str
    sha256: str
    row_sampler: str = DEFAULT_ROW_SAMPLER
    row_selections: tuple[RowSelection | None, ...] = ()

    @property
    def answer_captured(self) -> bool:
        """True when answer text exists, i.e. ``answer_faithfulness`` must be graded (not null)."""
        return self.answer is not None

    @property
    def bundled(self) -> bool:
        """True when the turn carried several questions and this view judges one of them."""
        return self.n_segments > 1

    @property
    def sql_steps(self) -> list[SqlStep]:
        return [s for s in self.steps if isinstance(s, SqlStep)]

    @property
    def facts(self) -> TrajectoryFacts:
        """Trajectory facts of the (whole) trajectory, from statuses only; identical to the turn's."""
        return facts_from_statuses(len(self.steps), [s.status for s in self.sql_steps])


def _shown_positions(step: SqlStep, horizon: int, sampler: str,
                     mentions: Sequence[Mention]) -> tuple[tuple[int, ...], RowSelection | None]:
    """Positions of the rows to show and, for an ``evidence`` cut, its selection record."""
    stored = len(step.rows)
    if sampler == "head" or horizon >= stored or horizon == 0:
        return tuple(range(min(horizon, stored))), None
    sel = select_evidence_rows(step.columns, step.rows, step.total_rows, horizon, mentions, step.row_count_known)
    return sel.positions, sel


def _render_tool(number: int, step: ToolStep) -> list[str]:
    output = encode_value(step.output)
    if len(output) > TOOL_OUTPUT_CHARS:
        output = (output[:TOOL_OUTPUT_CHARS]
                  + f" ... [tool output cut: {len(output) - TOOL_OUTPUT_CHARS} more characters]")
    lines = [f"step {number}: tool {encode_value(step.name)} status={step.status}",
             f"  args: {encode_value(step.args)}",
             f"  output: {output}"]
    if step.error is not None:
        lines.append(f"  error: {encode_value(step.error)}")
    return lines


def _render_sql(number: int, step: SqlStep, positions: Sequence[int], selection: RowSelection | None) -> list[str]:
    total = step.total_rows
    lines = [f"step {number}: sql status={step.status}",
             f"  sql: {encode_value(step.sql)}"]
    if step.sanitized:
        lines.append("  query text sanitised: literals were replaced by ? in the capture (filter values unknown)")
    if step.error is not None:
        lines.append(f"  error: {encode_value(step.error)}")
    if step.status == "ok":
        lines.append(f"  columns: {encode_value(step.columns)}")
        if selection is None:
            # the original (head) layout, kept byte-identical
            if step.row_count_known:
                lines.append(f"  rows: showing {len(positions)} of {total} rows")
            else:
                lines.append(f"  rows: showing {len(positions)} of {len(step.rows)} captured rows; "
                             "row count unknown (the full result size was not recorded)")
        else:
            lines.extend(_selection_lines(selection))
        lines.extend(f"    {encode_value(step.rows[i])}" for i in positions)
    elif step.status == "blocked":
        lines.append("  (refused by the guardrail before execution: nothing ran)")
    return lines


def _check_horizon(row_horizon: int | None) -> None:
    if row_horizon is None:
        return
    if not isinstance(row_horizon, int) or isinstance(row_horizon, bool) or row_horizon < 0:
        raise ValueError(f"row_horizon must be an integer >= 0 or None (all rows), got {row_horizon!r}")


def render_view(segment: Segment, row_horizon: int | None, row_sampler: str = DEFAULT_ROW_SAMPLER) -> EvidenceView:
    """Render one segment into the view a judge reads (see the module docstring for the layout).

    ``row_horizon``: rows per SQL statement shown (the sampler's budget), ``0`` for row counts only,
    ``None`` for every stored row; the full row count is always stated. ``row_sampler``: ``head``
    (first rows, the default) or ``evidence``. Raises ``ValueError`` naming a bad horizon or sampler.
    """
    _check_horizon(row_horizon)
    if row_sampler not in ROW_SAMPLERS:
        raise ValueError(f"row_sampler must be one of {sorted(ROW_SAMPLERS)}, got {row_sampler!r}")
    turn: Turn = segment.turn
    stored_max = max((len(s.rows) for s in turn.steps if isinstance(s, SqlStep)), default=0)
    horizon = stored_max if row_horizon is None else row_horizon
    mentions = extract_mentions(segment.question, turn.answer) if row_sampler == "evidence" else ()
    lines: list[str] = [EVIDENCE_OPEN]
    lines.append(f"question: {encode_value(segment.question)}")
    if segment.n_segments > 1:
        lines.append(f"bundled: this turn answered {segment.n_segments} questions in one relay; "
                     f"this segment judges only question {segment.index} of {segment.n_segments} "
                     "(the one above). The trajectory and answer below cover all of them.")
        lines.append(f"full_relayed_message: {encode_value(turn.question)}")
    lines.append(f"surface: {encode_value(turn.surface)}")
    lines.append(f"steps: {len(turn.steps)}")
    shown_steps: list[ToolStep | SqlStep] = []
    selections: list[RowSelection | None] = []
    for number, step in enumerate(turn.steps, start=1):
        if isinstance(step, ToolStep):
            lines.extend(_render_tool(number, step))
            shown_steps.append(step.model_copy())
            selections.append(None)
            continue
        positions, selection = _shown_positions(step, horizon, row_sampler, mentions)
        lines.extend(_render_sql(number, step, positions, selection))
        shown_steps.append(step.model_copy(update={"rows": [list(step.rows[i]) for i in positions],
                                                   "row_count": step.total_rows if step.row_count_known else None}))
        selections.append(selection)
    if turn.answer is None:
        lines.append(f"answer: {NO_ANSWER_MARKER}")
    else:
        lines.append(f"answer: {encode_value(turn.answer)}")
    lines.append(EVIDENCE_CLOSE)
    text = "\n".join(lines) + "\n"
    return EvidenceView(
        segment_id=segment.segment_id,
        turn_id=turn.turn_id,
        question=segment.question,
        full_question=turn.question,
        segment_index=segment.index,
        n_segments=segment.n_segments,
        answer=turn.answer,
        steps=tuple(shown_steps),
        row_horizon=horizon,
        surface=turn.surface,
        text=text,
        sha256=hashlib.sha256(text.encode("utf-8")).hexdigest(),
        row_sampler=row_sampler,
        row_selections=tuple(selections),
    )


def build_views(turns: Iterable[Turn], rubric: Rubric | int | None = None,
                row_sampler: str | None = None) -> list[EvidenceView]:
    """Views of every segment of every turn (via ``split_segments``), in input order.

    ``rubric`` supplies the row horizon and sampler (``rubric.row_horizon``, ``rubric.row_sampler``);
    an ``int`` is taken as the horizon itself (sampler ``head``); ``None`` means the default rubric.
    ``row_sampler``, when given, overrides the rubric's.
    """
    if rubric is None:
        rubric = Rubric.default()
    if isinstance(rubric, Rubric):
        horizon, sampler = rubric.row_horizon, rubric.row_sampler
    else:
        horizon, sampler = rubric, DEFAULT_ROW_SAMPLER
    sampler = row_sampler or sampler
    return [render_view(seg, horizon, sampler) for turn in turns for seg in split_segments(turn)]
