"""One row per segment: a results frame's samples collapsed, and the statuses a row or segment can have.

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

The band of a segment's mean score is that mean rounded to 0.1 by the scorer's own rule
(:func:`~axon_eval.scoring.round_tenths`: the exact decimal value, half away from zero).

Results of several judges or rubrics are refused by :func:`check_homogeneous` (:class:`MixedResultsError`)
unless ``allow_mixed=True``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..rubric import BANDS, CAP_FACTS, DIMENSIONS, Rubric
from ..scoring import UNSCORABLE_PREFIX, round_tenths


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


def verdict_agreement(results: pd.DataFrame, *, rubric: Rubric | None = None) -> float:
    """Share of judged segments whose (modal) judge verdict equals the band of their (mean) score
    (NaN when none are judged)."""
    j = judged(_segments(results, rubric))
    known = j.loc[j["judge_verdict"].notna()] if "judge_verdict" in j.columns else j.iloc[:0]
    if known.empty:
        return float("nan")
    return float((known["judge_verdict"].astype("string") == known["band"].astype("string")).mean())


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
