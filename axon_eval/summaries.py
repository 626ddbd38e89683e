"""Summary tables of an evaluation's results: pure functions of the results DataFrame.

Every function here takes the ``results`` frame of a run (one row per judged segment and sample, as
written to ``results.parquet`` by :func:`axon_eval.runs.evaluate`) and returns a new DataFrame or a
plain dict; nothing reads or writes files. Unjudged rows (``status == "unjudged"``) carry ``NaN``
scores: they are never counted as 0, they are excluded from score statistics and they are listed,
with their reasons, by :func:`unjudged_table` and in :func:`summarise`.

Results from different judges or rubrics are never silently mixed: :func:`summarise` (and every
function that aggregates scores) raises :class:`MixedResultsError` when the frame holds more than one
``judge_id`` or ``rubric_id``, unless ``allow_mixed=True`` is passed, in which case the output says so.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from .rubric import BANDS, CAP_FACTS, DIMENSIONS
from .scoring import f_describe

#: Status values of a results row.
JUDGED, UNJUDGED = "judged", "unjudged"


class MixedResultsError(ValueError):
    """Results of several judges or rubrics were about to be aggregated together."""


def _ids(results: pd.DataFrame, column: str) -> list[str]:
    if column not in results.columns:
        return []
    return sorted(str(v) for v in results[column].dropna().unique())


def check_homogeneous(results: pd.DataFrame, *, allow_mixed: bool = False) -> str | None:
    """Refuse a frame mixing judge ids or rubric ids (``MixedResultsError`` naming them).

    Returns ``None`` for a homogeneous frame; with ``allow_mixed=True`` a mixed frame returns a warning
    sentence to show beside the numbers instead of raising.
    """
    judges, rubrics = _ids(results, "judge_id"), _ids(results, "rubric_id")
    problems = []
    if len(judges) > 1:
        problems.append(f"{len(judges)} judge ids {judges}")
    if len(rubrics) > 1:
        problems.append(f"{len(rubrics)} rubric ids {rubrics}")
    if not problems:
        return None
    message = "results mix " + " and ".join(problems)
    if not allow_mixed:
        raise MixedResultsError(message + "; summarise each separately, or pass allow_mixed=True "
                                "to aggregate them together knowingly")
    return "MIXED RESULTS: " + message + " (aggregated together because allow_mixed=True)"


def judged(results: pd.DataFrame) -> pd.DataFrame:
    """The rows that carry a score (``status == "judged"``)."""
    return results.loc[results["status"] == JUDGED]


def unjudged(results: pd.DataFrame) -> pd.DataFrame:
    """The rows without a score (judge error or unusable verdict)."""
    return results.loc[results["status"] != JUDGED]


def split_caps(value: Any) -> list[str]:
    """The applied caps of one row (stored ``;``-joined, or a list)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return []
    if isinstance(value, str):
        return [c for c in value.split(";") if c]
    return [str(c) for c in value]


def band_table(results: pd.DataFrame, *, allow_mixed: bool = False) -> pd.DataFrame:
    """Counts and shares of good / partial / poor among judged rows (index: band, in that order).

    Shares are of the judged rows; the unjudged are not a band and are reported separately.
    """
    check_homogeneous(results, allow_mixed=allow_mixed)
    j = judged(results)
    counts = j["band"].astype("string").value_counts().reindex(list(BANDS), fill_value=0).astype(int)
    n = int(counts.sum())
    shares = counts / n if n else counts.astype(float) * np.nan
    out = pd.DataFrame({"count": counts, "share": shares})
    out.index.name = "band"
    return out


def perfect_scores(results: pd.DataFrame, *, top: float = 100.0) -> pd.DataFrame:
    """Judged rows whose score equals ``top`` (100 by default)."""
    j = judged(results)
    cols = [c for c in ("segment_id", "turn_id", "region", "surface", "client", "question", "score")
            if c in j.columns]
    return j.loc[j["score"] == top, cols].reset_index(drop=True)


def score_reason(row: Mapping[str, Any]) -> str:
    """Why a row scored what it did, in one sentence: the binding cap, else the weakest dimension."""
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


def lowest_scores(results: pd.DataFrame, n: int = 1, *, allow_mixed: bool = False) -> pd.DataFrame:
    """The ``n`` lowest-scoring judged rows with the cap or reason behind each (ties: input order)."""
    check_homogeneous(results, allow_mixed=allow_mixed)
    j = judged(results)
    worst = j.sort_values("score", kind="stable").head(n)
    cols = [c for c in ("segment_id", "turn_id", "question", "score", "band", "caps_applied")
            if c in worst.columns]
    out = worst.loc[:, cols].copy()
    out["reason"] = [score_reason(r) for r in worst.to_dict("records")]
    return out.reset_index(drop=True)


def cap_table(results: pd.DataFrame, *, allow_mixed: bool = False) -> pd.DataFrame:
    """How often each cap was triggered (its fact held) and applied (it lowered the score), judged rows.

    Index: the cap facts in rubric order; columns ``triggered``, ``applied``, ``share_applied``
    (of judged rows), plus a ``recovered_errors`` row counting turns whose recovered errors were noted
    (never penalised).
    """
    check_homogeneous(results, allow_mixed=allow_mixed)
    j = judged(results)
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


def verdict_crosstab(results: pd.DataFrame, *, allow_mixed: bool = False) -> pd.DataFrame:
    """Judge's own verdict (rows) against the scored band (columns), judged rows, with totals."""
    check_homogeneous(results, allow_mixed=allow_mixed)
    j = judged(results)
    verdict = pd.Categorical(j["judge_verdict"].astype("string"), categories=list(BANDS))
    band = pd.Categorical(j["band"].astype("string"), categories=list(BANDS))
    table = pd.crosstab(pd.Series(verdict, name="judge_verdict"), pd.Series(band, name="band"),
                        margins=True, margins_name="total", dropna=False)
    return table


def verdict_agreement(results: pd.DataFrame) -> float:
    """Share of judged rows whose judge verdict equals the band (NaN when none are judged)."""
    j = judged(results)
    if j.empty:
        return float("nan")
    return float((j["judge_verdict"].astype("string") == j["band"].astype("string")).mean())


def breakdown(results: pd.DataFrame, by: str | Sequence[str], *, allow_mixed: bool = False) -> pd.DataFrame:
    """Per group: segments, judged, unjudged, mean/min score and band shares (of the judged).

    ``by`` is a column name (``region``, ``surface``, ``client``) or a list of them.
    """
    check_homogeneous(results, allow_mixed=allow_mixed)
    keys = [by] if isinstance(by, str) else list(by)
    missing = [k for k in keys if k not in results.columns]
    if missing:
        raise ValueError(f"cannot break down by {missing}: not a results column; have {list(results.columns)}")
    rows = []
    for key, group in results.groupby(keys, sort=True, dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        g = judged(group)
        row = dict(zip(keys, key, strict=True))
        row.update(segments=len(group), judged=len(g), unjudged=len(group) - len(g),
                   mean_score=float(g["score"].mean()) if len(g) else np.nan,
                   min_score=float(g["score"].min()) if len(g) else np.nan)
        bands = g["band"].astype("string")
        for b in BANDS:
            row[f"share_{b}"] = float((bands == b).mean()) if len(g) else np.nan
        rows.append(row)
    return pd.DataFrame(rows).set_index(keys)


def dimension_table(results: pd.DataFrame, *, allow_mixed: bool = False) -> pd.DataFrame:
    """Per dimension over judged rows: observed count, nulls, mean, median, min, max."""
    check_homogeneous(results, allow_mixed=allow_mixed)
    j = judged(results)
    rows = []
    for d in DIMENSIONS:
        s = pd.to_numeric(j[d], errors="coerce")
        rows.append({"dimension": d, "observed": int(s.notna().sum()), "null": int(s.isna().sum()),
                     "mean": float(s.mean()) if s.notna().any() else np.nan,
                     "median": float(s.median()) if s.notna().any() else np.nan,
                     "min": float(s.min()) if s.notna().any() else np.nan,
                     "max": float(s.max()) if s.notna().any() else np.nan})
    return pd.DataFrame(rows).set_index("dimension")


def worst_segments(results: pd.DataFrame, n: int = 5, *, allow_mixed: bool = False) -> pd.DataFrame:
    """The ``n`` lowest-scoring judged rows, all columns, lowest first (ties: input order)."""
    check_homogeneous(results, allow_mixed=allow_mixed)
    return judged(results).sort_values("score", kind="stable").head(n).reset_index(drop=True)


def unjudged_table(results: pd.DataFrame) -> pd.DataFrame:
    """Every unjudged row with its reason (the judge error). Never scored, never hidden."""
    u = unjudged(results)
    cols = [c for c in ("segment_id", "turn_id", "sample_index", "judge_id", "error") if c in u.columns]
    return u.loc[:, cols].reset_index(drop=True)


def invalid_table(invalid: Iterable[Any]) -> pd.DataFrame:
    """Every invalid input line with its reason (accepts ``InvalidTurn`` objects or their dicts)."""
    rows = [i.to_dict() if hasattr(i, "to_dict") else dict(i) for i in invalid]
    cols = ["source", "line", "turn_id", "field", "message"]
    if not rows:
        return pd.DataFrame(columns=cols)
    return pd.DataFrame(rows).reindex(columns=cols)


def _clean(value: Any) -> Any:
    if isinstance(value, float | np.floating) and math.isnan(value):
        return None
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    return value


def summarise(results: pd.DataFrame, *, invalid: Iterable[Any] = (), allow_mixed: bool = False,
              top: float = 100.0) -> dict[str, Any]:
    """Headline summary of a results frame as a plain (JSON-serialisable) dict.

    Keys: ``segments`` (distinct segment ids), ``rows`` (results rows: one per segment and judge
    sample), ``judged`` / ``unjudged`` (rows), ``invalid``, ``band_counts``, ``band_shares`` (of
    judged), ``score`` (mean / median / min / max), ``n_top`` (rows scoring ``top``), ``lowest``
    (segment, score, reason), ``verdict_agreement``, ``judge_ids``, ``rubric_ids``, ``mixed`` (a
    warning sentence or ``None``), ``unjudged_items`` and ``invalid_items`` (every one, with reasons).

    Raises :class:`MixedResultsError` when judge ids or rubric ids differ, unless ``allow_mixed``.
    """
    warning = check_homogeneous(results, allow_mixed=allow_mixed)
    j = judged(results)
    bands = band_table(results, allow_mixed=True)
    scores = pd.to_numeric(j["score"], errors="coerce")
    low = lowest_scores(results, 1, allow_mixed=True)
    invalid_rows = invalid_table(invalid)
    n_segments = int(results["segment_id"].nunique()) if "segment_id" in results.columns else len(results)
    return {
        "segments": n_segments,
        "rows": len(results),
        "judged": len(j),
        "unjudged": len(results) - len(j),
        "invalid": len(invalid_rows),
        "band_counts": {b: int(bands.loc[b, "count"]) for b in BANDS},
        "band_shares": {b: _clean(bands.loc[b, "share"]) for b in BANDS},
        "score": {"mean": _clean(scores.mean()), "median": _clean(scores.median()),
                  "min": _clean(scores.min()), "max": _clean(scores.max())},
        "n_top": int((scores == top).sum()),
        "lowest": ({k: _clean(v) for k, v in low.iloc[0].to_dict().items()} if len(low) else None),
        "verdict_agreement": _clean(verdict_agreement(results)),
        "judge_ids": _ids(results, "judge_id"),
        "rubric_ids": _ids(results, "rubric_id"),
        "mixed": warning,
        "unjudged_items": [{k: _clean(v) for k, v in r.items()} for r in unjudged_table(results).to_dict("records")],
        "invalid_items": [{k: _clean(v) for k, v in r.items()} for r in invalid_rows.to_dict("records")],
    }


def format_summary(summary: Mapping[str, Any]) -> str:
    """Plain-text rendering of :func:`summarise` output (what the CLI prints)."""
    lines = []
    if summary.get("mixed"):
        lines.append(f"WARNING: {summary['mixed']}")
    rows = summary.get("rows", summary["segments"])
    samples = f" ({rows} results: several judge samples per segment)" if rows != summary["segments"] else ""
    lines.append(f"segments: {summary['segments']}{samples}  judged: {summary['judged']}  "
                 f"unjudged: {summary['unjudged']}  invalid input lines: {summary['invalid']}")
    parts = []
    for b in BANDS:
        share = summary["band_shares"][b]
        parts.append(f"{b} {summary['band_counts'][b]}" + (f" ({share:.0%})" if share is not None else ""))
    lines.append("bands: " + ", ".join(parts))
    s = summary["score"]
    if s["mean"] is not None:
        lines.append(f"score: mean {s['mean']:.1f}, median {s['median']:.1f}, min {s['min']:.1f}, "
                     f"max {s['max']:.1f}; {summary['n_top']} scored 100")
    if summary.get("lowest"):
        lo = summary["lowest"]
        lines.append(f"lowest: {lo['segment_id']} scored {lo['score']:.1f}: {lo['reason']}")
    if summary.get("verdict_agreement") is not None:
        lines.append(f"judge verdict equals band on {summary['verdict_agreement']:.0%} of judged segments")
    lines.append(f"judge: {', '.join(summary['judge_ids']) or '-'}   rubric: {', '.join(summary['rubric_ids']) or '-'}")
    for item in summary["unjudged_items"]:
        lines.append(f"  UNJUDGED {item['segment_id']}: {item.get('error')}")
    for item in summary["invalid_items"]:
        tid = f" (turn {item['turn_id']})" if item.get("turn_id") else ""
        lines.append(f"  INVALID line {item['line']}{tid}: {item['field']}: {item['message']}")
    return "\n".join(lines)


def label_range_check(results: pd.DataFrame, labels: pd.DataFrame) -> pd.DataFrame:
    """Per labelled, judged segment: is each subscore inside the label's ``<dim>_min``..``<dim>_max``
    range, and does the band equal the label's ``verdict``?

    The labels of ``data/turns/labels.csv`` are *constructed* (written with the fixtures), not human
    judgements. A label with an empty range for a dimension expects it null (no answer captured).
    Returns one row per segment present in both frames: ``segment_id``, ``<dim>_in_range`` (bool),
    ``all_in_range`` and ``band_matches_label``.
    """
    needed = ["segment_id", "verdict"] + [f"{d}_{e}" for d in DIMENSIONS for e in ("min", "max")]
    missing = [c for c in needed if c not in labels.columns]
    if missing:
        raise ValueError(f"labels frame lacks columns {missing}")
    j = judged(results)
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
