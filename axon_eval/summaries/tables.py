"""Tables over segments: bands, caps, dimensions, verdicts, breakdowns, the lowest and the unjudged.

Every table reads :func:`~axon_eval.summaries.segments.segment_table` (the unit is the segment, its score
the mean over its judged samples). A share is ``count / judged segments``; a dimension's figure is the mean
over the segments where it is observed.

Unjudged rows (``status == "unjudged"``) carry ``NaN`` scores: they are never counted as 0, they are
excluded from score statistics and they are listed, with their reasons, by :func:`unjudged_table` and in
:func:`summarise`.

The labels check (:func:`label_range_check`) compares each subscore with the label's range
``[<dim>_min, <dim>_max]`` and the band with the label's verdict.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..rubric import BANDS, CAP_FACTS, DIMENSIONS, Rubric
from ..scoring import f_describe
from .segments import check_homogeneous, JUDGED, judged, split_caps, UNJUDGED, unjudged, UNSCORABLE, _segments


# -- tables over segments ---------------------------------------------------------------------------
def band_table(results: pd.DataFrame, *, rubric: Rubric | None = None, allow_mixed: bool = False) -> pd.DataFrame:
    """Counts and shares of good / partial / poor among judged segments (index: band, in that order).

    A segment's band is the band of its mean score (see the module docstring). Shares are of the judged
    segments; the unjudged are not a band and are reported separately.
    """
    check_homogeneous(results, allow_mixed=allow_mixed)
    j = judged(_segments(results, rubric))
    counts = j["band"].astype("string").value_counts().reindex(list(BANDS), fill_value=0).astype(int)
    n = int(counts.sum())
    shares = counts / n if n else counts.astype(float) * np.nan
    out = pd.DataFrame({"count": counts, "share": shares})
    out.index.name = "band"
    return out


def perfect_scores(results: pd.DataFrame, *, top: float = 100.0, rubric: Rubric | None = None) -> pd.DataFrame:
    """Judged segments whose (mean) score equals ``top`` (100 by default)."""
    j = judged(_segments(results, rubric))
    cols = [c for c in ("segment_id", "turn_id", "region", "surface", "client", "question", "score", "n_judged")
            if c in j.columns]
    return j.loc[j["score"] == top, cols].reset_index(drop=True)


def score_reason(row: Mapping[str, Any]) -> str:
    """Why a row (or segment) scored what it did, in one sentence: the binding cap, else the weakest
    dimension."""
    if row.get("status") != JUDGED:
        return f"unjudged: {row.get('error')}"
    notes = str(row.get("notes") or "")
    for note in notes.split("; "):
        if note.startswith("capped at"):
            return note
    caps = split_caps(row.get("caps_applied"))
    if caps:
        return "capped: " + ", ".join(f_describe(c) for c in caps)
    subs = {d: row.get(d) for d in DIMENSIONS}
    observed = {d: float(v) for d, v in subs.items() if v is not None and not pd.isna(v)}
    if not observed:
        return "no subscores"
    weakest = min(observed, key=lambda d: (observed[d], DIMENSIONS.index(d)))
    triggered = [f for f in CAP_FACTS if bool(row.get(f, False))]
    cap_part = ("no cap triggered" if not triggered else
                f"cap(s) {', '.join(triggered)} triggered but the weighted score was already below them")
    return f"{cap_part}; weakest dimension {weakest} = {observed[weakest]:g}"


def lowest_scores(results: pd.DataFrame, n: int = 1, *, rubric: Rubric | None = None,
                  allow_mixed: bool = False) -> pd.DataFrame:
    """The ``n`` lowest-scoring judged segments (mean score) with the cap or reason behind each (ties:
    input order)."""
    check_homogeneous(results, allow_mixed=allow_mixed)
    j = judged(_segments(results, rubric))
    worst = j.sort_values("score", kind="stable").head(n)
    cols = [c for c in ("segment_id", "turn_id", "question", "score", "score_sd", "n_judged", "band",
                        "caps_applied") if c in worst.columns]
    out = worst.loc[:, cols].copy()
    out["reason"] = [score_reason(r) for r in worst.to_dict("records")]
    return out.reset_index(drop=True)


def cap_table(results: pd.DataFrame, *, rubric: Rubric | None = None, allow_mixed: bool = False) -> pd.DataFrame:
    """How often each cap was triggered (its fact held) and applied (it lowered the score in at least one
    judged sample), over judged segments.

    Index: the cap facts in rubric order; columns ``triggered``, ``applied``, ``share_applied``
    (of judged segments), plus a ``recovered_errors`` row counting segments whose recovered errors were
    noted (never penalised).
    """
    check_homogeneous(results, allow_mixed=allow_mixed)
    j = judged(_segments(results, rubric))
    n = len(j)
    applied_lists = [split_caps(v) for v in j.get("caps_applied", pd.Series(dtype=object))]
    rows = []
    for fact in CAP_FACTS:
        triggered = int(j[fact].astype(bool).sum()) if fact in j.columns else 0
        applied = sum(fact in caps for caps in applied_lists)
        rows.append({"cap": fact, "triggered": triggered, "applied": applied})
    if "recovered_errors" in j.columns:
        rec = int((j["recovered_errors"].fillna(0).astype(int) > 0).sum())
        rows.append({"cap": "recovered_errors", "triggered": rec, "applied": 0})
    out = pd.DataFrame(rows).set_index("cap")
    out["share_applied"] = out["applied"] / n if n else np.nan
    return out


def verdict_crosstab(results: pd.DataFrame, *, rubric: Rubric | None = None,
                     allow_mixed: bool = False) -> pd.DataFrame:
    """Judge's own (modal) verdict (rows) against the segment's band (columns), judged segments, with
    totals."""
    check_homogeneous(results, allow_mixed=allow_mixed)
    j = judged(_segments(results, rubric))
    verdict = pd.Categorical(j["judge_verdict"].astype("string"), categories=list(BANDS))
    band = pd.Categorical(j["band"].astype("string"), categories=list(BANDS))
    table = pd.crosstab(pd.Series(verdict, name="judge_verdict"), pd.Series(band, name="band"),
                        margins=True, margins_name="total", dropna=False)
    return table


def breakdown(results: pd.DataFrame, by: str | Sequence[str], *, rubric: Rubric | None = None,
              allow_mixed: bool = False) -> pd.DataFrame:
    """Per group: segments, judged, unjudged, unscorable, mean/min of the segments' (mean) scores and band
    shares (of the judged segments).

    ``by`` is a column name (``region``, ``surface``, ``client``) or a list of them.
    """
    check_homogeneous(results, allow_mixed=allow_mixed)
    keys = [by] if isinstance(by, str) else list(by)
    missing = [k for k in keys if k not in results.columns]
    if missing:
        raise ValueError(f"cannot break down by {missing}: not a results column; have {list(results.columns)}")
    segments = _segments(results, rubric)
    rows = []
    for key, group in segments.groupby(keys, sort=True, dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        g = judged(group)
        row = dict(zip(keys, key, strict=True))
        row.update(segments=len(group), judged=len(g), unjudged=int((group["status"] == UNJUDGED).sum()),
                   unscorable=int((group["status"] == UNSCORABLE).sum()),
                   mean_score=float(g["score"].mean()) if len(g) else np.nan,
                   min_score=float(g["score"].min()) if len(g) else np.nan)
        bands = g["band"].astype("string")
        for b in BANDS:
            row[f"share_{b}"] = float((bands == b).mean()) if len(g) else np.nan
        rows.append(row)
    if not rows:
        return pd.DataFrame(columns=[*keys, "segments", "judged", "unjudged", "unscorable", "mean_score", "min_score",
                                     *(f"share_{b}" for b in BANDS)]).set_index(keys)
    return pd.DataFrame(rows).set_index(keys)


def dimension_table(results: pd.DataFrame, *, rubric: Rubric | None = None, allow_mixed: bool = False) -> pd.DataFrame:
    """Per dimension over judged segments (each segment's mean over its judged samples): observed count,
    nulls, mean, median, min, max."""
    check_homogeneous(results, allow_mixed=allow_mixed)
    j = judged(_segments(results, rubric))
    rows = []
    for d in DIMENSIONS:
        s = pd.to_numeric(j[d], errors="coerce") if d in j.columns else pd.Series(dtype=float)
        rows.append({"dimension": d, "observed": int(s.notna().sum()), "null": int(s.isna().sum()),
                     "mean": float(s.mean()) if s.notna().any() else np.nan,
                     "median": float(s.median()) if s.notna().any() else np.nan,
                     "min": float(s.min()) if s.notna().any() else np.nan,
                     "max": float(s.max()) if s.notna().any() else np.nan})
    return pd.DataFrame(rows).set_index("dimension")


def worst_segments(results: pd.DataFrame, n: int = 5, *, rubric: Rubric | None = None,
                   allow_mixed: bool = False) -> pd.DataFrame:
    """The ``n`` lowest-scoring judged segments (rows of :func:`segment_table`), lowest first (ties:
    input order). ``sample_index`` names the segment's lowest-scoring sample."""
    check_homogeneous(results, allow_mixed=allow_mixed)
    return judged(_segments(results, rubric)).sort_values("score", kind="stable").head(n).reset_index(drop=True)


def unjudged_table(results: pd.DataFrame) -> pd.DataFrame:
    """Every unjudged segment (no judged sample) with its reason. Never scored, never hidden.
    Unscorable segments are listed by :func:`unscorable_table` instead."""
    segments = _segments(results, None)
    u = segments.loc[segments["status"] == UNJUDGED]
    cols = [c for c in ("segment_id", "turn_id", "n_samples", "judge_id", "error") if c in u.columns]
    return u.loc[:, cols].reset_index(drop=True)


def unscorable_table(results: pd.DataFrame) -> pd.DataFrame:
    """Every unscorable segment (judged, but the rubric cannot score it) with the scorer's reason in
    ``error``. Never banded, never counted as poor."""
    segments = _segments(results, None)
    u = segments.loc[segments["status"] == UNSCORABLE]
    cols = [c for c in ("segment_id", "turn_id", "n_samples", "judge_id", "error") if c in u.columns]
    return u.loc[:, cols].reset_index(drop=True)


def failed_samples_table(results: pd.DataFrame) -> pd.DataFrame:
    """Every unjudged sample of a segment that other samples did judge, with its reason.

    Such a sample is left out of its segment's mean (never a 0); with one sample per segment this table
    is empty.
    """
    if results.empty:
        return pd.DataFrame(columns=["segment_id", "sample_index", "error"])
    status = results["status"].astype("string")
    judged_segments = set(results.loc[status == JUDGED, "segment_id"])
    rows = results.loc[(status != JUDGED) & results["segment_id"].isin(judged_segments)]
    cols = [c for c in ("segment_id", "turn_id", "sample_index", "judge_id", "error") if c in rows.columns]
    return rows.loc[:, cols].reset_index(drop=True)


def invalid_table(invalid: Iterable[Any]) -> pd.DataFrame:
    """Every invalid input line with its reason (accepts ``InvalidTurn`` objects or their dicts)."""
    rows = [i.to_dict() if hasattr(i, "to_dict") else dict(i) for i in invalid]
    cols = ["source", "line", "turn_id", "field", "message"]
    if not rows:
        return pd.DataFrame(columns=cols)
    return pd.DataFrame(rows).reindex(columns=cols)


def label_range_check(results: pd.DataFrame, labels: pd.DataFrame) -> pd.DataFrame:
    """Per labelled, judged segment: is each subscore inside the label's ``<dim>_min`` to ``<dim>_max``
    range, and does the band equal the label's ``verdict``?

    The labels of ``data/turns/labels.csv`` are *constructed* (written with the fixtures), not human
    judgements. A label with an empty range for a dimension expects it null (no answer captured).
    A segment with several samples is compared through its per-segment means and band (see
    :func:`segment_table`). Returns one row per segment present in both frames: ``segment_id``,
    ``<dim>_in_range`` (bool), ``all_in_range`` and ``band_matches_label``.
    """
    needed = ["segment_id", "verdict"] + [f"{d}_{e}" for d in DIMENSIONS for e in ("min", "max")]
    missing = [c for c in needed if c not in labels.columns]
    if missing:
        raise ValueError(f"labels frame lacks columns {missing}")
    j = judged(_segments(results, None))
    merged = j.merge(labels.loc[:, needed].rename(columns={"verdict": "label_verdict"}), on="segment_id",
                     how="inner")
    out = pd.DataFrame({"segment_id": merged["segment_id"]})
    for d in DIMENSIONS:
        lo = pd.to_numeric(merged[f"{d}_min"], errors="coerce")
        hi = pd.to_numeric(merged[f"{d}_max"], errors="coerce")
        value = pd.to_numeric(merged[d], errors="coerce")
        expect_null = lo.isna() & hi.isna()
        out[f"{d}_in_range"] = np.where(expect_null, value.isna(), (value >= lo) & (value <= hi)).astype(bool)
    out["all_in_range"] = out[[f"{d}_in_range" for d in DIMENSIONS]].all(axis=1)
    out["band"] = merged["band"].astype("string").to_numpy()
    out["label_verdict"] = merged["label_verdict"].astype("string").to_numpy()
    out["band_matches_label"] = (out["band"] == out["label_verdict"]).astype(bool)
    return out.reset_index(drop=True)
