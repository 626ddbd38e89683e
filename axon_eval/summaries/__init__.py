"""Summary tables of an evaluation's results: pure functions of the results DataFrame.

Every function here takes the ``results`` frame of a run (as written to its results dataset, ``results/part-*.parquet``, by
:func:`axon_eval.runs.evaluate`) and returns a new DataFrame or a plain dict; nothing reads or writes
files.

**The unit is the segment, not the sample.** Every count, share and score statistic here is over
*segments*, computed from :func:`segment_table`, which collapses a segment's samples into one row (when
a segment is judged, its mean score and spread, its band and its modal verdict: the rules are in
:mod:`axon_eval.summaries.segments`).

With one sample per segment every number equals the plain per-row one.

Unjudged rows (``status == "unjudged"``) carry ``NaN`` scores: they are never counted as 0, they are
excluded from score statistics and they are listed, with their reasons, by :func:`unjudged_table` and in
:func:`summarise`.

A segment the rubric cannot score (:class:`~axon_eval.scoring.UnscorableError`: a required dimension
missing, or no weight on its observed dimensions) is **unscorable**, never banded and never ``poor``:
its status is ``unscorable``; it is counted apart from the judged and the unjudged, left out of every
band, score and cap figure, and listed with its reason by :func:`unscorable_table` and in
:func:`summarise`. It is recognised by the scorer's reason (an ``error`` containing ``unscorable:``, as a
run records it) or by judged rows without a score (a frame scored by ``score_frame``, whose
``unscorable_reason`` is then the reason).

The band of a segment's mean score is that mean rounded to 0.1 by the scorer's own rule
(:func:`~axon_eval.scoring.round_tenths`: the exact decimal value, half away from zero).

**Intervals live one layer up.** This module sits below :mod:`axon_eval.stats` in the layers, so its tables
(:func:`band_table`, :func:`dimension_table`, :func:`summarise`) carry no interval. The 95% interval and n
of each headline figure (mean score, share in each band, share capped, each dimension's mean) is
:func:`axon_eval.stats.intervals.headline_table` (for people: ``format_headline_table``), which reads
:func:`segment_table`, so its estimates are exactly the figures these tables print; the report and notebook
01 show it (the CLI summary's interval lines read the same rows from ``headline_intervals``).

Results from different judges or rubrics are never silently mixed: :func:`summarise` (and every
function that aggregates scores) raises :class:`MixedResultsError` when the frame holds more than one
``judge_id`` or ``rubric_id``, unless ``allow_mixed=True`` is passed, in which case the output says so.

The module is split by job; every name stays importable from here:
:mod:`~axon_eval.summaries.segments` (one row per segment), :mod:`~axon_eval.summaries.tables` (tables over
segments), :mod:`~axon_eval.summaries.crosscheck` (the judge's verdict against the band); this module holds
:func:`summarise` and :func:`format_summary`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd

from ..evidence import describe_invalid_lines, invalid_lines
from ..rubric import BANDS, Rubric
from .segments import (check_homogeneous, is_repeated, is_simulated_judge, JUDGED, judged, MixedResultsError,
    samples_per_segment, segment_table, SIMULATED_MARKERS, split_caps, UNJUDGED, unjudged, UNSCORABLE,
    verdict_agreement, _clean, _ids, _segments)  # noqa: F401 - re-exported
from .tables import (band_table, breakdown, cap_table, dimension_table, failed_samples_table, invalid_table,
    label_range_check, lowest_scores, perfect_scores, score_reason, unjudged_table, unscorable_table,
    verdict_crosstab, worst_segments)  # noqa: F401 - re-exported
from .crosscheck import (BAND_RANK, candidate_rubrics, CONFLICT_COLUMNS, cross_check, cross_check_lines,
    describe_candidate, verdict_conflicts)  # noqa: F401 - re-exported

def _stats(values: pd.Series) -> dict[str, Any]:
    return {"mean": _clean(values.mean()), "median": _clean(values.median()),
            "min": _clean(values.min()), "max": _clean(values.max())}


def summarise(results: pd.DataFrame, *, invalid: Iterable[Any] = (), rubric: Rubric | None = None,
              allow_mixed: bool = False, top: float = 100.0) -> dict[str, Any]:
    """Headline summary of a results frame as a plain (JSON-serialisable) dict, counting segments.

    Parameters
    ----------
    results : pandas.DataFrame
        A results frame (one row per segment and judge sample).
    invalid : Iterable[Any], optional
        The invalid input lines of the evidence.
    rubric : Rubric, optional
        Supplies the band edges for the mean of several samples (default: the packaged default rubric).
    allow_mixed : bool, optional
        Aggregate results of several judges or rubrics instead of refusing.
    top : float, optional
        The top score counted in ``n_top``.

    Returns
    -------
    dict[str, Any]
        The keys below (a *segment* is one evaluated question; a *sample* one results row of it).

    Raises
    ------
    MixedResultsError
        Judge ids or rubric ids differ, unless ``allow_mixed``.

    Notes
    -----
    The keys of the summary:

    ``segments``
        distinct segment ids
    ``rows``
        results rows (one per segment and judge sample)
    ``samples_per_segment``
        ``{"min", "max", "mean"}`` results rows per segment
    ``repeated``
        True when some segment has several samples (scores are then per-segment means)
    ``judged`` / ``unjudged``
        segments with at least one / no judged sample (``unjudged`` excludes the unscorable)
    ``unscorable``
        segments the rubric cannot score (never banded; see the module docstring)
    ``failed_samples``
        unjudged samples of judged segments (left out of their segment's mean)
    ``invalid``
        invalid input lines (distinct lines: one line may have several problems)
    ``invalid_problems``
        invalid input line records (one per problem found)
    ``band_counts`` / ``band_shares``
        segments per band of the (mean) score; shares of the judged segments
    ``band_varies``
        ``{"count", "share", "of"}``: segments whose judged samples' bands differ, of the ``of``
        segments with two or more judged samples (share ``None`` when none)
    ``score``
        mean / median / min / max of the segments' (mean) scores
    ``spread``
        within-segment spread over segments with two or more judged samples: ``sd_mean``, ``sd_median``,
        ``sd_max`` (sample SD of a segment's scores), ``range_mean``, ``range_max``; ``None`` without
        such segments
    ``n_top``
        judged segments whose (mean) score equals ``top``
    ``lowest``
        the lowest segment: id, score, reason
    ``verdict_agreement``
        share of judged segments whose modal verdict equals their band
    ``verdict_agreement_samples``
        mean over judged segments of the share of their samples whose verdict equals their own band
    ``cross_check``
        the segments whose judge verdict is worse than their band, with the packaged candidate rubric
        that moves each down (:func:`cross_check`)
    ``band_edges``
        ``{"good", "partial", "rubric"}`` edges used for the band of a mean
    ``judge_ids``, ``rubric_ids``, ``simulated``, ``mixed``
        the judge and rubric ids, a simulated judge, a warning or ``None``
    ``notes``
        caveats in words (e.g. band edges taken from another rubric than the results')
    ``unjudged_items``
        every unjudged segment with its reason
    ``unscorable_items``
        every unscorable segment with the scorer's reason
    ``failed_sample_items``
        every failed sample of a judged segment with its reason
    ``invalid_items``
        every invalid input line with its reason
    """
    warning = check_homogeneous(results, allow_mixed=allow_mixed)
    rubric_used = rubric if rubric is not None else Rubric.default()
    segments = _segments(results, rubric_used)
    j = judged(segments)
    scores = pd.to_numeric(j["score"], errors="coerce")
    counts = j["band"].astype("string").value_counts().reindex(list(BANDS), fill_value=0).astype(int)
    n_judged = len(j)
    per_segment = segments["n_samples"] if len(segments) else pd.Series(dtype="int64")
    multi = j.loc[j["n_judged"] >= 2]
    invalid_rows = invalid_table(invalid)
    rubric_ids = _ids(results, "rubric_id")
    notes: list[str] = []
    repeated = bool(len(per_segment)) and int(per_segment.max()) > 1
    if len(multi) and rubric_ids and rubric_used.id not in rubric_ids:
        notes.append(f"bands of per-segment mean scores use the edges of rubric {rubric_used.label} "
                     f"(good >= {rubric_used.bands.good:g}, partial >= {rubric_used.bands.partial:g}); "
                     f"the results were scored under {', '.join(rubric_ids)}")
    low = lowest_scores(results, 1, rubric=rubric_used, allow_mixed=True) if n_judged else pd.DataFrame()
    verdicts_known = j["judge_verdict"].notna() if "judge_verdict" in j.columns else pd.Series(dtype=bool)
    agreement = (j["judge_verdict"].astype("string") == j["band"].astype("string")).fillna(False)
    judge_ids = _ids(results, "judge_id")
    return {
        "segments": len(segments),
        "rows": len(results),
        "samples_per_segment": {"min": _clean(per_segment.min()) if len(per_segment) else None,
                                "max": _clean(per_segment.max()) if len(per_segment) else None,
                                "mean": _clean(per_segment.mean()) if len(per_segment) else None},
        "repeated": repeated,
        "judged": n_judged,
        "unjudged": int((segments["status"] == UNJUDGED).sum()),
        "unscorable": int((segments["status"] == UNSCORABLE).sum()),
        "failed_samples": int(j["n_failed"].sum()) if n_judged else 0,
        "invalid": len(invalid_lines(invalid_rows.to_dict("records"))),
        "invalid_problems": len(invalid_rows),
        "band_counts": {b: int(counts[b]) for b in BANDS},
        "band_shares": {b: (float(counts[b] / n_judged) if n_judged else None) for b in BANDS},
        "band_varies": {"count": int(multi["band_varies"].sum()),
                        "share": _clean(multi["band_varies"].mean()) if len(multi) else None,
                        "of": len(multi)},
        "score": _stats(scores),
        "spread": (None if multi.empty else {
            "sd_mean": _clean(multi["score_sd"].mean()), "sd_median": _clean(multi["score_sd"].median()),
            "sd_max": _clean(multi["score_sd"].max()), "range_mean": _clean(multi["score_range"].mean()),
            "range_max": _clean(multi["score_range"].max())}),
        "n_top": int((scores == top).sum()),
        "lowest": ({k: _clean(v) for k, v in low.iloc[0].to_dict().items()} if len(low) else None),
        "verdict_agreement": _clean(agreement[verdicts_known].mean()) if verdicts_known.any() else None,
        "verdict_agreement_samples": _clean(j["verdict_agreement"].mean()) if n_judged else None,
        "cross_check": cross_check(results, rubric_used, segments=segments),
        "band_edges": {"good": float(rubric_used.bands.good), "partial": float(rubric_used.bands.partial),
                       "rubric": rubric_used.label},
        "judge_ids": judge_ids,
        "rubric_ids": rubric_ids,
        "simulated": is_simulated_judge(judge_ids),
        "mixed": warning,
        "notes": notes,
        "unjudged_items": [{k: _clean(v) for k, v in r.items()} for r in unjudged_table(results).to_dict("records")],
        "unscorable_items": [{k: _clean(v) for k, v in r.items()}
                             for r in unscorable_table(results).to_dict("records")],
        "failed_sample_items": [{k: _clean(v) for k, v in r.items()}
                                for r in failed_samples_table(results).to_dict("records")],
        "invalid_items": [{k: _clean(v) for k, v in r.items()} for r in invalid_rows.to_dict("records")],
    }


def _share(value: float | None) -> str:
    from ..display import fmt_share

    return "" if value is None else f" ({fmt_share(value)})"


def format_summary(summary: Mapping[str, Any]) -> str:
    """Plain-text rendering of :func:`summarise` output (what the CLI prints); counts are segments."""
    lines = []
    if summary.get("mixed"):
        lines.append(f"WARNING: {summary['mixed']}")
    if summary.get("simulated"):
        lines.append("SIMULATED judge: these verdicts are generated noise around another judge's, "
                     "not a real model's grading")
    n_segments = summary["segments"]
    rows = summary.get("rows", n_segments)
    per = summary.get("samples_per_segment") or {}
    samples = ""
    if rows != n_segments:
        lo, hi = per.get("min"), per.get("max")
        each = f"{lo}" if lo == hi else f"{lo}-{hi}"
        samples = (f" x {each} judge samples ({rows} results rows: several judge samples per segment; "
                   "scores are per-segment means)")
    failed = summary.get("failed_samples", 0)
    lines.append(f"segments: {n_segments}{samples}  judged: {summary['judged']}  "
                 f"unjudged: {summary['unjudged']}"
                 + (f"  unscorable: {summary['unscorable']}" if summary.get("unscorable") else "")
                 + (f"  failed samples: {failed}" if failed else "")
                 + f"  invalid input lines: {summary['invalid']}"
                 + (f" ({summary['invalid_problems']} problems)"
                    if summary.get("invalid_problems", summary["invalid"]) != summary["invalid"] else ""))
    parts = [f"{b} {summary['band_counts'][b]}" + _share(summary["band_shares"][b]) for b in BANDS]
    basis = " (band of each segment's mean score)" if summary.get("repeated") else ""
    lines.append("bands: " + ", ".join(parts) + basis)
    varies = summary.get("band_varies") or {}
    if varies.get("of"):
        lines.append(f"band varies across samples: {varies['count']} of {varies['of']} segments"
                     + _share(varies.get("share")))
    s = summary["score"]
    if s["mean"] is not None:
        what = "per-segment mean score" if summary.get("repeated") else "score"
        lines.append(f"{what}: mean {s['mean']:.1f}, median {s['median']:.1f}, min {s['min']:.1f}, "
                     f"max {s['max']:.1f}; {summary['n_top']} segment(s) scored 100")
    spread = summary.get("spread")
    if spread:
        lines.append(f"within-segment spread: SD mean {spread['sd_mean']:.2f} (median {spread['sd_median']:.2f}, "
                     f"max {spread['sd_max']:.2f}); range mean {spread['range_mean']:.1f} "
                     f"(max {spread['range_max']:.1f}) points")
    if summary.get("lowest"):
        lo = summary["lowest"]
        lines.append(f"lowest: {lo['segment_id']} scored {lo['score']:.1f}: {lo['reason']}")
    if summary.get("verdict_agreement") is not None:
        from ..display import fmt_share

        line = f"judge verdict equals band on {fmt_share(summary['verdict_agreement'])} of judged segments"
        if summary.get("repeated") and summary.get("verdict_agreement_samples") is not None:
            line += (f" (modal verdict vs band of the mean; per sample, on average "
                     f"{fmt_share(summary['verdict_agreement_samples'])} of a segment's samples)")
        lines.append(line)
    lines.extend(cross_check_lines(summary.get("cross_check")))
    lines.append(f"judge: {', '.join(summary['judge_ids']) or '-'}   rubric: {', '.join(summary['rubric_ids']) or '-'}")
    for note in summary.get("notes") or ():
        lines.append(f"note: {note}")
    for item in summary["unjudged_items"]:
        lines.append(f"  UNJUDGED {item['segment_id']}: {item.get('error')}")
    for item in summary.get("unscorable_items") or ():
        lines.append(f"  UNSCORABLE {item['segment_id']}: {item.get('error')}")
    for item in summary.get("failed_sample_items") or ():
        lines.append(f"  FAILED SAMPLE {item['segment_id']} sample {item.get('sample_index')}: {item.get('error')}")
    for text in describe_invalid_lines(summary["invalid_items"]):
        lines.append(f"  INVALID {text}")
    return "\n".join(lines)
