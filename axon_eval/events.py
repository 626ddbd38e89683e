"""Assemble captured turns from a raw telemetry event stream.

The stream is JSON Lines, one event per line::

    {"turn_id": "eu-0001", "seq": 0, "type": "turn_started", "ts": "2026-07-20T09:14:03Z",
     "data": {"schema_version": 1, "region": "eu", "surface": "web", "client": "client-a"}}

Event types, in the order a turn emits them (``seq`` is the order within a turn, from 0):

=================  ===========================================================================
``turn_started``   ``data``: schema_version, region, surface, client; ``ts`` becomes captured_at
``question``       ``data``: text, optional segments (list of questions)
``tool_call``      ``data``: a tool step (name, status, args, output, error, elapsed_ms)
``sql_executed``   ``data``: a SQL step (sql, status, error, columns, rows, row_count, elapsed_ms)
``answer``         ``data``: text (absent when the client's own AI composed the answer)
``turn_ended``     ``data``: {}
=================  ===========================================================================

Events may arrive in any order and interleaved across turns; they are grouped by ``turn_id`` and
sorted by ``seq``. A turn without a ``turn_ended`` event is reported as incomplete (with what was
seen), never lost; a turn whose events do not form a valid :class:`~axon_eval.evidence.Turn` is
reported as invalid with the reason.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from .evidence import SqlStep, ToolStep, Turn

EVENT_TYPES = ("turn_started", "question", "tool_call", "sql_executed", "answer", "turn_ended")


@dataclass(frozen=True)
class EventProblem:
    """A turn (or a line) of the event stream that could not be assembled, and why."""

    turn_id: str | None
    kind: str  # "incomplete" | "invalid" | "bad_event"
    message: str
    line: int | None = None
    events_seen: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        where = f"line {self.line}: " if self.line else ""
        return f"{where}{self.turn_id or '<unknown turn>'}: {self.kind}: {self.message}"


@dataclass
class AssemblyResult:
    turns: list[Turn]
    incomplete: list[EventProblem]
    invalid: list[EventProblem]


def turn_to_events(turn: Turn) -> list[dict[str, Any]]:
    """The event sequence a turn emits (inverse of :func:`assemble_turns`), in ``seq`` order."""
    ts = turn.model_dump(mode="json")["captured_at"]
    events: list[dict[str, Any]] = [
        {"type": "turn_started", "data": {"schema_version": turn.schema_version, "region": turn.region,
                                          "surface": turn.surface, "client": turn.client}},
        {"type": "question", "data": {"text": turn.question,
                                      **({"segments": list(turn.segments)} if turn.segments else {})}},
    ]
    for step in turn.steps:
        etype = "sql_executed" if isinstance(step, SqlStep) else "tool_call"
        data = step.model_dump(mode="json")
        data.pop("kind")
        events.append({"type": etype, "data": data})
    if turn.answer is not None:
        events.append({"type": "answer", "data": {"text": turn.answer}})
    events.append({"type": "turn_ended", "data": {}})
    return [{"turn_id": turn.turn_id, "seq": i, "ts": ts, **e} for i, e in enumerate(events)]


def _build_turn(turn_id: str, events: list[dict[str, Any]]) -> Turn:
    started = [e for e in events if e["type"] == "turn_started"]
    questions = [e for e in events if e["type"] == "question"]
    answers = [e for e in events if e["type"] == "answer"]
    if len(started) != 1:
        raise ValueError(f"expected one turn_started event, found {len(started)}")
    if len(questions) != 1:
        raise ValueError(f"expected one question event, found {len(questions)}")
    if len(answers) > 1:
        raise ValueError(f"expected at most one answer event, found {len(answers)}")
    steps: list[ToolStep | SqlStep] = []
    for e in events:
        if e["type"] == "tool_call":
            steps.append(ToolStep.model_validate({"kind": "tool", **e["data"]}))
        elif e["type"] == "sql_executed":
            steps.append(SqlStep.model_validate({"kind": "sql", **e["data"]}))
    q = questions[0]["data"]
    return Turn.model_validate({
        **started[0]["data"],
        "turn_id": turn_id,
        "captured_at": started[0]["ts"],
        "question": q.get("text"),
        **({"segments": q["segments"]} if q.get("segments") else {}),
        "answer": answers[0]["data"].get("text") if answers else None,
        "steps": steps,
    })


def assemble_turns(events: Iterable[dict[str, Any]]) -> AssemblyResult:
    """Group events by turn, order them by ``seq`` and build :class:`Turn` objects.

    Turns are returned sorted by ``(captured_at, turn_id)`` so the result does not depend on the
    order in which events arrived. Line numbers in problems are 1-based positions in ``events``.
    """
    by_turn: dict[str, list[dict[str, Any]]] = defaultdict(list)
    invalid: list[EventProblem] = []
    for i, e in enumerate(events, start=1):
        problem = _check_event(e)
        if problem:
            invalid.append(EventProblem(e.get("turn_id") if isinstance(e, dict) else None, "bad_event", problem, line=i))
            continue
        by_turn[e["turn_id"]].append(e)
    turns: list[Turn] = []
    incomplete: list[EventProblem] = []
    for turn_id, evs in by_turn.items():
        evs.sort(key=lambda e: e["seq"])
        seqs = [e["seq"] for e in evs]
        kinds = [e["type"] for e in evs]
        if len(set(seqs)) != len(seqs):
            dup = sorted({s for s in seqs if seqs.count(s) > 1})
            invalid.append(EventProblem(turn_id, "invalid", f"duplicate seq numbers {dup}", events_seen=kinds))
            continue
        if "turn_ended" not in kinds:
            incomplete.append(EventProblem(turn_id, "incomplete",
                                           f"no turn_ended event ({len(evs)} events seen, last seq {seqs[-1]})",
                                           events_seen=kinds))
            continue
        if kinds[-1] != "turn_ended":
            invalid.append(EventProblem(turn_id, "invalid", "events after turn_ended", events_seen=kinds))
            continue
        gaps = sorted(set(range(seqs[-1] + 1)) - set(seqs))
        if gaps:
            incomplete.append(EventProblem(turn_id, "incomplete", f"missing events with seq {gaps}", events_seen=kinds))
            continue
        try:
            turns.append(_build_turn(turn_id, evs))
        except (ValidationError, ValueError) as exc:
            invalid.append(EventProblem(turn_id, "invalid", str(exc), events_seen=kinds))
    turns.sort(key=lambda t: (t.captured_at, t.turn_id))
    return AssemblyResult(turns=turns, incomplete=incomplete, invalid=invalid)


def _check_event(e: Any) -> str | None:
    if not isinstance(e, dict):
        return f"an event must be a JSON object, got {type(e).__name__}"
    for key, typ in (("turn_id", str), ("seq", int), ("type", str)):
        if not isinstance(e.get(key), typ) or isinstance(e.get(key), bool):
            return f"field {key!r} must be {typ.__name__}, got {e.get(key)!r}"
    if e["type"] not in EVENT_TYPES:
        return f"unknown event type {e['type']!r}; expected one of {list(EVENT_TYPES)}"
    if not isinstance(e.get("data", {}), dict):
        return f"field 'data' must be an object, got {e.get('data')!r}"
    e.setdefault("data", {})
    return None


def load_events(path: str | Path) -> AssemblyResult:
    """Read a JSONL event file and assemble it; lines that are not JSON are reported, not fatal."""
    events: list[dict[str, Any]] = []
    bad: list[EventProblem] = []
    with Path(path).open(encoding="utf-8") as fh:
        for i, raw in enumerate(fh, start=1):
            if not raw.strip():
                continue
            try:
                events.append(json.loads(raw))
            except json.JSONDecodeError as exc:
                bad.append(EventProblem(None, "bad_event", f"not valid JSON: {exc.msg}", line=i))
    result = assemble_turns(events)
    result.invalid[:0] = bad
    return result
