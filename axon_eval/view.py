"""The rendered evidence view: exactly what a judge sees of one segment.

A judge (LLM or heuristic) never reads a :class:`~axon_eval.evidence.Turn` directly. It reads an
:class:`EvidenceView` built by :func:`render_view`:

* the segment's question (and, for a bundled turn, a statement that the turn answered several
  questions and that only this one is judged here),
* every step in order, with each SQL result truncated to the first ``row_horizon`` rows while the
  full ``row_count`` is kept and shown (``showing N of M rows``),
* the answer text, or the explicit marker ``NO ANSWER CAPTURED (composed by the client's own AI)``.

Injection safety
----------------
All evidence sits inside one ``<evidence>`` ... ``</evidence>`` block. Every value taken from the
capture (question, SQL text, errors, columns, row cells, tool args/outputs, answer) is JSON-encoded and
then the characters ``<``, ``>`` and ``&`` are written as the JSON escapes ``\\u003c``, ``\\u003e`` and
``\\u0026``. The encoded values are still valid JSON and decode to the original text, but no captured text
can ever produce a literal ``<evidence>`` / ``</evidence>`` delimiter, so nothing inside a row or an
answer can close the data block and speak to the judge as instructions.

Determinism
-----------
Rendering is a pure function of the segment and the row horizon (no timestamps, no ids in the text,
sorted JSON keys). ``sha256`` is the hex SHA-256 of ``text`` (UTF-8) and enters the verdict cache key;
``VIEW_FORMAT_VERSION`` is written into the text so that a change of layout changes every hash.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from .evidence import Segment, SqlStep, ToolStep, TrajectoryFacts, Turn, facts_from_statuses, split_segments
from .rubric import Rubric

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


@dataclass(frozen=True)
class EvidenceView:
    """What a judge sees of one segment. Frozen; ``text`` is the rendered view, ``sha256`` its hash.

    ``steps`` are copies of the turn's steps where each SQL step's ``rows`` is cut to the first
    ``row_horizon`` rows and ``row_count`` is the full result size (``SqlStep.total_rows`` of the
    original). ``answer`` is ``None`` when no answer text was captured. ``question`` is this
    segment's question; ``full_question`` is the whole relayed message of the turn.
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


def _truncate_step(step: ToolStep | SqlStep, row_horizon: int) -> ToolStep | SqlStep:
    if isinstance(step, SqlStep):
        return step.model_copy(update={"rows": [list(r) for r in step.rows[:row_horizon]],
                                       "row_count": step.total_rows})
    return step.model_copy()


def _render_step(number: int, step: ToolStep | SqlStep, row_horizon: int) -> list[str]:
    if isinstance(step, ToolStep):
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
    total = step.total_rows
    shown = step.rows[:row_horizon]
    lines = [f"step {number}: sql status={step.status}",
             f"  sql: {encode_value(step.sql)}"]
    if step.error is not None:
        lines.append(f"  error: {encode_value(step.error)}")
    if step.status == "ok":
        lines.append(f"  columns: {encode_value(step.columns)}")
        lines.append(f"  rows: showing {len(shown)} of {total} rows")
        lines.extend(f"    {encode_value(row)}" for row in shown)
    elif step.status == "blocked":
        lines.append("  (refused by the guardrail before execution: nothing ran)")
    return lines


def render_view(segment: Segment, row_horizon: int) -> EvidenceView:
    """Render one segment into the view a judge reads (see the module docstring for the layout).

    ``row_horizon`` (>= 1) is the number of rows per SQL statement shown; the full row count is
    always stated. Raises ``ValueError`` for a horizon below 1.
    """
    if not isinstance(row_horizon, int) or isinstance(row_horizon, bool) or row_horizon < 1:
        raise ValueError(f"row_horizon must be an integer >= 1, got {row_horizon!r}")
    turn: Turn = segment.turn
    lines: list[str] = [EVIDENCE_OPEN]
    lines.append(f"question: {encode_value(segment.question)}")
    if segment.n_segments > 1:
        lines.append(f"bundled: this turn answered {segment.n_segments} questions in one relay; "
                     f"this segment judges only question {segment.index} of {segment.n_segments} "
                     "(the one above). The trajectory and answer below cover all of them.")
        lines.append(f"full_relayed_message: {encode_value(turn.question)}")
    lines.append(f"surface: {encode_value(turn.surface)}")
    lines.append(f"steps: {len(turn.steps)}")
    for number, step in enumerate(turn.steps, start=1):
        lines.extend(_render_step(number, step, row_horizon))
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
        steps=tuple(_truncate_step(s, row_horizon) for s in turn.steps),
        row_horizon=row_horizon,
        surface=turn.surface,
        text=text,
        sha256=hashlib.sha256(text.encode("utf-8")).hexdigest(),
    )


def build_views(turns: Iterable[Turn], rubric: Rubric | int | None = None) -> list[EvidenceView]:
    """Views of every segment of every turn (via ``split_segments``), in input order.

    ``rubric`` supplies the row horizon (``rubric.row_horizon``); an ``int`` is taken as the horizon
    itself; ``None`` means the default rubric.
    """
    if rubric is None:
        horizon = Rubric.default().row_horizon
    elif isinstance(rubric, Rubric):
        horizon = rubric.row_horizon
    else:
        horizon = rubric
    return [render_view(seg, horizon) for turn in turns for seg in split_segments(turn)]
