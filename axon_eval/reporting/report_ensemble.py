"""The audit report's ensemble disagreement: the segments an ensemble judge flagged, with each member's subscores.

An ensemble flags a segment when its members' bands differ or a dimension's range ``max - min`` over
the judged members reaches its threshold (:mod:`axon_eval.judges.wrappers`); the flagged results rows
are read from ``results/`` and each member's subscores from ``verdicts.jsonl``, streamed
(:func:`axon_eval.reporting.report_io.stream_audit`), so memory grows with the flagged rows only.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from ..display import fmt_number, is_missing
from ..rubric import DIMENSIONS
from ..summaries import JUDGED
from .report_html import DIMENSION_HEADERS, MAX_LISTED, _band, _short, _table, esc
from .report_io import stream_audit


def disagreement_rows(results: pd.DataFrame) -> pd.DataFrame:
    """The results rows an ensemble flagged (``disagreement`` true), with their ``range_*`` columns; an
    empty frame when the run is not an ensemble's (no such column, or all null)."""
    if "disagreement" not in results.columns:
        return results.iloc[0:0]
    flag = results["disagreement"].astype("boolean").fillna(False).to_numpy(dtype=bool)
    return results.loc[flag]


def stream_ensemble_members(path: Path, wanted: set[tuple[str, int]], problems: list[str]) -> dict[tuple[str, int], dict]:
    """``(segment_id, sample_index) -> extra`` of the ensemble records in ``verdicts.jsonl`` that are
    ``wanted``, read one line at a time by :func:`stream_audit` (unreadable lines are named in ``problems``)."""
    found: dict[tuple[str, int], dict] = {}
    if not wanted:
        return found
    if not path.exists():
        problems.append(f"{path.name} is missing: the ensemble members' subscores cannot be shown")
        return found
    for record in stream_audit(path, {sid for sid, _ in wanted}, problems):
        key = (record.get("segment_id"), int(record.get("sample_index") or 0))
        if key in wanted and isinstance(record.get("extra"), dict):
            found[key] = record["extra"]
    return found


def _disagreement_section(results: pd.DataFrame, members: Mapping[tuple[str, int], Mapping[str, Any]]) -> str:
    if "disagreement" not in results.columns or results["disagreement"].isna().all():
        return ""
    flagged = disagreement_rows(results)
    judged_rows = results[results["status"] == JUDGED]
    n_segments = flagged["segment_id"].nunique()
    out = [f"<h2>Ensemble disagreement ({n_segments} of {judged_rows['segment_id'].nunique()} judged segments "
           "flagged)</h2>",
           "<p class='muted'>The ensemble flags a segment when its members' scored bands differ or a dimension's "
           "range (max - min over the judged members) reaches its threshold. The combined subscores are in the "
           "table of all segments; here each member's own.</p>"]
    if flagged.empty:
        out.append("<p>None.</p>")
        return "\n".join(out)
    headers = ["segment", "sample", "member", "verdict", *(DIMENSION_HEADERS[d] for d in DIMENSIONS), "score",
               "band", "why flagged"]
    rows = []
    for rec in flagged.head(MAX_LISTED).to_dict("records"):
        key = (str(rec["segment_id"]), int(rec.get("sample_index") or 0))
        extra = members.get(key) or {}
        ranges = ", ".join(f"{DIMENSION_HEADERS[d]} {fmt_number(rec.get(f'range_{d}'))}" for d in DIMENSIONS
                           if not is_missing(rec.get(f"range_{d}")))
        why = "; ".join(extra.get("disagreement_reasons") or []) or "flagged"
        why += f" (ranges: {ranges})" if ranges else ""
        listed = extra.get("members") or []
        if not listed:
            rows.append([esc(key[0]), key[1], "<span class='muted'>members not found in verdicts.jsonl</span>",
                         "", "", "", "", "", "", "", esc(why)])
            continue
        for k, member in enumerate(listed):
            sub = member.get("subscores") or {}
            first = k == 0
            cells = [esc(key[0]) if first else "", key[1] if first else "", esc(member.get("judge_id")),
                     esc(member.get("verdict") or "") if not member.get("error") else
                     f"<span class='unjudged'>failed: {esc(_short(member.get('error')))}</span>",
                     *(esc(fmt_number(sub.get(d), missing="null" if not member.get("error") else ""))
                       for d in DIMENSIONS),
                     esc(fmt_number(member.get("score"), missing="")), _band(member.get("band"))
                     if member.get("band") else "", esc(why) if first else ""]
            rows.append(cells)
    out.append(_table(headers, rows, numeric=(1, 4, 5, 6, 7, 8)))
    if len(flagged) > MAX_LISTED:
        out.append(f"<p>{len(flagged) - MAX_LISTED} more flagged results rows: each has "
                   "<code>disagreement</code> true in the run's <code>results/</code>.</p>")
    return "\n".join(out)


def _flagged_keys(results: pd.DataFrame) -> set[tuple[str, int]]:
    flagged = disagreement_rows(results).head(MAX_LISTED)
    samples = flagged["sample_index"] if "sample_index" in flagged.columns else pd.Series(0, index=flagged.index)
    return {(str(s), int(i)) for s, i in zip(flagged["segment_id"], samples.fillna(0))}


