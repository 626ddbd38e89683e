"""What a rater is shown: the evidence of one segment, built from an allow-list, and the rubric's guide.

Blind by construction: :func:`blind_item` copies named evidence fields out of a run's audit entry -- the
question the judge graded, the whole relayed message with that part marked when the turn bundled several
questions, every step (tool calls with their arguments and output, SQL with its status, error, columns,
the rows the judge saw and the full row count), the answer, the surface -- and nothing else. Whatever
else an audit entry holds (the judge's verdict, subscores, score, band, explanation, judge and rubric ids,
the view hash) is never read, so it cannot reach a response; a field added to the audit later is not
shown until it is added here. Design figures (inclusion probability, weight, stratum) live in the pack's
``design.json`` and are read only by the server's bookkeeping, never by this module.

:func:`rubric_guide` reads the description and the 10 / 5 / 0 anchors of each dimension, and the
verdict's meanings, out of the judge prompt the run's rubric names, so raters and judge grade by the same
words. Pure functions: dicts in, dicts out.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from ..rubric import BANDS, DIMENSIONS

#: Rows of one statement sent to the page at most (the page states how many the judge saw).
MAX_ROWS_SENT = 2000
#: The step fields copied, by kind.
TOOL_FIELDS: tuple[str, ...] = ("name", "status", "args", "output", "error")
SQL_FIELDS: tuple[str, ...] = ("sql", "status", "error", "columns")


def _text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def _cell(value: Any) -> Any:
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if value == value and abs(value) != float("inf") else str(value)
    return _text(value)


def _step(step: Mapping[str, Any], max_rows: int) -> dict[str, Any]:
    kind = "sql" if step.get("kind") == "sql" else "tool"
    if kind == "tool":
        return {"kind": "tool", **{k: _text(step.get(k)) for k in TOOL_FIELDS}}
    rows = step.get("rows") or []
    seen = len(rows)
    count = step.get("row_count")
    return {"kind": "sql", **{k: _text(step.get(k)) for k in SQL_FIELDS[:3]},
            "columns": [str(c) for c in (step.get("columns") or [])],
            "rows": [[_cell(c) for c in (r if isinstance(r, list | tuple) else [r])] for r in rows[:max_rows]],
            "rows_seen": seen, "row_count": int(count) if isinstance(count, int) and not isinstance(count, bool) else None}


def mark_part(message: str | None, question: str) -> dict[str, Any] | None:
    """Where ``question`` sits in ``message``: ``{"text", "start", "end"}`` (character offsets of its first
    occurrence), ``start``/``end`` ``None`` when it is not found verbatim; ``None`` without a message."""
    if message is None:
        return None
    at = message.find(question) if question else -1
    return {"text": message, "start": at if at >= 0 else None, "end": at + len(question) if at >= 0 else None}


def blind_item(entry: Mapping[str, Any], *, message: str | None = None, parts: Sequence[str] = (),
               max_rows: int = MAX_ROWS_SENT) -> dict[str, Any]:
    """The evidence of one segment for a rater, from the run's audit ``entry`` (allow-list above).

    ``message``: the whole relayed message of a bundled turn (from the evidence file), ``parts``: the
    questions of the turn's segments in order (from the audit), used when the message is not at hand.
    """
    question = _text(entry.get("question")) or ""
    n = int(entry.get("n_segments") or 1)
    index = int(entry.get("segment_index") or 1)
    answer = entry.get("answer")
    bundled = None
    if n > 1:
        bundled = {"index": index, "of": n, "message": mark_part(message, question),
                   "parts": [str(p) for p in parts]}
    return {"segment_id": str(entry.get("segment_id")), "question": question, "bundled": bundled,
            "surface": _text(entry.get("surface")),
            "steps": [_step(s, max_rows) for s in entry.get("steps") or [] if isinstance(s, Mapping)],
            "answer": _text(answer), "answer_captured": answer is not None}


# -- the rubric's guide -------------------------------------------------------------------------------
_DIM_LINE = re.compile(r"^(?P<dim>[a-z_]+): (?P<text>.+)$")
_ANCHOR = re.compile(r"^- (?P<key>10|5|0|null): (?P<text>.+)$")
_VERDICT = re.compile(r'"(?P<band>good|partial|poor)" \((?P<text>[^)]+)\)')


def rubric_guide(prompt_text: str) -> dict[str, Any]:
    """Each dimension's description and anchors, and the verdicts' meanings, from a judge prompt.

    The prompt's dimension section has, per dimension, a line ``<dimension>: <description>`` followed by
    bullets ``- 10: ...``, ``- 5: ...``, ``- 0: ...`` (and other notes). Returns ``{"dimensions": [{"name",
    "description", "anchors": {"10", "5", "0"}, "notes": [...]}], "verdicts": [{"name", "meaning"}]}``.
    ``ValueError`` naming a dimension the prompt does not describe, or an anchor it lacks.
    """
    dims: dict[str, dict[str, Any]] = {}
    current: dict[str, Any] | None = None
    for raw in prompt_text.splitlines():
        line = raw.strip()
        m = _DIM_LINE.match(line)
        if m and m["dim"] in DIMENSIONS and m["dim"] not in dims:
            current = dims[m["dim"]] = {"name": m["dim"], "description": m["text"], "anchors": {}, "notes": []}
            continue
        if current is None:
            continue
        if not line.startswith("- "):
            if line:
                current = None
            continue
        a = _ANCHOR.match(line)
        if a and a["key"] != "null" and a["key"] not in current["anchors"]:
            current["anchors"][a["key"]] = a["text"]
        else:
            current["notes"].append(line[2:])
    for d in DIMENSIONS:
        if d not in dims:
            raise ValueError(f"the judge prompt does not describe the dimension {d!r} (a line '{d}: ...')")
        missing = [k for k in ("10", "5", "0") if k not in dims[d]["anchors"]]
        if missing:
            raise ValueError(f"the judge prompt gives {d!r} no anchor(s) {missing} (lines '- 10: ...')")
    meanings = {m["band"]: m["text"] for m in _VERDICT.finditer(prompt_text)}
    return {"dimensions": [dims[d] for d in DIMENSIONS],
            "verdicts": [{"name": b, "meaning": meanings.get(b, "")} for b in BANDS]}
