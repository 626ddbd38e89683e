"""Segments as scored rows: one results row and one audit entry per (segment, judge record).

:class:`SegmentItem` is everything about a segment that scoring, results and audit need (without the
judge); :func:`score_pair` scores one judge record of it with :func:`~axon_eval.scoring.score_turn`.
A judge error, or a verdict the scorer cannot use, gives an *unjudged* row: ``NaN`` scores and the
reason, never a 0.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..evidence import Turn
from ..rubric import CAP_FACTS, DIMENSIONS, Rubric
from ..scoring import TurnScore, score_turn
from ..view import EvidenceView
from .io import iso

if TYPE_CHECKING:  # pragma: no cover
    from ..judges.base import JudgeRecord

#: Columns of the results dataset, in order.
RESULT_COLUMNS: tuple[str, ...] = (
    "segment_id", "turn_id", "segment_index", "n_segments", "sample_index", "captured_at", "region",
    "surface", "client", "question", "answer_captured",
    *DIMENSIONS,
    "raw_score", "score", "band", "judge_verdict", "verdict_matches_band", "caps_applied", "notes",
    "explanation",
    *CAP_FACTS, "recovered_errors", "n_steps", "n_sql_executed",
    "judge_id", "model", "prompt_version", "rubric_id", "status", "error", "view_sha256", "cached",
    "latency_ms", "cost_usd",
    # ensembles only (NA otherwise): members' range per dimension and the disagreement flag of the judge
    # (members' scored bands differ, or a range reaches its disagree_at); members.parquet has each member
    "disagreement", *(f"range_{d}" for d in DIMENSIONS),
)
_RANGE_COLUMNS = tuple(f"range_{d}" for d in DIMENSIONS)
_FLOAT_COLUMNS = (*DIMENSIONS, "raw_score", "score", "latency_ms", "cost_usd", *_RANGE_COLUMNS)


def empty_results() -> pd.DataFrame:
    """A results frame with every column and no rows."""
    return results_frame([])


def _step_json(step: Any) -> dict[str, Any]:
    return step.model_dump(mode="json")


@dataclass(frozen=True)
class SegmentItem:
    """Everything about one segment that scoring, results and audit need (without the judge)."""

    segment_id: str
    turn_id: str
    segment_index: int
    n_segments: int
    captured_at: str
    region: str
    surface: str
    client: str
    question: str
    answer: str | None
    facts: dict[str, Any]
    steps: list[dict[str, Any]]
    view_sha256: str
    row_horizon: int

    @classmethod
    def from_view(cls, view: EvidenceView, turn: Turn, facts: dict[str, Any]) -> SegmentItem:
        return cls(segment_id=view.segment_id, turn_id=turn.turn_id, segment_index=view.segment_index,
                   n_segments=view.n_segments, captured_at=iso(turn.captured_at), region=turn.region,
                   surface=turn.surface, client=turn.client, question=view.question, answer=view.answer,
                   facts=facts, steps=[_step_json(s) for s in view.steps], view_sha256=view.sha256,
                   row_horizon=view.row_horizon)

    @classmethod
    def from_audit(cls, entry: Mapping[str, Any]) -> SegmentItem:
        return cls(**{k: entry[k] for k in cls.__dataclass_fields__})

    def base(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def _record_notes(record: JudgeRecord) -> list[str]:
    notes = record.extra.get("notes") if isinstance(record.extra, dict) else None
    return [str(n) for n in notes] if isinstance(notes, list) else []


def score_pair(item: SegmentItem, record: JudgeRecord, rubric: Rubric) -> tuple[dict[str, Any], dict[str, Any]]:
    """One results row and one audit entry for a segment and one of its judge records."""
    ts: TurnScore | None = None
    error = record.error
    if record.judged:
        assert record.verdict is not None
        try:
            ts = score_turn(record.verdict.subscores(), item.facts, rubric, judge_verdict=record.verdict.verdict)
        except ValueError as exc:  # a verdict the scorer cannot use: unjudged, with the reason
            error = f"verdict could not be scored: {exc}"
    status = "judged" if ts is not None else "unjudged"
    verdict = record.verdict
    notes = (ts.notes if ts is not None else []) + _record_notes(record)
    row: dict[str, Any] = {
        "segment_id": item.segment_id, "turn_id": item.turn_id, "segment_index": item.segment_index,
        "n_segments": item.n_segments, "sample_index": record.sample_index, "captured_at": item.captured_at,
        "region": item.region, "surface": item.surface, "client": item.client, "question": item.question,
        "answer_captured": item.answer is not None,
    }
    for d in DIMENSIONS:
        value = ts.subscores[d] if ts is not None else None
        row[d] = float(value) if value is not None else np.nan
    row.update({
        "raw_score": ts.raw_score if ts is not None else np.nan,
        "score": ts.score if ts is not None else np.nan,
        "band": ts.band if ts is not None else None,
        "judge_verdict": verdict.verdict if verdict is not None else None,
        "verdict_matches_band": ts.verdict_matches_band if ts is not None else None,
        "caps_applied": ";".join(ts.caps_applied) if ts is not None else "",
        "notes": "; ".join(notes),
        "explanation": verdict.explanation if verdict is not None else None,
    })
    for f in CAP_FACTS:
        row[f] = bool(item.facts[f])
    row.update({
        "recovered_errors": int(item.facts.get("recovered_errors", 0) or 0),
        "n_steps": int(item.facts.get("n_steps", len(item.steps))),
        "n_sql_executed": int(item.facts.get("n_sql_executed", 0)),
        "judge_id": record.judge_id, "model": record.model, "prompt_version": record.prompt_version,
        "rubric_id": rubric.id, "status": status, "error": error if status == "unjudged" else None,
        "view_sha256": item.view_sha256, "cached": bool(record.cached),
        "latency_ms": record.latency_ms if record.latency_ms is not None else np.nan,
        "cost_usd": record.cost_usd if record.cost_usd is not None else np.nan,
    })
    extra = record.extra if isinstance(record.extra, dict) else {}
    spread = extra.get("spread") if isinstance(extra.get("spread"), dict) else {}
    row["disagreement"] = bool(extra["disagreement"]) if "disagreement" in extra else None
    for d in DIMENSIONS:
        value = (spread.get(d) or {}).get("range") if isinstance(spread.get(d), dict) else None
        row[f"range_{d}"] = float(value) if value is not None else np.nan
    audit = {
        **item.base(),
        "sample_index": record.sample_index,
        "status": status,
        "error": row["error"],
        "judge_id": record.judge_id,
        "rubric_id": rubric.id,
        "verdict": verdict.model_dump(mode="json") if verdict is not None else None,
        "score": ts.to_dict() if ts is not None else None,
    }
    return row, audit


def results_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """The results rows as a frame with the results columns in order and their dtypes set."""
    frame = pd.DataFrame(rows, columns=list(RESULT_COLUMNS))
    for c in _FLOAT_COLUMNS:
        frame[c] = pd.to_numeric(frame[c], errors="coerce").astype("float64")
    for c in ("segment_index", "n_segments", "sample_index", "recovered_errors", "n_steps", "n_sql_executed"):
        frame[c] = frame[c].astype("int64")
    for c in (*CAP_FACTS, "answer_captured", "cached"):
        frame[c] = frame[c].astype(bool)
    frame["verdict_matches_band"] = frame["verdict_matches_band"].astype("boolean")
    frame["disagreement"] = frame["disagreement"].astype("boolean")
    return frame


def score_all(items: Sequence[SegmentItem], records: Sequence[JudgeRecord], samples: int,
               rubric: Rubric) -> tuple[pd.DataFrame, list[dict[str, Any]]]:
    """Score every judge record against its segment (``samples`` records per item, in order).

    Returns the results frame and the audit entries, one per record.

    Raises
    ------
    RuntimeError
        A record is not for the segment expected at its position.
    """
    rows, audit = [], []
    for i, record in enumerate(records):
        item = items[i // samples]
        if record.segment_id != item.segment_id:
            raise RuntimeError(f"judge returned records out of order: record {i} is for "
                               f"{record.segment_id!r}, expected {item.segment_id!r}")
        row, entry = score_pair(item, record, rubric)
        rows.append(row)
        audit.append(entry)
    return results_frame(rows), audit
