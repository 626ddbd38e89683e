"""Judge noise: within-segment spread of repeated judgements, per segment and pooled.

Within-segment SD (points)
    per segment ``s_i = sqrt(sum_j (x_ij - m_i)^2 / (k_i - 1))``; pooled
    ``s_w = sqrt(sum_i (k_i - 1) s_i^2 / sum_i (k_i - 1))`` over segments with ``k_i >= 2`` judged
    samples (with equal ``k_i`` this is ``sqrt(mean_i s_i^2)`` and equals ``sqrt(MS_W)`` below).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from ...rubric import BANDS, DIMENSIONS, Rubric
from .common import NOISE_COLUMNS, SampleMatrix, _band_codes, _check_table, pivot_samples


# =============================================================================================
# Within-segment SD
# =============================================================================================
def _anchor(matrix: np.ndarray) -> np.ndarray:
    """Each segment's first present value (0 when none): subtracting it first makes the deviations of
    identical judgements exactly 0 (61.3 three times has a float mean that is not exactly 61.3)."""
    present = ~np.isnan(matrix)
    first = np.argmax(present, axis=1)
    anchor = matrix[np.arange(len(matrix)), first] if matrix.size else np.zeros(len(matrix))
    return np.where(present.any(axis=1), anchor, 0.0)


def _within_stats(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per segment: number of present values, mean, and sum of squared deviations (NaN-aware)."""
    present = ~np.isnan(matrix)
    count = present.sum(axis=1)
    anchor = _anchor(matrix)
    shifted = np.where(present, matrix - anchor[:, None], 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        shifted_mean = shifted.sum(axis=1) / count
    dev = np.where(present, shifted - shifted_mean[:, None], 0.0)
    return count, anchor + shifted_mean, (dev * dev).sum(axis=1)


def _pooled_sd(matrix: np.ndarray) -> tuple[float, int]:
    """Pooled within-segment SD (df-weighted) and the number of segments with >= 2 values."""
    count, _mean, ss = _within_stats(matrix)
    usable = count >= 2
    df = (count[usable] - 1).sum()
    return (math.sqrt(ss[usable].sum() / df) if df > 0 else float("nan")), int(usable.sum())


def within_segment_sd(samples_df: pd.DataFrame, columns: Sequence[str] = NOISE_COLUMNS,
                      rater: str | None = None) -> pd.DataFrame:
    """Pooled within-segment SD per column (points: 0-10 for a dimension, 0-100 for the score).

    One row per column: ``column``, ``sd_pooled``, ``n_segments`` (segments with >= 2 judged values),
    ``mean_samples`` (mean judged values per such segment). Formula in the module docstring.
    """
    return _within_table(pivot_samples(samples_df, columns, rater), columns)


def _within_table(sm: SampleMatrix, columns: Sequence[str]) -> pd.DataFrame:
    rows = []
    for column in columns:
        count, _mean, _ss = _within_stats(sm.values[column])
        sd, n_used = _pooled_sd(sm.values[column])
        rows.append({"column": column, "sd_pooled": sd, "n_segments": n_used,
                     "mean_samples": float(count[count >= 2].mean()) if n_used else float("nan")})
    return pd.DataFrame(rows)


def segment_noise(samples_df: pd.DataFrame, rubric: Rubric | None = None, rater: str | None = None) -> pd.DataFrame:
    """One row per segment: judged samples, mean and SD of each dimension and of the score, bands.

    Columns: ``segment_id``, ``n_judged``, ``mean_<column>`` and ``sd_<column>`` for each of
    :data:`NOISE_COLUMNS` (SD NaN below 2 values), ``bands`` (the distinct bands seen, best first,
    joined by ``/``), ``flipped`` (more than one band), ``pairwise_flip`` (chance two samples differ in
    band), ``nearest_edge`` and ``distance_to_edge`` (points from the mean score to the nearest band
    edge).
    """
    rubric = Rubric.default() if rubric is None else rubric
    _check_table(samples_df, rubric)
    return _segment_table(pivot_samples(samples_df, _present(samples_df), rater), rubric)


def _present(samples_df: pd.DataFrame, extra: Sequence[str] = ()) -> list[str]:
    """``score`` plus whichever dimensions (and ``extra`` columns) the table has; ``score`` is required."""
    return ["score", *[c for c in (*DIMENSIONS, *extra) if c in samples_df.columns]]


def _segment_table(sm: SampleMatrix, rubric: Rubric) -> pd.DataFrame:
    out: dict[str, Any] = {"segment_id": sm.segment_ids}
    for column in [c for c in NOISE_COLUMNS if c in sm.values]:
        count, mean, ss = _within_stats(sm.values[column])
        with np.errstate(invalid="ignore", divide="ignore"):
            out[f"mean_{column}"] = mean
            out[f"sd_{column}"] = np.where(count >= 2, np.sqrt(ss / (count - 1)), np.nan)
        if column == "score":
            out["n_judged"] = count
    flips = _flip_stats(sm.values["score"], rubric)
    names = np.asarray(BANDS, dtype=object)
    out["bands"] = ["/".join(names[flips["counts"][i] > 0]) for i in range(sm.n_segments)]
    out["flipped"] = flips["flipped"]
    out["pairwise_flip"] = flips["pairwise"]
    nearest, distance = _edge_distance(out["mean_score"], rubric)
    out["nearest_edge"] = nearest
    out["distance_to_edge"] = distance
    frame = pd.DataFrame(out)
    first = ["segment_id", "n_judged"]
    return frame[first + [c for c in frame.columns if c not in first]]


def _flip_stats(score: np.ndarray, rubric: Rubric) -> dict[str, np.ndarray]:
    """Per segment band counts (n, 3), judged count, flipped (bool; NaN-free only where >= 2 judged)
    and pairwise flip probability (NaN below 2 judged)."""
    codes = _band_codes(score, rubric)
    counts = np.stack([(codes == b).sum(axis=1) for b in range(len(BANDS))], axis=1)
    judged = counts.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        same = (counts * (counts - 1)).sum(axis=1) / (judged * (judged - 1))
    pairwise = np.where(judged >= 2, 1.0 - same, np.nan)
    flipped = (counts > 0).sum(axis=1) > 1
    return {"counts": counts, "judged": judged, "flipped": flipped, "pairwise": pairwise}


def _edge_distance(mean_score: np.ndarray, rubric: Rubric) -> tuple[np.ndarray, np.ndarray]:
    edges = np.array([rubric.bands.good, rubric.bands.partial], dtype=np.float64)
    gaps = np.abs(np.asarray(mean_score, dtype=np.float64)[:, None] - edges[None, :])
    pick = np.argmin(np.where(np.isnan(gaps), np.inf, gaps), axis=1)
    distance = gaps[np.arange(len(gaps)), pick]
    return np.where(np.isnan(distance), np.nan, edges[pick]), distance
