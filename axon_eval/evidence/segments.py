"""Segments and trajectory facts: a turn's bundled questions split, and what the deterministic caps read.

A turn holding several questions becomes one :class:`Segment` per question (``turn_id#k``, ``k`` from 1;
:func:`split_segments`, :func:`split_questions`), or its explicit ``segments``. The facts
(:func:`trajectory_facts`) are read from step statuses only: over the executed SQL steps (status ``ok``,
``error`` or ``timeout``; ``blocked`` is a guardrail refusal, not an execution)::

    all_sql_failed    = n_sql_executed > 0 and every executed step failed (error or timeout)
    ended_on_failure  = the last executed SQL step failed
    no_tools          = n_steps == 0
    recovered_errors  = failed executions followed by a later successful one

"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any

from .model import EXECUTED_STATUSES, FAILED_STATUSES, Turn


# --------------------------------------------------------------------------------------------
# Segments
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Segment:
    """One question of a turn, the unit that is judged and scored.

    Every segment keeps the whole trajectory and answer of its turn; only the question differs.
    ``segment_id`` is ``turn_id`` for a single question, else ``turn_id#1``, ``turn_id#2``, ...
    """

    segment_id: str
    turn: Turn
    question: str
    index: int
    n_segments: int

    @property
    def turn_id(self) -> str:
        return self.turn.turn_id


# "1. ...", "2) ...", "(3) ..." at the start of the text or after whitespace.
_NUMBERED = re.compile(r"(?:^|(?<=\s))\(?(\d{1,2})[.)]\s+")
_QUESTION_SENTENCE = re.compile(r"[^?]*\?")


def split_questions(text: str) -> list[str]:
    """Split a relayed message into its questions (deterministic rule).

    1. Numbered items: if the text contains items numbered 1, 2, ... in order (``1.``, ``1)`` or
       ``(1)``), each item is a question.
    2. Otherwise, if the text is two or more sentences that *each* end in ``?``, each sentence is a
       question.
    3. Otherwise the whole text is one question.
    """
    stripped = text.strip()
    matches = list(_NUMBERED.finditer(stripped))
    # keep the longest run 1, 2, 3, ... of numbered markers
    run: list[re.Match[str]] = []
    for m in matches:
        if int(m.group(1)) == len(run) + 1:
            run.append(m)
    if len(run) >= 2:
        items = []
        for i, m in enumerate(run):
            end = run[i + 1].start() if i + 1 < len(run) else len(stripped)
            item = stripped[m.end():end].strip()
            if item:
                items.append(item)
        if len(items) >= 2:
            return items
    sentences = [s.strip() for s in _QUESTION_SENTENCE.findall(stripped)]
    rest = _QUESTION_SENTENCE.sub("", stripped).strip()
    if len(sentences) >= 2 and not rest:
        return sentences
    return [stripped]


def split_segments(turn: Turn) -> list[Segment]:
    """Segments of a turn: the explicit ``segments`` list when captured, else :func:`split_questions`."""
    questions = list(turn.segments) if turn.segments else split_questions(turn.question)
    n = len(questions)
    if n == 1:
        return [Segment(turn.turn_id, turn, questions[0].strip(), 1, 1)]
    return [Segment(f"{turn.turn_id}#{i}", turn, q.strip(), i, n) for i, q in enumerate(questions, start=1)]


# --------------------------------------------------------------------------------------------
# Trajectory facts
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TrajectoryFacts:
    """Facts read from step statuses only; the deterministic caps read these.

    ``recovered_errors`` counts failed SQL executions (error/timeout) that a later successful
    SQL step followed. A guardrail block is neither an execution nor a failure.
    """

    n_steps: int
    n_sql_executed: int
    n_sql_failed: int
    n_sql_blocked: int
    all_sql_failed: bool
    ended_on_failure: bool
    no_tools: bool
    recovered_errors: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def facts_from_statuses(n_steps: int, sql_statuses: list[str]) -> TrajectoryFacts:
    """Trajectory facts from the number of steps and the ordered SQL step statuses."""
    executed = [s for s in sql_statuses if s in EXECUTED_STATUSES]
    failed = [s in FAILED_STATUSES for s in executed]
    last_ok = max((i for i, s in enumerate(executed) if s == "ok"), default=-1)
    return TrajectoryFacts(
        n_steps=n_steps,
        n_sql_executed=len(executed),
        n_sql_failed=sum(failed),
        n_sql_blocked=sum(1 for s in sql_statuses if s == "blocked"),
        all_sql_failed=bool(executed) and all(failed),
        ended_on_failure=bool(executed) and failed[-1],
        no_tools=n_steps == 0,
        recovered_errors=sum(1 for i, f in enumerate(failed) if f and i < last_ok),
    )


def trajectory_facts(turn: Turn | Segment) -> TrajectoryFacts:
    """Compute :class:`TrajectoryFacts` for a turn (or a segment: same trajectory as its turn)."""
    t = turn.turn if isinstance(turn, Segment) else turn
    return facts_from_statuses(len(t.steps), [s.status for s in t.sql_steps])
