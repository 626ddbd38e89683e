"""Summary tables of an evaluation's results: pure functions of the results DataFrame.

Every function here takes the ``results`` frame of a run (as written to its results dataset, ``results/part-*.parquet``, by
:func:`axon_eval.runs.evaluate`) and returns a new DataFrame or a plain dict; nothing reads or writes
files.

**The unit is the segment, not the sample.** A ``repeat(<spec>, n)`` run keeps one results row per
(segment, sample); an ensemble keeps one row per segment. Every count, share and score statistic here is
over *segments*, computed from :func:`segment_table`, which collapses a segment's samples into one row:

* a segment is **judged** when at least one of its samples is judged; it is **unjudged** when none is
  (its reason is the first sample's error). A failed sample of a judged segment is a *failed sample*:
  listed, never counted as 0, and left out of the segment's mean;
* the segment's ``score`` (and each dimension) is the **mean over its judged samples**; its spread is
  the sample standard deviation ``score_sd`` (``ddof=1``; undefined, ``NaN``, with fewer than two judged
  samples) and the range ``score_range = score_max - score_min``;
* the segment's ``band`` is the band of its mean score rounded to 0.1, using the rubric's band edges
  (with one judged sample it is that sample's own stored band); ``band_varies`` says the judged samples'
  bands are not all the same;
* the segment's ``judge_verdict`` is the modal verdict of its judged samples (a tie goes to the worse
  band, as an ensemble's majority does); ``verdict_matches_band`` compares it with the segment's band,
  and ``verdict_agreement`` is the share of its judged samples whose own verdict equals their own band.

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
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from .evidence import describe_invalid_lines, invalid_lines
from .rubric import BANDS, CAP_FACTS, DIMENSIONS, Rubric
from .scoring import UNSCORABLE_PREFIX, f_describe, round_tenths

#: Status values of a results row (and of a segment).
JUDGED, UNJUDGED = "judged", "unjudged"
#: Status of a segment the rubric cannot score (segment tables only; see the module docstring).
UNSCORABLE = "unscorable"
#: Substrings of a judge id that mark a simulated judge (its verdicts are not a real model's).
SIMULATED_MARKERS: tuple[str, ...] = ("noise(", "simulated(")
#: Bands from worst to best: a tie between verdicts goes to the first.
_WORST_FIRST: tuple[str, ...] = tuple(reversed(BANDS))
#: Columns that are constant within a segment: copied from its first results row.
_SEGMENT_CONSTANTS: tuple[str, ...] = (
    "turn_id", "segment_index", "n_segments", "captured_at", "region", "surface", "client", "question",
    "answer_captured", *CAP_FACTS, "recovered_errors", "n_steps", "n_sql_executed", "judge_id", "model",
    "prompt_version", "rubric_id", "view_sha256",
)


class MixedResultsError(ValueError):
    """Results of several judges or rubrics were about to be aggregated together."""


def _ids(results: pd.DataFrame, column: str) -> list[str]:
    if column not in results.columns:
        return []
    return sorted(str(v) for v in results[column].dropna().unique())


def is_simulated_judge(judge_ids: str | Iterable[str] | None) -> bool:
    """True when any of ``judge_ids`` names a simulated judge (contains ``noise(`` or ``simulated(``).

    A simulated judge's verdicts are generated noise around another judge's, not a model's grading;
    every summary, figure and report of its runs says so.
    """
    if judge_ids is None:
        return False
    ids = [judge_ids] if isinstance(judge_ids, str) else list(judge_ids)
    return any(marker in str(j) for j in ids for marker in SIMULATED_MARKERS)


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
    """The rows that carry a score (``status == "judged"``); of a results or a segment table."""
    return results.loc[results["status"] == JUDGED]


def unjudged(results: pd.DataFrame) -> pd.DataFrame:
    """The rows without a score (judge error, unusable verdict or unscorable); of a results or a segment
    table."""
    return results.loc[results["status"] != JUDGED]


def _unscorable_rows(frame: pd.DataFrame, is_judged: np.ndarray, scores: pd.Series) -> tuple[np.ndarray, pd.Series]:
    """(mask, reason) of results rows the scorer could not score: an unjudged row whose error carries the
    scorer's reason, or a judged row without a score (its ``unscorable_reason``, else a generic reason)."""
    error = frame["error"].astype("string") if "error" in frame.columns else pd.Series(pd.NA, index=frame.index,
                                                                                        dtype="string")
    by_error = (~is_judged) & error.str.contains(UNSCORABLE_PREFIX, regex=False).fillna(False).to_numpy(dtype=bool)
    no_score = is_judged & scores.isna().to_numpy()
    stored = (frame["unscorable_reason"].astype("string") if "unscorable_reason" in frame.columns
              else pd.Series(pd.NA, index=frame.index, dtype="string"))
    reason = error.where(by_error, stored.fillna(f"{UNSCORABLE_PREFIX}judged row without a score"))
    return by_error | no_score, reason.where(by_error | no_score)


def split_caps(value: Any) -> list[str]:
    """The applied caps of one row (stored ``;``-joined, or a list)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return []
    if isinstance(value, str):
        return [c for c in value.split(";") if c]
    return [str(c) for c in value]


def _union_caps(values: Iterable[Any]) -> str:
    """``;``-joined union of applied caps, in rubric order (unknown names after, sorted)."""
    seen: set[str] = set()
    for v in values:
        seen.update(split_caps(v))
    ordered = [c for c in CAP_FACTS if c in seen] + sorted(seen.difference(CAP_FACTS))
    return ";".join(ordered)


# -- one row per segment --------------------------------------------------------------------------
def samples_per_segment(results: pd.DataFrame) -> pd.Series:
    """Results rows per segment id (1 everywhere for a single-sample or ensemble run)."""
    if results.empty:
        return pd.Series(dtype="int64", name="n_samples")
    return results.groupby("segment_id", sort=False).size().rename("n_samples")


def is_repeated(results: pd.DataFrame) -> bool:
    """True when some segment has more than one results row (a ``repeat(...)`` run)."""
    return bool(len(results)) and not results["segment_id"].is_unique


def _require(results: pd.DataFrame, columns: Sequence[str]) -> None:
    missing = [c for c in columns if c not in results.columns]
    if missing:
        raise ValueError(f"results frame lacks columns {missing}; has {list(results.columns)}")


def segment_table(results: pd.DataFrame, rubric: Rubric | None = None) -> pd.DataFrame:
    """One row per segment (first-appearance order), its samples collapsed as the module docstring says.

    Columns: ``segment_id``; the per-segment constants present in ``results`` (``turn_id``, ``region``,
    ``question``, trajectory facts, ``judge_id``, ``rubric_id``, ...); ``n_samples`` (results rows),
    ``n_judged`` (judged samples), ``n_failed`` (unjudged samples), ``status`` (``judged`` when
    ``n_judged >= 1``; ``unscorable`` when no sample is judged and one could not be scored; else
    ``unjudged``), ``error`` (an unjudged segment's reason: its first sample's error; an unscorable
    segment's: the scorer's reason); the four
    dimensions and ``raw_score``/``score`` as means over the judged samples; ``score_sd``, ``score_min``,
    ``score_max``, ``score_range``; ``band`` (of the mean score), ``band_varies``; ``judge_verdict``
    (modal), ``verdict_matches_band``, ``verdict_agreement`` (share of samples); ``caps_applied`` (the
    caps that lowered the score in at least one judged sample); ``notes`` and ``sample_index`` of the
    segment's lowest-scoring judged sample (its first sample when unjudged), the one shown as its
    example.

    ``rubric`` gives the band edges for the mean of several samples (default: the packaged default
    rubric); with one judged sample the stored band is kept.
    """
    _require(results, ["segment_id", "status", "score", "band"])
    edges = (rubric if rubric is not None else Rubric.default()).bands
    frame = results.reset_index(drop=True)
    status = frame["status"].astype("string")
    is_judged = (status == JUDGED).fillna(False).to_numpy(dtype=bool)
    scores = pd.to_numeric(frame["score"], errors="coerce")
    seg = frame["segment_id"]
    unscorable_row, unscorable_reason = _unscorable_rows(frame, is_judged, scores)
    is_judged = is_judged & ~unscorable_row

    # The example sample of each segment: lowest judged score first, then input order.
    order_key = pd.DataFrame({"seg": seg, "unjudged": ~is_judged, "score": scores.fillna(np.inf),
                              "pos": np.arange(len(frame))})
    example_pos = (order_key.sort_values(["unjudged", "score", "pos"], kind="stable")
                   .drop_duplicates("seg")["pos"])
    first_pos = order_key.drop_duplicates("seg")["pos"]
    first = frame.iloc[first_pos.to_numpy()].set_index("segment_id")
    example = frame.iloc[example_pos.to_numpy()].set_index("segment_id").reindex(first.index)

    out = pd.DataFrame(index=first.index)
    for c in _SEGMENT_CONSTANTS:
        if c in frame.columns:
            out[c] = first[c]
    n_samples = seg.value_counts(sort=False).reindex(first.index)
    j = frame.loc[is_judged]
    gj = j.groupby("segment_id", sort=False)
    n_judged = gj.size().reindex(first.index, fill_value=0).astype("int64")
    out["n_samples"] = n_samples.astype("int64")
    out["n_judged"] = n_judged
    out["n_failed"] = out["n_samples"] - out["n_judged"]
    # A segment is unscorable when none of its samples is judged and one of them could not be scored.
    n_unscorable = (pd.Series(unscorable_row, index=frame.index).groupby(seg, sort=False).sum()
                    .reindex(first.index, fill_value=0).to_numpy())
    out["status"] = np.where(n_judged.to_numpy() > 0, JUDGED, np.where(n_unscorable > 0, UNSCORABLE, UNJUDGED))
    error = first["error"] if "error" in first.columns else pd.Series(None, index=first.index, dtype=object)
    first_reason = (unscorable_reason[unscorable_row].groupby(seg[unscorable_row], sort=False).first()
                    .reindex(first.index))
    error = error.astype(object).where(out["status"] != UNSCORABLE, first_reason.astype(object))
    out["error"] = error.where(out["status"] != JUDGED, None).astype(object)

    value_cols = [c for c in (*DIMENSIONS, "raw_score", "score") if c in frame.columns]
    numeric = j[["segment_id"]].assign(**{c: pd.to_numeric(j[c], errors="coerce") for c in value_cols})
    means = numeric.groupby("segment_id", sort=False)[value_cols].mean().reindex(first.index)
    for c in value_cols:
        out[c] = means[c].astype("float64")
    js = numeric.groupby("segment_id", sort=False)["score"]
    out["score_sd"] = js.std(ddof=1).reindex(first.index).astype("float64")
    out["score_min"] = js.min().reindex(first.index).astype("float64")
    out["score_max"] = js.max().reindex(first.index).astype("float64")
    out["score_range"] = out["score_max"] - out["score_min"]

    stored_band = example["band"].astype(object)
    mean_rounded = round_tenths(out["score"].to_numpy(dtype=np.float64))
    computed = np.where(mean_rounded >= edges.good, "good", np.where(mean_rounded >= edges.partial, "partial", "poor"))
    out["band"] = np.where(n_judged.to_numpy() == 1, stored_band.to_numpy(),
                           np.where(n_judged.to_numpy() > 1, computed, None))
    out["band"] = out["band"].astype(object).where(out["status"] == JUDGED, None)
    out["band_varies"] = (gj["band"].nunique(dropna=True).reindex(first.index, fill_value=0) > 1).astype(bool)

    if "judge_verdict" in frame.columns and len(j):
        out["judge_verdict"] = _modal_verdicts(j["segment_id"], j["judge_verdict"], first.index)
        verdicts = j["judge_verdict"].astype("string")
        agrees = (verdicts == j["band"].astype("string")).fillna(False).astype(float)
        out["verdict_agreement"] = (agrees.groupby(j["segment_id"], sort=False).mean()
                                    .reindex(first.index).astype("float64"))
    else:
        out["judge_verdict"] = None
        out["verdict_agreement"] = np.nan
    matches = pd.Series(pd.NA, index=first.index, dtype="boolean")
    known = out["judge_verdict"].notna() & out["band"].notna()
    matches[known] = (out.loc[known, "judge_verdict"] == out.loc[known, "band"]).to_numpy()
    out["verdict_matches_band"] = matches

    if "caps_applied" in frame.columns:
        single = n_samples.to_numpy() == 1
        caps = example["caps_applied"].where(out["status"] == JUDGED, "").astype(object)
        if not single.all():
            unions = gj["caps_applied"].agg(_union_caps).reindex(first.index)
            caps = caps.where(single, unions.fillna(""))
        out["caps_applied"] = caps.fillna("")
    for c in ("notes", "explanation", "sample_index"):
        if c in frame.columns:
            out[c] = example[c]
    return out.reset_index()


def _modal_verdicts(segment_ids: pd.Series, verdicts: pd.Series, index: pd.Index) -> pd.Series:
    """Per segment of ``index``: the most frequent verdict (ties -> the worse band; ``None`` when the
    segment has no verdict). Vectorised: one count matrix of segments x bands."""
    seg_code = index.get_indexer(segment_ids)
    band_code = pd.Categorical(verdicts.astype(object), categories=list(_WORST_FIRST)).codes
    keep = (seg_code >= 0) & (band_code >= 0)
    counts = np.zeros((len(index), len(_WORST_FIRST)), dtype=np.int64)
    np.add.at(counts, (seg_code[keep], band_code[keep]), 1)
    modal = np.array(_WORST_FIRST, dtype=object)[counts.argmax(axis=1)]  # argmax: first max = worst
    modal[counts.sum(axis=1) == 0] = None
    return pd.Series(modal, index=index, dtype=object)


def _segments(results: pd.DataFrame, rubric: Rubric | None) -> pd.DataFrame:
    return segment_table(results, rubric) if len(results) else segment_table(results.iloc[:0], rubric)


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


def verdict_agreement(results: pd.DataFrame, *, rubric: Rubric | None = None) -> float:
    """Share of judged segments whose (modal) judge verdict equals the band of their (mean) score
    (NaN when none are judged)."""
    j = judged(_segments(results, rubric))
    known = j.loc[j["judge_verdict"].notna()] if "judge_verdict" in j.columns else j.iloc[:0]
    if known.empty:
        return float("nan")
    return float((known["judge_verdict"].astype("string") == known["band"].astype("string")).mean())


# -- the cross-check: the judge's verdict worse than the band -------------------------------------------
#: A band's rank, best first: a verdict of a higher rank than the segment's band is worse than the band.
BAND_RANK: dict[str, int] = {b: i for i, b in enumerate(BANDS)}
#: The columns of :func:`verdict_conflicts` before the per-candidate ones.
CONFLICT_COLUMNS: tuple[str, ...] = ("segment_id", "turn_id", "score", "band", "judge_verdict", "conflict",
                                     *DIMENSIONS, "caps_applied", "moved_by")


def candidate_rubrics(exclude: Iterable[str] = ()) -> list[Rubric]:
    """Every packaged rubric (:func:`axon_eval.rubric.packaged_names`) whose id is not in ``exclude``
    (the rubric ids the results were scored under), in name order."""
    from .rubric import packaged_names

    skip = set(exclude)
    rubrics = [Rubric.packaged(name) for name in packaged_names()]
    return [r for r in rubrics if r.id not in skip]


def describe_candidate(candidate: Rubric, base: Rubric | None = None) -> str:
    """What ``candidate`` changes against ``base`` (default ``axon-v1``), in words: each subscore cap it
    adds (``"answer_faithfulness <= 3 caps the score at 49"``), other weights, caps, band edges or row
    horizon; ``"the same numbers"`` when nothing differs."""
    base = base if base is not None else Rubric.default()
    known = [c.canonical() for c in base.subscore_caps]
    parts = [f"{c.dimension} <= {c.at_or_below:g} caps the score at {c.cap:g}" for c in candidate.subscore_caps
             if c.canonical() not in known]
    if len(candidate.subscore_caps) < len(base.subscore_caps):
        parts.append("fewer subscore caps")
    for what, a, b in (("weights", candidate.weights, base.weights), ("trajectory caps", candidate.caps, base.caps),
                       ("band edges", candidate.bands, base.bands), ("row horizon", candidate.row_horizon,
                                                                     base.row_horizon)):
        if a != b:
            parts.append(f"other {what}")
    return "; ".join(parts) or "the same numbers"


def _rescored_segments(rows: pd.DataFrame, candidate: Rubric) -> pd.DataFrame:
    """Per segment of the judged ``rows``: the mean of its samples' scores under ``candidate`` (each sample's
    stored subscores and trajectory facts scored by :func:`~axon_eval.scoring.score_arrays`, the vectorised
    kernel of :func:`~axon_eval.scoring.score_turn`: the same arithmetic, caps and rounding) and the band of
    that mean (rounded to 0.1, the candidate's edges): columns ``score`` and ``band``, indexed by segment
    id. A sample the candidate cannot score is left out."""
    from .scoring import score_arrays

    subs = np.column_stack([pd.to_numeric(rows[d], errors="coerce").to_numpy(dtype=np.float64)
                            if d in rows.columns else np.full(len(rows), np.nan) for d in DIMENSIONS]) \
        if len(rows) else np.empty((0, len(DIMENSIONS)))
    facts = np.column_stack([rows[f].fillna(False).astype(bool).to_numpy() if f in rows.columns
                             else np.zeros(len(rows), dtype=bool) for f in CAP_FACTS]) \
        if len(rows) else np.empty((0, len(CAP_FACTS)), dtype=bool)
    _raw, scores, _code = score_arrays(subs, facts, candidate)
    mean = pd.Series(scores, index=rows.index, dtype="float64").groupby(rows["segment_id"], sort=False).mean()
    rounded = round_tenths(mean.to_numpy(dtype=np.float64))
    bands = [None if math.isnan(x) else candidate.band(float(x)) for x in rounded]
    return pd.DataFrame({"score": rounded, "band": bands}, index=mean.index)


def _conflicts_of(results: pd.DataFrame, segments: pd.DataFrame, candidates: Sequence[Rubric]) -> pd.DataFrame:
    j = judged(segments)
    if "judge_verdict" not in j.columns:
        j = j.assign(judge_verdict=None)
    verdict_rank = j["judge_verdict"].map(BAND_RANK)
    band_rank = j["band"].map(BAND_RANK)
    worse = j.loc[(verdict_rank > band_rank).fillna(False).astype(bool)].copy()
    worse["conflict"] = [f"{b} band, verdict {v}" for b, v in zip(worse["band"], worse["judge_verdict"], strict=True)]
    for c in CONFLICT_COLUMNS:
        if c not in worse.columns:
            worse[c] = None if c != "moved_by" else ""
    status = results["status"].astype("string") if len(results) else pd.Series(dtype="string")
    rows = results.loc[(status == JUDGED).fillna(False).to_numpy(dtype=bool)
                       & results["segment_id"].isin(set(worse["segment_id"])).to_numpy()]
    moved: dict[str, list[str]] = {sid: [] for sid in worse["segment_id"]}
    extra = []
    for candidate in candidates:
        rescored = _rescored_segments(rows, candidate).reindex(worse["segment_id"])
        worse[f"score {candidate.name}"] = rescored["score"].to_numpy()
        worse[f"band {candidate.name}"] = rescored["band"].to_numpy()
        extra += [f"score {candidate.name}", f"band {candidate.name}"]
        lower = rescored["band"].map(BAND_RANK) > worse.set_index("segment_id")["band"].map(BAND_RANK)
        for sid in lower.index[lower.fillna(False).astype(bool)]:
            moved[sid].append(candidate.name)
    worse["moved_by"] = [";".join(moved[sid]) for sid in worse["segment_id"]]
    return worse.loc[:, [*CONFLICT_COLUMNS, *extra]].reset_index(drop=True)


def verdict_conflicts(results: pd.DataFrame, rubric: Rubric | None = None,
                      candidates: Sequence[Rubric] | None = None) -> pd.DataFrame:
    """The cross-check of a run: every judged segment whose judge verdict is **worse than its band** (a
    good band with the verdict partial or poor, a partial band with the verdict poor), one row each, in
    results order.

    The rubric decides the band (``axon-v1`` is compensatory: a sound trajectory can carry a wrong answer
    to good); the judge's own verdict is the cross-check on that composite. For each segment listed, its
    judged samples are rescored under every candidate rubric (default :func:`candidate_rubrics`: the
    packaged rubrics other than the results' own) exactly as :func:`~axon_eval.scoring.score_turn` scores
    them (their stored subscores and trajectory facts through the scorer's kernel), and the segment gets
    the band of the mean over its samples by the candidate's edges.

    Columns :data:`CONFLICT_COLUMNS` (``conflict`` reads ``"good band, verdict partial"``; ``moved_by``
    names, ``;``-joined in candidate order, the candidates whose band for the segment is worse than its
    band now, empty when none does), then ``score <name>`` and ``band <name>`` per candidate. Pure: reads
    nothing but its arguments and the packaged rubrics.
    """
    _require(results, ["segment_id", "status", "score", "band"])
    if candidates is None:
        candidates = candidate_rubrics(_ids(results, "rubric_id"))
    return _conflicts_of(results, _segments(results, rubric), list(candidates))


def cross_check(results: pd.DataFrame, rubric: Rubric | None = None, candidates: Sequence[Rubric] | None = None,
                *, segments: pd.DataFrame | None = None) -> dict[str, Any]:
    """:func:`verdict_conflicts` as a plain (JSON-serialisable) dict, what the CLI summary and the report's
    first page print: ``count`` (segments whose verdict is worse than their band), ``of`` (judged segments
    with a verdict), ``by_kind`` (``{"good band, verdict partial": n, ...}``, every kind listed),
    ``candidates`` (per candidate rubric, in order: ``name``, ``id``, ``change`` (:func:`describe_candidate`
    against the scoring rubric), ``moves``: how many of the listed segments it moves to a worse band),
    ``not_moved`` (listed segments no candidate moves), ``rubric`` (the name of the rubric that scored the
    results, else their rubric ids) and
    ``items`` (every listed segment: ``segment_id``, ``score``, ``band``, ``judge_verdict``, ``conflict``,
    ``moved_by`` (names) and ``under``: per candidate its ``score`` and ``band``). ``segments``: the
    results' :func:`segment_table`, when the caller has it."""
    rubric_ids = _ids(results, "rubric_id")
    if candidates is None:
        candidates = candidate_rubrics(rubric_ids)
    candidates = list(candidates)
    segs = segments if segments is not None else _segments(results, rubric)
    table = _conflicts_of(results, segs, candidates)
    j = judged(segs)
    with_verdict = int(j["judge_verdict"].notna().sum()) if "judge_verdict" in j.columns else 0
    kinds = [f"{b} band, verdict {v}" for b in BANDS for v in BANDS if BAND_RANK[v] > BAND_RANK[b]]
    base = rubric if rubric is not None else Rubric.default()
    moved = [set(filter(None, str(m).split(";"))) for m in table["moved_by"]]
    items = []
    for r, names in zip(table.to_dict("records"), moved, strict=True):
        items.append({"segment_id": str(r["segment_id"]), "score": _clean(r["score"]), "band": r["band"],
                      "judge_verdict": r["judge_verdict"], "conflict": r["conflict"],
                      "moved_by": [c.name for c in candidates if c.name in names],
                      "under": {c.name: {"score": _clean(r[f"score {c.name}"]), "band": _clean(r[f"band {c.name}"])}
                                for c in candidates}})
    return {
        "count": len(table), "of": with_verdict,
        "by_kind": {k: int((table["conflict"] == k).sum()) for k in kinds},
        "candidates": [{"name": c.name, "id": c.id, "change": describe_candidate(c, base),
                        "moves": sum(c.name in names for names in moved)} for c in candidates],
        "not_moved": sum(not names for names in moved),
        "rubric": base.name if base.id in rubric_ids or not rubric_ids else ", ".join(rubric_ids),
        "items": items,
    }


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


def _clean(value: Any) -> Any:
    if value is None or value is pd.NA:
        return None
    if isinstance(value, float | np.floating) and math.isnan(value):
        return None
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    return value


def _stats(values: pd.Series) -> dict[str, Any]:
    return {"mean": _clean(values.mean()), "median": _clean(values.median()),
            "min": _clean(values.min()), "max": _clean(values.max())}


def summarise(results: pd.DataFrame, *, invalid: Iterable[Any] = (), rubric: Rubric | None = None,
              allow_mixed: bool = False, top: float = 100.0) -> dict[str, Any]:
    """Headline summary of a results frame as a plain (JSON-serialisable) dict, counting segments.

    Keys (a *segment* is one evaluated question; a *sample* one results row of it):

    ``segments``            distinct segment ids
    ``rows``                results rows (one per segment and judge sample)
    ``samples_per_segment`` ``{"min", "max", "mean"}`` results rows per segment
    ``repeated``            True when some segment has several samples (scores are then per-segment means)
    ``judged`` / ``unjudged`` segments with at least one / no judged sample (``unjudged`` excludes the
                            unscorable)
    ``unscorable``          segments the rubric cannot score (never banded; see the module docstring)
    ``failed_samples``      unjudged samples of judged segments (left out of their segment's mean)
    ``invalid``             invalid input lines (distinct lines: one line may have several problems)
    ``invalid_problems``    invalid input line records (one per problem found)
    ``band_counts`` / ``band_shares``  segments per band of the (mean) score; shares of the judged segments
    ``band_varies``         ``{"count", "share", "of"}``: segments whose judged samples' bands differ, of
                            the ``of`` segments with two or more judged samples (share ``None`` when none)
    ``score``               mean / median / min / max of the segments' (mean) scores
    ``spread``              within-segment spread over segments with two or more judged samples:
                            ``sd_mean``, ``sd_median``, ``sd_max`` (sample SD of a segment's scores),
                            ``range_mean``, ``range_max``; ``None`` without such segments
    ``n_top``               judged segments whose (mean) score equals ``top``
    ``lowest``              the lowest segment: id, score, reason
    ``verdict_agreement``   share of judged segments whose modal verdict equals their band
    ``verdict_agreement_samples``  mean over judged segments of the share of their samples whose
                            verdict equals their own band
    ``cross_check``         the segments whose judge verdict is worse than their band, with the packaged
                            candidate rubric that moves each down (:func:`cross_check`)
    ``band_edges``          ``{"good", "partial", "rubric"}`` edges used for the band of a mean
    ``judge_ids``, ``rubric_ids``, ``simulated`` (a simulated judge), ``mixed`` (a warning or ``None``),
    ``notes``               caveats in words (e.g. band edges taken from another rubric than the results')
    ``unjudged_items``      every unjudged segment with its reason
    ``unscorable_items``    every unscorable segment with the scorer's reason
    ``failed_sample_items`` every failed sample of a judged segment with its reason
    ``invalid_items``       every invalid input line with its reason

    ``rubric`` supplies the band edges for the mean of several samples (default: the packaged default
    rubric). Raises :class:`MixedResultsError` when judge ids or rubric ids differ, unless
    ``allow_mixed``.
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


def _share(value: float | None, digits: int = 0) -> str:
    return "" if value is None else f" ({value:.{digits}%})"


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
        line = f"judge verdict equals band on {summary['verdict_agreement']:.0%} of judged segments"
        if summary.get("repeated") and summary.get("verdict_agreement_samples") is not None:
            line += (f" (modal verdict vs band of the mean; per sample, on average "
                     f"{summary['verdict_agreement_samples']:.0%} of a segment's samples)")
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


def _under_text(item: Mapping[str, Any], name: str) -> str:
    under = (item.get("under") or {}).get(name) or {}
    score = under.get("score")
    return f"{name}: {under.get('band')}" + ("" if score is None else f" ({score:.1f})")


def cross_check_lines(check: Mapping[str, Any] | None, *, shown: int | None = None) -> list[str]:
    """The cross-check of :func:`cross_check` as text: one loud line with the count (``CROSS-CHECK: ...``)
    and its kinds, one line per listed segment (the first ``shown`` of its items; ``None``: every item
    given) naming the candidate rubric that moves it down, ``and N more`` with where they are listed (the
    check's ``listed_in``) when fewer items are given than counted, and one line per candidate with how
    many it moves. One quiet line when no verdict is worse than its band; nothing without a cross-check."""
    if not check:
        return []
    if not check["count"]:
        return [f"cross-check: the judge's verdict is nowhere worse than the band ({check['of']} judged segments "
                "with a verdict)"]
    kinds = ", ".join(f"{k} {n}" for k, n in check["by_kind"].items() if n)
    lines = [f"CROSS-CHECK: the judge's verdict is WORSE than the band on {check['count']} of {check['of']} judged "
             f"segments ({kinds}): rubric {check.get('rubric') or '-'} scores them above the judge's own verdict"]
    items = list(check.get("items") or [])
    items = items if shown is None else items[:shown]
    for item in items:
        names = item.get("moved_by") or []
        moved = ("; ".join(_under_text(item, n) for n in names) if names
                 else "no packaged candidate rubric moves it")
        lines.append(f"  {item['segment_id']}: score {item['score']:.1f}, band {item['band']}, judge verdict "
                     f"{item['judge_verdict']} -> {moved}")
    if len(items) < check["count"]:
        rest = f"and {check['count'] - len(items)} more" if items else "every one"
        lines.append(f"  {rest}: listed in {check.get('listed_in') or 'the results (judge_verdict against band)'}")
    for c in check.get("candidates") or []:
        lines.append(f"  candidate rubric {c['name']} ({c['change']}) moves {c['moves']} of the {check['count']} "
                     f"to a worse band")
    if check.get("not_moved"):
        lines.append(f"  {check['not_moved']} of the {check['count']} moved by no packaged candidate rubric")
    return lines


def label_range_check(results: pd.DataFrame, labels: pd.DataFrame) -> pd.DataFrame:
    """Per labelled, judged segment: is each subscore inside the label's ``<dim>_min``..``<dim>_max``
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
