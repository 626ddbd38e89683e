"""Judge noise: the members of ensemble records as a tidy table (one row per member judgement)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd

from ...rubric import CAP_FACTS, DIMENSIONS, Rubric
from ...scoring import score_frame


# =============================================================================================
# Members of ensemble records as a tidy table
# =============================================================================================
MEMBER_COLUMNS: tuple[str, ...] = (
    "segment_id", "sample_index", "member", "judge_id", "ensemble_judge_id", *DIMENSIONS, "verdict", "error",
    "raw_score", "score", "band", "unscorable_reason", *CAP_FACTS, "rubric_id", "input_tokens", "output_tokens", "cache_read_tokens",
    "cost_usd", "latency_ms", "cached",
)


def members_frame(records: Iterable[Any], rubric: Rubric | None = None) -> pd.DataFrame:
    """Flatten ensemble records to one row per ``(segment_id, sample_index, member)`` (:data:`MEMBER_COLUMNS`).

    ``records``: :class:`~axon_eval.judges.records.JudgeRecord` objects or their dicts (lines of
    ``verdicts.jsonl``) written by ``ensemble(...)``; ``member`` is the member's position in the spec.
    Scores: the member score the ensemble recorded (its rubric, capped with the view's trajectory
    facts, stored in ``extra``); with ``rubric`` given, every judged member is re-scored from its
    subscores and the recorded facts under that rubric. A failed member has NaN subscores and score
    and its ``error``; a judged member the rubric cannot score has its subscores, NaN score, no band and
    the scorer's reason in ``unscorable_reason`` (never banded, never a 0). Raises ``ValueError`` naming a record that is not an ensemble record.
    """
    rows = []
    for rec in records:
        data = rec.model_dump() if hasattr(rec, "model_dump") else dict(rec)
        extra = data.get("extra") or {}
        members = extra.get("members")
        if not isinstance(members, list):
            raise ValueError(f"record of segment {data.get('segment_id')!r} (judge {data.get('judge_id')!r}) holds "
                             "no extra['members']: not an ensemble record")
        facts = extra.get("facts") or {}
        for position, m in enumerate(members):
            subs = m.get("subscores") or {}
            row = {"segment_id": data["segment_id"], "sample_index": int(data.get("sample_index", 0)),
                   "member": position, "judge_id": m.get("judge_id"), "ensemble_judge_id": data.get("judge_id"),
                   **{d: (np.nan if subs.get(d) is None else float(subs[d])) for d in DIMENSIONS},
                   "verdict": m.get("verdict"), "error": m.get("error"),
                   "raw_score": _num(m.get("raw_score")), "score": _num(m.get("score")), "band": m.get("band"),
                   "unscorable_reason": m.get("unscorable_reason"),
                   **{f: facts.get(f) for f in CAP_FACTS}, "rubric_id": extra.get("rubric_id"),
                   **{c: _num(m.get(c)) for c in ("input_tokens", "output_tokens", "cache_read_tokens", "cost_usd",
                                                  "latency_ms")},
                   "cached": bool(m.get("cached", False))}
            rows.append(row)
    frame = pd.DataFrame(rows, columns=list(MEMBER_COLUMNS))
    if rubric is not None and len(frame):
        judged = frame["intent_understood"].notna().to_numpy()
        if frame.loc[judged, list(CAP_FACTS)].isna().any().any():
            raise ValueError("cannot re-score members: some records lack extra['facts'] (written before facts were "
                             "recorded)")
        inputs = frame.loc[judged, list(DIMENSIONS)].astype("float64")
        for f in CAP_FACTS:
            inputs[f] = frame.loc[judged, f].astype(bool)
        scored = score_frame(inputs, rubric)  # an unscorable member: NaN score, no band, the scorer's reason
        frame["raw_score"] = np.nan
        frame["score"] = np.nan
        frame["band"] = None
        frame["unscorable_reason"] = None
        frame.loc[judged, "raw_score"] = scored["raw_score"].to_numpy()
        frame.loc[judged, "score"] = scored["score"].to_numpy()
        frame.loc[judged, "band"] = scored["band"].astype(object).where(scored["band"].notna(), None).to_numpy()
        frame.loc[judged, "unscorable_reason"] = scored["unscorable_reason"].astype(object).to_numpy()
        frame["rubric_id"] = rubric.id
    return frame


def _num(value: Any) -> float:
    return float("nan") if value is None else float(value)
