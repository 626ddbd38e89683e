"""Judge noise under repeat sampling, and when ensembling a judge pays (study 03).

Pure functions of a *tidy samples table*: one row per ``(segment_id, sample_index)`` judgement of the
same fixed evidence, with the four dimension columns ``intent_understood``, ``sql_quality``,
``result_relevance``, ``answer_faithfulness`` (NaN = null), ``score`` and ``band`` (NaN score = an
unjudged sample), and optionally ``cost_usd``, ``input_tokens``, ``output_tokens``,
``cache_read_tokens``, the cap facts ``all_sql_failed``, ``ended_on_failure``, ``no_tools``,
``judge_id`` and ``rubric_id``. A cross-judge ensemble is the same table with a ``member`` column (one
row per ``(segment_id, member)``, see :func:`members_frame`); every function takes ``rater=`` to name
the column that indexes the repeated judgements and picks ``member`` when present, else
``sample_index``. What is measured is judge-only noise: the evidence of a segment is fixed, so all the
variation between its samples is the judge's. Counts are of segments, never of samples.

Notation: ``x_ij`` is judgement ``j = 1..k`` of segment ``i = 1..n`` (one dimension, or the score);
``m_i`` the segment mean, ``g`` the grand mean.

Within-segment SD (points)
    per segment ``s_i = sqrt(sum_j (x_ij - m_i)^2 / (k_i - 1))``; pooled
    ``s_w = sqrt(sum_i (k_i - 1) s_i^2 / sum_i (k_i - 1))`` over segments with ``k_i >= 2`` judged
    samples (with equal ``k_i`` this is ``sqrt(mean_i s_i^2)`` and equals ``sqrt(MS_W)`` below).

ICC, one-way random effects (Shrout & Fleiss 1979, case 1; McGraw & Wong 1996, ICC(1) / ICC(k))
    Samples of one judge are exchangeable, so the model is ``x_ij = mu + a_i + e_ij``. With
    ``MS_B = k sum_i (m_i - g)^2 / (n - 1)`` and ``MS_W = sum_ij (x_ij - m_i)^2 / (n (k - 1))``::

        ICC(1,1) = (MS_B - MS_W) / (MS_B + (k - 1) MS_W)     reliability of one sample
        ICC(1,k) = (MS_B - MS_W) / MS_B                      reliability of the mean of k samples
        F = MS_B / MS_W  on  (n - 1, n (k - 1)) degrees of freedom
        F_L = F / F_{1-a/2}(n - 1, n(k - 1)),   F_U = F * F_{1-a/2}(n(k - 1), n - 1)
        ICC(1,1) CI = [(F_L - 1) / (F_L + k - 1), (F_U - 1) / (F_U + k - 1)]
        ICC(1,k) CI = [1 - 1 / F_L, 1 - 1 / F_U]

    computed on the segments with all ``k`` judgements present for that column (a null
    ``answer_faithfulness`` leaves the segment out of that dimension only). ICC can be negative when
    segments differ less than samples do. Values 0-1 read as the share of a single judgement's variance
    that is real difference between segments rather than judge noise.

Band instability
    A segment *flips* when its judged samples fall in more than one band (edges from the rubric:
    good >= 80, partial >= 50 by default); ``band_flip_rate`` is the share of segments (with >= 2 judged
    samples) that flip, and grows with ``k``. The ``k``-free companion is the pairwise flip
    probability, the chance that two samples of a segment disagree:
    ``1 - sum_b c_b (c_b - 1) / (k (k - 1))`` with ``c_b`` samples in band ``b``.
    The flip curve fits ``P(flip) = expit(b0 + b1 d)`` by maximum likelihood (statsmodels ``Logit``),
    ``d = min_e |m_i - e|`` the distance of the segment's mean score to the nearest band edge ``e``; the
    confidence band on a grid is pointwise, by the delta method on the logit scale:
    ``expit(eta +- z sqrt(x' V x))``.

Variance components (generalizability study; Brennan 2001, ch. 2-3)
    Two-way ANOVA of the complete ``n x k`` table without replication::

        MS_p = k sum_i (m_i - g)^2 / (n - 1)        MS_r = n sum_j (m_.j - g)^2 / (k - 1)
        MS_e = sum_ij (x_ij - m_i - m_.j + g)^2 / ((n - 1)(k - 1))
        var_e = MS_e,  var_p = (MS_p - MS_e) / k,  var_r = (MS_r - MS_e) / n    (negatives set to 0)

    Design, stated on every result: with one judge sampled ``k`` times (rater ``sample_index``) the
    samples are *nested in segments* (sample 3 of one segment has nothing in common with sample 3 of
    another), so the sample facet and the residual are confounded: ``var_r`` is reported as a check on
    position effects (it should be about 0) and the judge noise is ``var_r + var_e``. With a
    cross-judge ensemble (rater ``member``) members are *crossed* with segments and ``var_r`` is the
    members' systematic disagreement (one judge harsher than another).

Decision study (Brennan 2001, ch. 4; Spearman 1910, Brown 1910)
    The reliability of the mean of ``k'`` judgements: nested design and absolute (``Phi``) in both
    designs ``var_p / (var_p + (var_r + var_e) / k')``; relative (``E rho^2``, crossed design)
    ``var_p / (var_p + var_e / k')``. From ``rho = ICC(1,1)`` the Spearman-Brown form is
    ``rho_k = k rho / (1 + (k - 1) rho)`` and the samples needed for a target ``R`` are
    ``k = ceil(R (1 - rho) / (rho (1 - R)))``.

Ensembles of k judgements (bootstrap; Efron & Tibshirani 1993)
    For ``k = 1..n`` and each segment, ``B`` replicate ensembles draw ``k`` of the segment's ``n``
    judgements (repeat samples: with replacement, the bootstrap; cross-judge members: without
    replacement, i.e. random subsets of distinct members) from a seeded ``numpy.random.Generator``;
    the same draws serve every reducer. An ensemble's score is the rubric's score of the per-dimension
    mean (median) of its members' subscores, as :class:`~axon_eval.judges.wrappers.EnsembleJudge`
    does, when the table has the cap facts; otherwise the mean (median) of the members' scores.
    ``flip_rate`` is the chance that two independent ensembles of a segment land in different bands
    (the pairwise estimator above over the ``B`` replicates, averaged over segments); ``sd`` the
    pooled within-segment SD of the ensemble score. Resampling with replacement shrinks the variance
    of a k-mean by ``(n - 1) / n`` against fresh samples, so at small ``n`` the table is slightly
    optimistic. Cost of ``k``: ``k`` calls per segment and ``k`` times the mean tokens and dollars per
    judgement from the records; NaN (unknown) when any judgement's figure is missing, never 0.

References
    Shrout, P. E., & Fleiss, J. L. (1979). Intraclass correlations: uses in assessing rater
    reliability. Psychological Bulletin, 86(2), 420-428.
    McGraw, K. O., & Wong, S. P. (1996). Forming inferences about some intraclass correlation
    coefficients. Psychological Methods, 1(1), 30-46.
    Brennan, R. L. (2001). Generalizability Theory. Springer.
    Efron, B., & Tibshirani, R. J. (1993). An Introduction to the Bootstrap. Chapman & Hall.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as sps

from ..rubric import BANDS, CAP_FACTS, DIMENSIONS, Rubric
from ..scoring import score_arrays

#: The columns whose noise is measured: the four dimensions and the score.
NOISE_COLUMNS: tuple[str, ...] = (*DIMENSIONS, "score")
#: Optional per-judgement cost columns (NaN = unknown).
COST_COLUMNS: tuple[str, ...] = ("cost_usd", "input_tokens", "output_tokens", "cache_read_tokens")
#: Rater columns tried in order when ``rater=None``.
RATER_COLUMNS: tuple[str, ...] = ("member", "sample_index")
ENSEMBLE_REDUCERS: tuple[str, ...] = ("mean", "median")
STUDY_NAME = "03_judge_noise"
#: The exact keys of :meth:`JudgeNoiseSummary.to_json` (``study.json``), in order.
STUDY_KEYS: tuple[str, ...] = ("study", "judge_id", "simulated", "n_segments", "n_samples", "sd", "icc1",
                               "band_flip_rate", "ensemble", "recommended_k")
#: Markers of a simulated judge in a judge id (``simulate(...)`` and ``noise(...)`` wrappers).
SIMULATED_MARKERS: tuple[str, ...] = ("simulated(", "noise(")


# =============================================================================================
# The samples table as segment x rater matrices
# =============================================================================================
@dataclass(frozen=True, eq=False)
class SampleMatrix:
    """A tidy samples table pivoted to ``(n_segments, n_raters)`` float matrices (NaN = missing).

    ``values[column][i, j]`` is judgement ``j`` (``raters[j]``) of segment ``segment_ids[i]``.
    ``facts`` is ``(n_segments, 3)`` bool in ``CAP_FACTS`` order when the table has the fact columns.
    """

    segment_ids: np.ndarray
    raters: np.ndarray
    rater: str
    values: dict[str, np.ndarray]
    facts: np.ndarray | None

    @property
    def n_segments(self) -> int:
        return len(self.segment_ids)

    @property
    def n_raters(self) -> int:
        return len(self.raters)

    def complete(self, column: str) -> np.ndarray:
        """Bool mask of segments with every rater's value of ``column`` present."""
        return ~np.isnan(self.values[column]).any(axis=1)


def resolve_rater(samples_df: pd.DataFrame, rater: str | None = None) -> str:
    """The column indexing repeated judgements: ``rater`` if given, else ``member``, else ``sample_index``."""
    if rater is not None:
        if rater not in samples_df.columns:
            raise ValueError(f"rater column {rater!r} is not in the samples table; columns: {list(samples_df.columns)}")
        return rater
    for name in RATER_COLUMNS:
        if name in samples_df.columns:
            return name
    raise ValueError(f"the samples table needs a rater column, one of {list(RATER_COLUMNS)}; "
                     f"columns: {list(samples_df.columns)}")


def pivot_samples(samples_df: pd.DataFrame, columns: Sequence[str] = NOISE_COLUMNS, rater: str | None = None,
                  ) -> SampleMatrix:
    """Pivot a tidy samples table into :class:`SampleMatrix` (segments and raters sorted).

    Raises ``ValueError`` naming a missing column or the first duplicated ``(segment_id, rater)`` pair
    (a members table of a repeated ensemble must be cut to one sample index first).
    """
    rater = resolve_rater(samples_df, rater)
    missing = [c for c in ("segment_id", *columns) if c not in samples_df.columns]
    if missing:
        raise ValueError(f"the samples table lacks columns {missing}; columns: {list(samples_df.columns)}")
    seg_codes, seg_ids = pd.factorize(samples_df["segment_id"], sort=True)
    rat_codes, rat_ids = pd.factorize(samples_df[rater], sort=True)
    if (seg_codes < 0).any() or (rat_codes < 0).any():
        raise ValueError(f"segment_id and {rater} must not be null")
    n_seg, n_rat = len(seg_ids), len(rat_ids)
    flat = seg_codes.astype(np.int64) * n_rat + rat_codes
    if len(np.unique(flat)) != len(flat):
        dup = samples_df.loc[pd.Series(flat, index=samples_df.index).duplicated(), ["segment_id", rater]].iloc[0]
        seg, who = (v.item() if isinstance(v, np.generic) else v for v in (dup["segment_id"], dup[rater]))
        raise ValueError(f"the samples table holds ({seg!r}, {rater}={who!r}) more than once; "
                         f"one row per (segment_id, {rater}) is expected")
    values: dict[str, np.ndarray] = {}
    for column in columns:
        matrix = np.full(n_seg * n_rat, np.nan)
        matrix[flat] = pd.to_numeric(samples_df[column], errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
        values[column] = matrix.reshape(n_seg, n_rat)
    facts = None
    if all(f in samples_df.columns for f in CAP_FACTS):
        raw = samples_df.loc[:, list(CAP_FACTS)].to_numpy(dtype=bool, na_value=False)
        any_true = np.zeros((n_seg, len(CAP_FACTS)), dtype=bool)
        all_true = np.ones((n_seg, len(CAP_FACTS)), dtype=bool)
        np.logical_or.at(any_true, seg_codes, raw)
        np.logical_and.at(all_true, seg_codes, raw)
        varying = np.flatnonzero((any_true != all_true).any(axis=1))
        if varying.size:
            raise ValueError(f"cap facts differ between judgements of segment {seg_ids[varying[0]]!r}; "
                             "facts come from the evidence and must be constant per segment")
        facts = any_true
    return SampleMatrix(segment_ids=np.asarray(seg_ids), raters=np.asarray(rat_ids), rater=rater,
                        values=values, facts=facts)


def _band_codes(score: np.ndarray, rubric: Rubric) -> np.ndarray:
    """0 good, 1 partial, 2 poor (``BANDS`` order), -1 for NaN; the scorer's edges (score >= edge)."""
    code = np.where(score >= rubric.bands.good, 0, np.where(score >= rubric.bands.partial, 1, 2))
    return np.where(np.isnan(score), -1, code)


def _check_table(samples_df: pd.DataFrame, rubric: Rubric) -> None:
    """Refuse a table scored under another rubric, or whose band column disagrees with its scores."""
    if "rubric_id" in samples_df.columns:
        ids = sorted({str(v) for v in samples_df["rubric_id"].dropna().unique()})
        if ids and ids != [rubric.id]:
            raise ValueError(f"the samples table was scored with rubric id(s) {ids}, not {rubric.id!r}; "
                             "pass the run's rubric (or rescore the run)")
    if "band" in samples_df.columns:
        score = pd.to_numeric(samples_df["score"], errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
        judged = ~np.isnan(score)
        expected = np.asarray(BANDS, dtype=object)[_band_codes(score[judged], rubric)]
        given = samples_df["band"].astype(object).to_numpy()[judged]
        bad = np.flatnonzero(expected != given)
        if bad.size:
            first = samples_df.loc[judged].iloc[bad[0]]
            raise ValueError(f"band column disagrees with rubric {rubric.id!r} edges on {bad.size} row(s); first: "
                             f"segment {first['segment_id']!r} score {first['score']} band {first['band']!r}")


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


# =============================================================================================
# ICC(1,1) and ICC(1,k)
# =============================================================================================
@dataclass(frozen=True)
class OneWayIcc:
    """One-way random-effects ICCs of one column with their F-based confidence intervals.

    ``icc1`` = ICC(1,1) (one judgement), ``icc1k`` = ICC(1,k) (mean of ``k``); both dimensionless,
    at most 1 and possibly negative. ``n_segments`` counts the complete segments used.
    """

    column: str
    n_segments: int
    k: int
    ms_between: float
    ms_within: float
    f_stat: float
    df_between: int
    df_within: int
    p_value: float
    icc1: float
    icc1_ci_low: float
    icc1_ci_high: float
    icc1k: float
    icc1k_ci_low: float
    icc1k_ci_high: float
    confidence: float = 0.95
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def icc_oneway(values: np.ndarray, confidence: float = 0.95, column: str = "") -> OneWayIcc:
    """ICC(1,1) and ICC(1,k) of an ``(n_segments, k)`` array with no missing values (module docstring).

    Raises ``ValueError`` for NaN entries, fewer than 2 segments or fewer than 2 judgements each, or a
    confidence outside (0, 1). When every segment's judgements agree exactly (``MS_W = 0``) the ICCs
    are 1 with a degenerate interval [1, 1]; when nothing varies at all they are NaN.
    """
    x = np.asarray(values, dtype=np.float64)
    if x.ndim != 2:
        raise ValueError(f"values must be a 2-d (segments, judgements) array, got shape {x.shape}")
    n, k = x.shape
    if n < 2 or k < 2:
        raise ValueError(f"ICC needs >= 2 segments with >= 2 judgements each, got shape {x.shape}")
    if np.isnan(x).any():
        raise ValueError(f"values hold {int(np.isnan(x).sum())} NaN entries; pass complete segments only")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    # deviations from each segment's first judgement, so identical judgements give MS_W = 0 exactly
    d = x - x[:, :1]
    d_mean = d.mean(axis=1)
    seg_mean = x[:, 0] + d_mean
    df_b, df_w = n - 1, n * (k - 1)
    ms_b = k * float(((seg_mean - seg_mean.mean()) ** 2).sum()) / df_b
    ms_w = float(((d - d_mean[:, None]) ** 2).sum()) / df_w
    base = dict(column=column, n_segments=n, k=k, ms_between=ms_b, ms_within=ms_w, df_between=df_b,
                df_within=df_w, confidence=confidence)
    if ms_w == 0.0:
        if ms_b == 0.0:
            nan = float("nan")
            return OneWayIcc(**base, f_stat=nan, p_value=nan, icc1=nan, icc1_ci_low=nan, icc1_ci_high=nan,
                             icc1k=nan, icc1k_ci_low=nan, icc1k_ci_high=nan,
                             note="no variation at all: ICC undefined")
        return OneWayIcc(**base, f_stat=float("inf"), p_value=0.0, icc1=1.0, icc1_ci_low=1.0, icc1_ci_high=1.0,
                         icc1k=1.0, icc1k_ci_low=1.0, icc1k_ci_high=1.0,
                         note="judgements of every segment agree exactly: ICC = 1, interval degenerate")
    if ms_b == 0.0:
        # F = 0: ICC(1,1) takes its floor -1/(k-1) with a degenerate interval; ICC(1,k) = 1 - MS_W/MS_B
        # would be -inf, reported as undefined.
        floor = -1.0 / (k - 1)
        nan = float("nan")
        return OneWayIcc(**base, f_stat=0.0, p_value=1.0, icc1=floor, icc1_ci_low=floor, icc1_ci_high=floor,
                         icc1k=nan, icc1k_ci_low=nan, icc1k_ci_high=nan,
                         note="segment means are identical: ICC(1,1) at its floor, ICC(1,k) undefined")
    f = ms_b / ms_w
    q = 1 - (1 - confidence) / 2
    f_low = f / sps.f.ppf(q, df_b, df_w)
    f_high = f * sps.f.ppf(q, df_w, df_b)
    return OneWayIcc(
        **base, f_stat=f, p_value=float(sps.f.sf(f, df_b, df_w)),
        icc1=(ms_b - ms_w) / (ms_b + (k - 1) * ms_w),
        icc1_ci_low=float((f_low - 1) / (f_low + k - 1)), icc1_ci_high=float((f_high - 1) / (f_high + k - 1)),
        icc1k=(ms_b - ms_w) / ms_b,
        icc1k_ci_low=float(1 - 1 / f_low), icc1k_ci_high=float(1 - 1 / f_high),
    )


def icc_table(samples_df: pd.DataFrame, columns: Sequence[str] = NOISE_COLUMNS, rater: str | None = None,
              confidence: float = 0.95) -> pd.DataFrame:
    """:func:`icc_oneway` for each column over its complete segments; one row per column.

    A column with fewer than 2 complete segments (e.g. ``answer_faithfulness`` when no answer was
    captured anywhere) gets NaN values and a ``note``.
    """
    return _icc_frame(pivot_samples(samples_df, columns, rater), columns, confidence)


def _icc_frame(sm: SampleMatrix, columns: Sequence[str], confidence: float) -> pd.DataFrame:
    rows = []
    for column in columns:
        complete = sm.complete(column)
        try:
            rows.append(icc_oneway(sm.values[column][complete], confidence, column).to_dict())
        except ValueError as exc:
            rows.append({"column": column, "n_segments": int(complete.sum()), "k": sm.n_raters,
                         "confidence": confidence, "note": f"not estimable: {exc}"})
    return pd.DataFrame(rows, columns=list(OneWayIcc.__dataclass_fields__))


# =============================================================================================
# Decision study helpers
# =============================================================================================
def spearman_brown(reliability_1: float, k: float) -> float:
    """Reliability of the mean of ``k`` judgements from the single-judgement reliability ``rho``.

    ``rho_k = k rho / (1 + (k - 1) rho)`` (Spearman 1910; Brown 1910); ``k >= 1``.
    """
    if not k >= 1:
        raise ValueError(f"k must be >= 1, got {k!r}")
    return k * reliability_1 / (1 + (k - 1) * reliability_1)


def samples_for_reliability(reliability_1: float, target: float) -> int | None:
    """Smallest integer ``k`` with ``spearman_brown(rho, k) >= target``.

    ``k = ceil(target (1 - rho) / (rho (1 - target)))``; 1 when ``rho >= target``; ``None`` when no
    number of samples reaches it (``rho <= 0`` or NaN). ``target`` must be in (0, 1).
    """
    if not 0 < target < 1:
        raise ValueError(f"target reliability must be in (0, 1), got {target!r}")
    if not reliability_1 > 0:
        return None
    if reliability_1 >= target:
        return 1
    exact = target * (1 - reliability_1) / (reliability_1 * (1 - target))
    k = max(1, math.ceil(exact - 1e-9))  # guard against 3.0000000001 -> 4 from float error
    return k if spearman_brown(reliability_1, k) >= target - 1e-12 else k + 1


# =============================================================================================
# Variance components and the decision study
# =============================================================================================
@dataclass(frozen=True)
class VarianceComponents:
    """ANOVA estimates of the variance components of one column (points squared), with the design.

    ``facet`` is ``"sample"`` (one judge sampled repeatedly: nested in segments, confounded with the
    residual) or ``"member"`` (cross-judge ensemble: crossed with segments). ``truncated`` names
    components whose estimate was negative and set to 0.
    """

    column: str
    rater: str
    facet: str
    design: str
    n_segments: int
    k: int
    segment_var: float
    facet_var: float
    residual_var: float
    ms_segment: float
    ms_facet: float
    ms_residual: float
    truncated: tuple[str, ...] = ()

    @property
    def total_var(self) -> float:
        return self.segment_var + self.facet_var + self.residual_var

    @property
    def nested(self) -> bool:
        return self.facet == "sample"

    def shares(self) -> dict[str, float]:
        """Each component's share of the total (sums to 1; NaN when the total is 0)."""
        total = self.total_var
        parts = {"segment": self.segment_var, self.facet: self.facet_var, "residual": self.residual_var}
        return {name: (v / total if total > 0 else float("nan")) for name, v in parts.items()}

    def table(self) -> pd.DataFrame:
        """One row per component: ``component``, ``variance``, ``sd``, ``share``."""
        shares = self.shares()
        values = {"segment": self.segment_var, self.facet: self.facet_var, "residual": self.residual_var}
        return pd.DataFrame([{"component": name, "variance": v, "sd": math.sqrt(v), "share": shares[name]}
                             for name, v in values.items()])

    def reliability(self, k: int) -> tuple[float, float]:
        """D-study ``(E rho^2, Phi)`` for the mean of ``k`` judgements (module docstring)."""
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k!r}")
        p = self.segment_var
        absolute = self.facet_var + self.residual_var
        relative = absolute if self.nested else self.residual_var
        with np.errstate(invalid="ignore", divide="ignore"):
            g = p / (p + relative / k) if p + relative > 0 else float("nan")
            phi = p / (p + absolute / k) if p + absolute > 0 else float("nan")
        return float(g), float(phi)

    def to_dict(self) -> dict[str, Any]:
        data = {k: getattr(self, k) for k in self.__dataclass_fields__}
        data["truncated"] = list(self.truncated)
        data["shares"] = self.shares()
        return data


_DESIGNS = {
    "sample": ("samples nested in segments (one judge, repeated): the sample facet is not crossed, so "
               "sample and residual variance are confounded; the sample component is a check on position "
               "effects (expected about 0) and judge noise = sample + residual"),
    "member": ("members crossed with segments (cross-judge ensemble): the member component is the judges' "
               "systematic difference; residual = member x segment interaction confounded with error"),
}


def variance_components(samples_df: pd.DataFrame, column: str = "score", rater: str | None = None,
                        ) -> VarianceComponents:
    """Segment, facet and residual variance components of ``column`` over complete segments.

    Two-way ANOVA estimators (module docstring). Raises ``ValueError`` with fewer than 2 complete
    segments or fewer than 2 judgements per segment.
    """
    return _components(pivot_samples(samples_df, (column,), rater), column)


def _components(sm: SampleMatrix, column: str) -> VarianceComponents:
    x = sm.values[column][sm.complete(column)]
    n, k = x.shape
    if n < 2 or k < 2:
        raise ValueError(f"variance components of {column!r} need >= 2 complete segments with >= 2 judgements, "
                         f"got {n} x {k}")
    # with d_ij = x_ij - x_i1 (exact zeros for identical judgements): m_i - g and the residual
    # x_ij - m_i - m_.j + g = d_ij - d_i. - d_.j + d_.. are the same algebra with less rounding
    d = x - x[:, :1]
    row_mean = x[:, 0] + d.mean(axis=1)
    col_dev = d.mean(axis=0) - d.mean()
    ms_p = k * float(((row_mean - row_mean.mean()) ** 2).sum()) / (n - 1)
    ms_r = n * float((col_dev ** 2).sum()) / (k - 1)
    resid = d - d.mean(axis=1)[:, None] - col_dev[None, :]
    ms_e = float((resid ** 2).sum()) / ((n - 1) * (k - 1))
    facet = "member" if sm.rater == "member" else "sample"
    raw = {"segment": (ms_p - ms_e) / k, facet: (ms_r - ms_e) / n, "residual": ms_e}
    truncated = tuple(name for name, v in raw.items() if v < 0)
    return VarianceComponents(column=column, rater=sm.rater, facet=facet, design=_DESIGNS[facet], n_segments=n, k=k,
                              segment_var=max(raw["segment"], 0.0), facet_var=max(raw[facet], 0.0),
                              residual_var=max(ms_e, 0.0), ms_segment=ms_p, ms_facet=ms_r, ms_residual=ms_e,
                              truncated=truncated)


def decision_study(components: VarianceComponents, k_values: Iterable[int] = range(1, 11)) -> pd.DataFrame:
    """Reliability of the mean of ``k`` judgements for each ``k``: columns ``k``, ``g_relative``, ``phi_absolute``."""
    rows = []
    for k in k_values:
        g, phi = components.reliability(int(k))
        rows.append({"k": int(k), "g_relative": g, "phi_absolute": phi})
    return pd.DataFrame(rows)


# =============================================================================================
# Band instability and the flip curve
# =============================================================================================
@dataclass(frozen=True)
class BandInstability:
    """How often a segment's band changes between judgements of the same evidence.

    ``flip_rate``: share of segments (with >= 2 judged samples) seen in more than one band (grows with
    ``n_samples``); ``pairwise_flip_rate``: mean chance that two samples of a segment differ in band.
    """

    n_segments: int
    n_samples: int
    n_flipped: int
    flip_rate: float
    pairwise_flip_rate: float


def band_instability(samples_df: pd.DataFrame, rubric: Rubric | None = None, rater: str | None = None,
                     ) -> BandInstability:
    """:class:`BandInstability` of the score's bands under ``rubric``'s edges (default ``axon-v1``)."""
    rubric = Rubric.default() if rubric is None else rubric
    _check_table(samples_df, rubric)
    return _instability(pivot_samples(samples_df, ("score",), rater), rubric)


def _instability(sm: SampleMatrix, rubric: Rubric) -> BandInstability:
    flips = _flip_stats(sm.values["score"], rubric)
    usable = flips["judged"] >= 2
    n = int(usable.sum())
    n_flipped = int(flips["flipped"][usable].sum())
    return BandInstability(n_segments=n, n_samples=sm.n_raters, n_flipped=n_flipped,
                           flip_rate=n_flipped / n if n else float("nan"),
                           pairwise_flip_rate=float(np.mean(flips["pairwise"][usable])) if n else float("nan"))


@dataclass(frozen=True, eq=False)
class FlipCurve:
    """Fitted ``P(flip | distance to nearest band edge)`` with a pointwise confidence band.

    ``grid`` columns: ``distance`` (points), ``flip_probability``, ``ci_low``, ``ci_high``.
    ``points``: one row per segment (``segment_id``, ``distance``, ``flipped``). Coefficients are on
    the logit scale per point of distance; NaN with a ``note`` when the curve is not identified (no
    flips, only flips, or complete separation).
    """

    intercept: float
    slope: float
    slope_ci_low: float
    slope_ci_high: float
    slope_p_value: float
    n_segments: int
    n_samples: int
    confidence: float
    grid: pd.DataFrame
    points: pd.DataFrame
    note: str = ""


def flip_curve(samples_df: pd.DataFrame, rubric: Rubric | None = None, *, grid: Sequence[float] | None = None,
               confidence: float = 0.95, rater: str | None = None) -> FlipCurve:
    """Logistic regression of "band flips across samples" on the mean score's distance to the nearest edge.

    ``grid``: distances (points) at which to evaluate the curve; default 101 points from 0 to the
    largest observed distance. Model and band in the module docstring.
    """
    rubric = Rubric.default() if rubric is None else rubric
    _check_table(samples_df, rubric)
    sm = pivot_samples(samples_df, ("score",), rater)
    return _flip_curve(sm, rubric, grid, confidence)


def _flip_curve(sm: SampleMatrix, rubric: Rubric, grid: Sequence[float] | None, confidence: float) -> FlipCurve:
    import statsmodels.api as sm_api
    from statsmodels.tools.sm_exceptions import PerfectSeparationError, PerfectSeparationWarning

    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    count, mean, _ss = _within_stats(sm.values["score"])
    flips = _flip_stats(sm.values["score"], rubric)
    usable = count >= 2
    _nearest, distance = _edge_distance(mean, rubric)
    x = distance[usable]
    y = flips["flipped"][usable].astype(np.float64)
    points = pd.DataFrame({"segment_id": sm.segment_ids[usable], "distance": x, "flipped": y.astype(bool)})
    top = float(x.max()) if x.size else 0.0
    grid_x = np.linspace(0.0, top if top > 0 else 1.0, 101) if grid is None else np.asarray(grid, dtype=np.float64)
    nan = float("nan")
    empty_grid = pd.DataFrame({"distance": grid_x, "flip_probability": nan, "ci_low": nan, "ci_high": nan})

    def unidentified(note: str) -> FlipCurve:
        return FlipCurve(nan, nan, nan, nan, nan, int(usable.sum()), sm.n_raters, confidence, empty_grid, points, note)

    if x.size < 3:
        return unidentified(f"curve not identified: {x.size} segment(s) with >= 2 judged samples")
    if y.min() == y.max():
        return unidentified("curve not identified: " + ("no segment flipped" if y.max() == 0 else "every segment flipped"))
    if x.min() == x.max():
        return unidentified("curve not identified: every segment is at the same distance from an edge")
    exog = sm_api.add_constant(x, has_constant="add")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", PerfectSeparationWarning)
            warnings.simplefilter("ignore", RuntimeWarning)
            fit = sm_api.Logit(y, exog).fit(disp=0, maxiter=100)
    except (PerfectSeparationError, PerfectSeparationWarning, np.linalg.LinAlgError) as exc:
        return unidentified(f"curve not identified (separation): {type(exc).__name__}")
    if not fit.mle_retvals.get("converged", False):
        return unidentified("curve not identified: the maximum-likelihood fit did not converge")
    params = np.asarray(fit.params)
    cov = np.asarray(fit.cov_params())
    z = sps.norm.ppf(1 - (1 - confidence) / 2)
    eta = params[0] + params[1] * grid_x
    se = np.sqrt(cov[0, 0] + 2 * grid_x * cov[0, 1] + grid_x ** 2 * cov[1, 1])
    expit = sps.logistic.cdf
    table = pd.DataFrame({"distance": grid_x, "flip_probability": expit(eta),
                          "ci_low": expit(eta - z * se), "ci_high": expit(eta + z * se)})
    ci = np.asarray(fit.conf_int(alpha=1 - confidence))
    return FlipCurve(intercept=float(params[0]), slope=float(params[1]), slope_ci_low=float(ci[1, 0]),
                     slope_ci_high=float(ci[1, 1]), slope_p_value=float(np.asarray(fit.pvalues)[1]),
                     n_segments=int(usable.sum()), n_samples=sm.n_raters, confidence=confidence, grid=table,
                     points=points)


# =============================================================================================
# Ensembles of k judgements
# =============================================================================================
@dataclass(frozen=True, eq=False)
class EnsembleCurve:
    """Flip rate, SD and cost of k-judgement ensembles, k = 1..n (module docstring).

    ``table`` columns: ``reducer``, ``k``, ``flip_rate``, ``sd`` (points), ``calls`` (per segment),
    ``input_tokens``, ``output_tokens``, ``cache_read_tokens``, ``cost_usd`` (expected per segment; NaN
    = unknown), ``cost_usd_per_1000_segments``. ``basis`` is ``"subscores"`` (per-dimension reduction
    re-scored by the rubric) or ``"score"``; ``draw`` is ``"with_replacement"`` or
    ``"without_replacement"``; ``seed`` and ``n_boot`` reproduce the draws.
    """

    table: pd.DataFrame
    seed: int
    n_boot: int
    draw: str
    basis: str
    rater: str
    n_segments: int
    n_samples: int
    cost_note: str = ""


def _auto_n_boot(n_segments: int) -> int:
    # About 200,000 replicate ensembles per k in all: enough replicates per segment on a small
    # sample (97 segments -> 200), and a bounded cost on a large one (10,000 segments -> 20).
    return int(np.clip(200_000 // max(n_segments, 1), 20, 200))


def ensemble_curve(samples_df: pd.DataFrame, rubric: Rubric | None = None, *, seed: int,
                   reducers: Sequence[str] = ENSEMBLE_REDUCERS, n_boot: int | None = None, draw: str | None = None,
                   rater: str | None = None, max_k: int | None = None) -> EnsembleCurve:
    """Bootstrap k-judgement ensembles of every complete segment (module docstring).

    ``seed``: the ``numpy.random.Generator`` seed (recorded). ``n_boot``: replicate ensembles per
    segment and k (default: 200,000 / segments, clipped to 20-200). ``draw``: default
    ``with_replacement`` for repeat samples and ``without_replacement`` for members. ``max_k``: largest
    k (default the number of raters; at most that when drawing without replacement).
    """
    rubric = Rubric.default() if rubric is None else rubric
    _check_table(samples_df, rubric)
    sm = pivot_samples(samples_df, _present(samples_df, COST_COLUMNS), rater)
    return _ensemble(sm, rubric, seed=seed, reducers=reducers, n_boot=n_boot, draw=draw, max_k=max_k)


def _ensemble(sm: SampleMatrix, rubric: Rubric, *, seed: int, reducers: Sequence[str], n_boot: int | None,
              draw: str | None, max_k: int | None) -> EnsembleCurve:
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer):
        raise ValueError(f"seed must be an integer, got {seed!r}")
    for r in reducers:
        if r not in ENSEMBLE_REDUCERS:
            raise ValueError(f"unknown ensemble reducer {r!r}; expected one of {list(ENSEMBLE_REDUCERS)}")
    if not reducers:
        raise ValueError("reducers must name at least one of mean, median")
    draw = draw or ("without_replacement" if sm.rater == "member" else "with_replacement")
    if draw not in ("with_replacement", "without_replacement"):
        raise ValueError(f"draw must be with_replacement or without_replacement, got {draw!r}")
    complete = sm.complete("score")
    n_seg, n = int(complete.sum()), sm.n_raters
    if n_seg < 1 or n < 1:
        raise ValueError(f"no complete segments to resample ({sm.n_segments} segments, {n} raters)")
    max_k = n if max_k is None else int(max_k)
    if max_k < 1 or (draw == "without_replacement" and max_k > n):
        # with replacement, k may exceed n (the bootstrap of a larger ensemble); subsets cannot
        raise ValueError(f"max_k must be >= 1 (and <= {n} raters when drawing without replacement), got {max_k}")
    n_boot = _auto_n_boot(n_seg) if n_boot is None else int(n_boot)
    if n_boot < 2:
        raise ValueError(f"n_boot must be >= 2 (the flip rate compares replicate pairs), got {n_boot}")

    score = sm.values["score"][complete]
    basis = "subscores" if sm.facts is not None and all(d in sm.values for d in DIMENSIONS) else "score"
    dims = facts = None
    if basis == "subscores":
        dims = np.stack([sm.values[d][complete] for d in DIMENSIONS])  # (4, n_seg, n)
        facts = sm.facts[complete]
        _check_rescoring(dims, facts, score, rubric, sm.segment_ids[complete])
        partial_null = np.isnan(dims[3]).any(axis=1) & ~np.isnan(dims[3]).all(axis=1)
    rng = np.random.default_rng(int(seed))
    chunk = max(1, 4_000_000 // (n_boot * max(n, max_k)))
    rows = []
    cost_per_call, cost_note = _cost_per_call(sm, complete)
    for k in range(1, max_k + 1):
        sums = {r: [0.0, 0.0] for r in reducers}  # pairwise flip sum, variance sum
        for start in range(0, n_seg, chunk):
            stop = min(n_seg, start + chunk)
            size = stop - start
            ens: dict[str, np.ndarray] = {}  # reducer -> (size, n_boot) ensemble scores
            codes: dict[str, np.ndarray] = {}  # reducer -> their band codes
            if draw == "with_replacement":
                idx = rng.integers(0, n, size=(size, n_boot, k))
            else:
                idx = np.argsort(rng.random((size, n_boot, n)), axis=2)[:, :, :k]
            rows_idx = np.arange(start, stop)[:, None, None]
            # gather each drawn column once and reduce it with every reducer (common random numbers)
            if basis == "score":
                reduced = _reduce_draws(score[rows_idx, idx], reducers, nan_aware=False)
                for reducer in reducers:
                    ens[reducer] = reduced[reducer]
                    codes[reducer] = _band_codes(ens[reducer], rubric)
            else:
                parts: dict[str, list[np.ndarray]] = {r: [] for r in reducers}
                for j in range(len(DIMENSIONS)):
                    nan_aware = j == 3 and bool(partial_null[start:stop].any())
                    for reducer, values in _reduce_draws(dims[j][rows_idx, idx], reducers, nan_aware).items():
                        parts[reducer].append(values)
                fact_rows = np.repeat(facts[start:stop], n_boot, axis=0)
                for reducer in reducers:
                    subs = np.stack(parts[reducer], axis=-1).reshape(size * n_boot, len(DIMENSIONS))
                    _raw, ens_flat, code_flat = score_arrays(subs, fact_rows, rubric)
                    ens[reducer], codes[reducer] = ens_flat.reshape(size, n_boot), code_flat.reshape(size, n_boot)
            for reducer in reducers:
                counts = np.stack([(codes[reducer] == b).sum(axis=1) for b in range(len(BANDS))], axis=1)
                same = (counts * (counts - 1)).sum(axis=1) / (n_boot * (n_boot - 1))
                sums[reducer][0] += float((1.0 - same).sum())
                sums[reducer][1] += float(ens[reducer].var(axis=1, ddof=1).sum())
        for reducer in reducers:
            flip_sum, var_sum = sums[reducer]
            cost = {c: (k * v if not math.isnan(v) else float("nan")) for c, v in cost_per_call.items()}
            rows.append({"reducer": reducer, "k": k, "flip_rate": flip_sum / n_seg, "sd": math.sqrt(var_sum / n_seg),
                         "calls": k, **cost,
                         "cost_usd_per_1000_segments": 1000 * cost["cost_usd"]})
    order = {r: i for i, r in enumerate(reducers)}
    table = (pd.DataFrame(rows).assign(_order=lambda t: t["reducer"].map(order))
             .sort_values(["_order", "k"]).drop(columns="_order").reset_index(drop=True))
    return EnsembleCurve(table=table, seed=int(seed), n_boot=n_boot, draw=draw, basis=basis, rater=sm.rater,
                         n_segments=n_seg, n_samples=n, cost_note=cost_note)


def _reduce_draws(drawn: np.ndarray, reducers: Sequence[str], nan_aware: bool) -> dict[str, np.ndarray]:
    """Mean and/or median over the last axis of ``(segments, n_boot, k)`` draws.

    The median sorts once (k is small) and averages the two middle values for even k, as
    ``numpy.median`` and ``statistics.median`` do. ``nan_aware`` (a dimension null on some but not
    all judgements of a segment) ignores NaN, as the ensemble judge leaves null members out.
    """
    out: dict[str, np.ndarray] = {}
    if nan_aware:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-null slices give NaN: null stays null
            for reducer in reducers:
                out[reducer] = (np.nanmean if reducer == "mean" else np.nanmedian)(drawn, axis=-1)
        return out
    k = drawn.shape[-1]
    for reducer in reducers:
        if reducer == "mean":
            out[reducer] = drawn.mean(axis=-1)
        else:
            ordered = np.sort(drawn, axis=-1)
            out[reducer] = 0.5 * (ordered[..., (k - 1) // 2] + ordered[..., k // 2])
    return out


def _check_rescoring(dims: np.ndarray, facts: np.ndarray, score: np.ndarray, rubric: Rubric,
                     segment_ids: np.ndarray) -> None:
    """Refuse to re-score subscores when the rubric does not reproduce the table's own scores."""
    n_seg, n = score.shape
    subs = np.moveaxis(dims, 0, -1).reshape(n_seg * n, len(DIMENSIONS))
    _raw, rescored, _code = score_arrays(subs, np.repeat(facts, n, axis=0), rubric)
    gap = np.abs(rescored.reshape(n_seg, n) - score)
    if (gap > 0.051).any():
        i, j = np.argwhere(gap > 0.051)[0]
        raise ValueError(f"rubric {rubric.id!r} does not reproduce the table's score of segment {segment_ids[i]!r} "
                         f"(judgement {j}: table {score[i, j]}, rescored {rescored.reshape(n_seg, n)[i, j]}); "
                         "pass the rubric the run was scored with")


def _cost_per_call(sm: SampleMatrix, complete: np.ndarray) -> tuple[dict[str, float], str]:
    """Mean per-judgement cost columns over the complete segments; NaN when any entry is unknown."""
    out: dict[str, float] = {}
    unknown = []
    for column in COST_COLUMNS:
        matrix = sm.values.get(column)
        if matrix is None:
            out[column] = float("nan")
            unknown.append(f"{column}: not in the table")
            continue
        values = matrix[complete]
        if values.size == 0 or np.isnan(values).any():
            out[column] = float("nan")
            unknown.append(f"{column}: unknown for {int(np.isnan(values).sum())} judgement(s)")
        else:
            out[column] = float(values.mean())
    return out, "; ".join(unknown)


@dataclass(frozen=True)
class Recommendation:
    """The smallest k whose ensemble flip rate is at most ``flip_target`` (``k`` None when none is)."""

    k: int | None
    reducer: str | None
    flip_target: float
    flip_rate: float
    sd: float
    cost_usd_per_1000_segments: float
    met: bool
    note: str

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def recommend_k(curve: EnsembleCurve | pd.DataFrame, flip_target: float) -> Recommendation:
    """Smallest ``k`` (over the curve's reducers; ties -> the reducer listed first) with
    ``flip_rate <= flip_target``; when none, ``k=None`` and the best the curve reaches is reported."""
    if not 0 <= flip_target <= 1:
        raise ValueError(f"flip_target must be a share in [0, 1], got {flip_target!r}")
    table = curve.table if isinstance(curve, EnsembleCurve) else curve
    order = {r: i for i, r in enumerate(dict.fromkeys(table["reducer"]))}
    ranked = table.assign(_order=table["reducer"].map(order)).sort_values(["k", "_order"])
    hits = ranked[ranked["flip_rate"] <= flip_target]
    if len(hits):
        best = hits.iloc[0]
        return Recommendation(k=int(best["k"]), reducer=str(best["reducer"]), flip_target=flip_target,
                              flip_rate=float(best["flip_rate"]), sd=float(best["sd"]),
                              cost_usd_per_1000_segments=float(best["cost_usd_per_1000_segments"]), met=True,
                              note=f"k={int(best['k'])} ({best['reducer']}) keeps band flips at or below "
                                   f"{flip_target:.1%}")
    best = ranked.sort_values(["flip_rate", "k"]).iloc[0]
    return Recommendation(k=None, reducer=None, flip_target=flip_target, flip_rate=float(best["flip_rate"]),
                          sd=float(best["sd"]), cost_usd_per_1000_segments=float(best["cost_usd_per_1000_segments"]),
                          met=False, note=f"no k up to {int(table['k'].max())} reaches {flip_target:.1%}; the lowest "
                                          f"flip rate is {float(best['flip_rate']):.1%} at k={int(best['k'])} "
                                          f"({best['reducer']})")


# =============================================================================================
# Members of ensemble records as a tidy table
# =============================================================================================
MEMBER_COLUMNS: tuple[str, ...] = (
    "segment_id", "sample_index", "member", "judge_id", "ensemble_judge_id", *DIMENSIONS, "verdict", "error",
    "raw_score", "score", "band", *CAP_FACTS, "rubric_id", "input_tokens", "output_tokens", "cache_read_tokens",
    "cost_usd", "latency_ms", "cached",
)


def members_frame(records: Iterable[Any], rubric: Rubric | None = None) -> pd.DataFrame:
    """Flatten ensemble records to one row per ``(segment_id, sample_index, member)`` (:data:`MEMBER_COLUMNS`).

    ``records``: :class:`~axon_eval.judges.base.JudgeRecord` objects or their dicts (lines of
    ``verdicts.jsonl``) written by ``ensemble(...)``; ``member`` is the member's position in the spec.
    Scores: the member score the ensemble recorded (its rubric, capped with the view's trajectory
    facts, stored in ``extra``); with ``rubric`` given, every judged member is re-scored from its
    subscores and the recorded facts under that rubric. A failed member has NaN subscores and score
    and its ``error``. Raises ``ValueError`` naming a record that is not an ensemble record.
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
        subs = frame.loc[judged, list(DIMENSIONS)].to_numpy(dtype=np.float64, na_value=np.nan)
        fact_arr = frame.loc[judged, list(CAP_FACTS)].to_numpy(dtype=bool)
        raw, score, code = score_arrays(subs, fact_arr, rubric)
        frame["raw_score"] = np.nan
        frame["score"] = np.nan
        frame["band"] = None
        frame.loc[judged, "raw_score"] = raw
        frame.loc[judged, "score"] = score
        frame.loc[judged, "band"] = np.asarray(BANDS, dtype=object)[code]
        frame["rubric_id"] = rubric.id
    return frame


def _num(value: Any) -> float:
    return float("nan") if value is None else float(value)


# =============================================================================================
# The study summary
# =============================================================================================
@dataclass(frozen=True, eq=False)
class JudgeNoiseSummary:
    """Everything study 03 reports; :meth:`to_json` gives the ``study.json`` keys (:data:`STUDY_KEYS`).

    ``n_segments``: distinct segments in the table; ``n_samples``: judgements per segment (the number
    of distinct raters). ``sd``: pooled within-segment SD per dimension and score. ``icc``: the full
    :func:`icc_table`. ``segments``: :func:`segment_noise`. ``samples_for_target``: Spearman-Brown
    samples for ``reliability_target`` from the score's ICC(1,1) (None = unreachable).
    """

    judge_id: str
    simulated: bool
    rater: str
    n_segments: int
    n_samples: int
    rubric_id: str
    seed: int
    flip_target: float
    sd: dict[str, float]
    icc: pd.DataFrame
    band: BandInstability
    flip: FlipCurve
    variance: VarianceComponents | None
    decision: pd.DataFrame
    reliability_target: float
    samples_for_target: int | None
    ensemble: EnsembleCurve
    recommended: Recommendation
    segments: pd.DataFrame
    notes: tuple[str, ...] = field(default=())

    def icc1(self) -> dict[str, dict[str, float]]:
        """``{column: {"value", "ci_low", "ci_high"}}`` of ICC(1,1)."""
        return {str(r["column"]): {"value": r["icc1"], "ci_low": r["icc1_ci_low"], "ci_high": r["icc1_ci_high"]}
                for r in self.icc.to_dict("records")}

    def to_json(self) -> dict[str, Any]:
        """The ``study.json`` payload: exactly :data:`STUDY_KEYS`, JSON-ready (NaN -> null)."""
        ensemble_rows = [{"k": int(r["k"]), "reducer": r["reducer"], "flip_rate": r["flip_rate"], "sd": r["sd"],
                          "cost_usd": r["cost_usd"], "cost_usd_per_1000_segments": r["cost_usd_per_1000_segments"]}
                         for r in self.ensemble.table.to_dict("records")]
        payload = {
            "study": STUDY_NAME,
            "judge_id": self.judge_id,
            "simulated": self.simulated,
            "n_segments": self.n_segments,
            "n_samples": self.n_samples,
            "sd": self.sd,
            "icc1": self.icc1(),
            "band_flip_rate": self.band.flip_rate,
            "ensemble": ensemble_rows,
            "recommended_k": self.recommended.to_dict(),
        }
        return _json_ready(payload)


def _json_ready(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _json_ready(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_ready(v) for v in value]
    if isinstance(value, bool | np.bool_):
        return bool(value)
    if isinstance(value, int | np.integer):
        return int(value)
    if isinstance(value, float | np.floating):
        return None if not math.isfinite(float(value)) else float(value)
    return value


def _judge_id_of(samples_df: pd.DataFrame) -> str:
    for column in ("ensemble_judge_id", "judge_id"):
        if column in samples_df.columns:
            ids = sorted({str(v) for v in samples_df[column].dropna().unique()})
            if len(ids) == 1:
                return ids[0]
            if ids and column == "judge_id":
                return "members[" + ", ".join(ids) + "]"
    raise ValueError("the samples table has no judge_id column; pass judge_id=")


def judge_noise_summary(samples_df: pd.DataFrame, rubric: Rubric | None = None, flip_target: float = 0.05,
                        seed: int = 0, *, judge_id: str | None = None, simulated: bool | None = None,
                        rater: str | None = None, reducers: Sequence[str] = ENSEMBLE_REDUCERS,
                        n_boot: int | None = None, reliability_target: float = 0.9, confidence: float = 0.95,
                        ) -> JudgeNoiseSummary:
    """Run every statistic of study 03 on one tidy samples table (repeat samples or ensemble members).

    ``rubric``: the rubric the table was scored with (default ``axon-v1``; band edges come from it).
    ``flip_target``: largest acceptable ensemble flip rate (share) for :func:`recommend_k`. ``seed``:
    the bootstrap seed. ``judge_id``: default the table's single ``judge_id`` (or
    ``ensemble_judge_id``). ``simulated``: default True when the judge id marks a simulated judge
    (``simulated(`` or ``noise(``) or a ``simulated`` column is true anywhere.
    """
    rubric = Rubric.default() if rubric is None else rubric
    _check_table(samples_df, rubric)
    judge_id = _judge_id_of(samples_df) if judge_id is None else judge_id
    if simulated is None:
        simulated = any(marker in judge_id for marker in SIMULATED_MARKERS) or (
            "simulated" in samples_df.columns and bool(samples_df["simulated"].fillna(False).astype(bool).any()))
    columns = [*NOISE_COLUMNS, *[c for c in COST_COLUMNS if c in samples_df.columns]]
    sm = pivot_samples(samples_df, columns, rater)
    notes: list[str] = []
    within = _within_table(sm, NOISE_COLUMNS)
    icc = _icc_frame(sm, NOISE_COLUMNS, confidence)
    try:
        variance: VarianceComponents | None = _components(sm, "score")
        decision = decision_study(variance, range(1, max(10, sm.n_raters) + 1))
    except ValueError as exc:
        variance, decision = None, pd.DataFrame(columns=["k", "g_relative", "phi_absolute"])
        notes.append(f"variance components not estimable: {exc}")
    score_icc = float(icc.loc[icc["column"] == "score", "icc1"].iloc[0])
    ensemble = _ensemble(sm, rubric, seed=seed, reducers=reducers, n_boot=n_boot, draw=None, max_k=None)
    incomplete = sm.n_segments - ensemble.n_segments
    if incomplete:
        notes.append(f"{incomplete} segment(s) lack a judged score in some judgement and are left out of the "
                     "ICC, variance components and ensembles")
    return JudgeNoiseSummary(
        judge_id=judge_id, simulated=bool(simulated), rater=sm.rater, n_segments=sm.n_segments,
        n_samples=sm.n_raters, rubric_id=rubric.id, seed=int(seed), flip_target=flip_target,
        sd={str(r["column"]): float(r["sd_pooled"]) for r in within.to_dict("records")}, icc=icc,
        band=_instability(sm, rubric), flip=_flip_curve(sm, rubric, None, confidence), variance=variance,
        decision=decision, reliability_target=reliability_target,
        samples_for_target=samples_for_reliability(score_icc, reliability_target),
        ensemble=ensemble, recommended=recommend_k(ensemble, flip_target), segments=_segment_table(sm, rubric),
        notes=tuple(notes),
    )


# =============================================================================================
# The study 03 notebook's inputs: which judge to repeat, and the samples table of its run
# =============================================================================================
#: The Claude model study 03 repeats when ``ANTHROPIC_API_KEY`` is set and no judge is named.
NOISE_STUDY_MODEL = "claude-sonnet-4-5"
#: Points from the nearest band edge within which a segment's mean score counts as borderline.
BORDERLINE_POINTS = 5.0
#: Columns of :func:`samples_from_results`, in order.
SAMPLE_COLUMNS: tuple[str, ...] = (
    "segment_id", "sample_index", "turn_id", *DIMENSIONS, "score", "band", *CAP_FACTS, "judge_id", "rubric_id",
    "status", "error", *COST_COLUMNS, "cached",
)
_API_LEAF = ("anthropic:", "openai:")
_MODES = ("structured", "free_text")


def default_noise_judge(api_key_present: bool, *, seed: int = 0) -> str:
    """The spec study 03 repeats when none is named: ``anthropic:<NOISE_STUDY_MODEL>`` when an Anthropic
    key is present, else the SIMULATED stand-in ``simulate(heuristic, sd=1, difficulty=0.5, seed=<seed>)``."""
    if api_key_present:
        return f"anthropic:{NOISE_STUDY_MODEL}"
    return f"simulate(heuristic, sd=1, difficulty=0.5, seed={int(seed)})"


@dataclass(frozen=True)
class NoiseStudyJudge:
    """What study 03 runs: ``spec`` = ``repeat(<inner>, <n>)``; ``batch`` when ``inner`` is a plain
    ``anthropic:`` leaf (Message Batches, half price); ``free_text_spec`` the same repeat in ``#free_text``
    mode for a plain ``anthropic:``/``openai:`` leaf, else None with ``free_text_note`` saying why;
    ``note`` says how the judge was chosen."""

    inner: str
    n_samples: int
    spec: str
    batch: bool
    free_text_spec: str | None
    free_text_note: str
    note: str


def noise_study_judge(judge: str | None, n_samples: int, *, api_key_present: bool, seed: int = 0,
                      ) -> NoiseStudyJudge:
    """Resolve study 03's ``judge`` parameter (the spec to repeat; None: :func:`default_noise_judge`).

    Raises ``ValueError`` for ``n_samples < 2`` (noise needs two judgements of the same evidence), a
    non-string judge, or a judge that is already ``repeat(...)`` (``n_samples`` sets the repeats).
    """
    if isinstance(n_samples, bool) or not isinstance(n_samples, int | np.integer) or n_samples < 2:
        raise ValueError(f"n_samples must be an integer >= 2 (noise needs repeated judgements), got {n_samples!r}")
    if judge is None:
        inner = default_noise_judge(api_key_present, seed=seed)
        note = (f"judge=None and ANTHROPIC_API_KEY is set: Claude ({NOISE_STUDY_MODEL})" if api_key_present else
                "judge=None and no ANTHROPIC_API_KEY: a SIMULATED judge stands in for a sampled language model")
    elif isinstance(judge, str) and judge.strip():
        inner = judge.strip()
        note = "judge named by the parameter"
    else:
        raise ValueError(f"judge must be a judge spec string or None, got {judge!r}")
    if inner.startswith("repeat(") or inner.startswith("repeat ("):
        raise ValueError(f"judge is the spec to repeat, not a repeat(...): got {inner!r}; n_samples sets the repeats")
    plain_leaf = inner.startswith(_API_LEAF) and "(" not in inner and ")" not in inner
    free_text_spec: str | None = None
    if plain_leaf:
        body, hash_, mode = inner.rpartition("#")
        leaf = body if hash_ and mode in _MODES else inner
        free_text_spec = f"repeat({leaf}#free_text, {int(n_samples)})"
        free_text_note = "the same repeat in #free_text mode: the rubric asked for in prose, numbers parsed"
    elif inner.startswith(("simulate(", "noise(")) or inner == "heuristic":
        free_text_note = ("the judge is not a language model (SIMULATED or the heuristic): there is no prose to "
                          "ask for, so structured against free-text judging cannot be measured offline")
    else:
        free_text_note = "free-text mode is compared for a single anthropic:/openai: judge only"
    return NoiseStudyJudge(inner=inner, n_samples=int(n_samples), spec=f"repeat({inner}, {int(n_samples)})",
                           batch=plain_leaf and inner.startswith("anthropic:"), free_text_spec=free_text_spec,
                           free_text_note=free_text_note, note=note)


def samples_from_results(results: pd.DataFrame, records: Iterable[Any] | None = None) -> pd.DataFrame:
    """The tidy samples table (:data:`SAMPLE_COLUMNS`) of a repeated run: one row per
    ``(segment_id, sample_index)`` from ``results.parquet``, with the token counts of ``records`` (the
    run's :class:`~axon_eval.judges.base.JudgeRecord` objects or ``verdicts.jsonl`` dicts) matched on
    the same key; tokens are NaN (unknown) without records or when a record does not state them."""
    missing = [c for c in ("segment_id", "sample_index", *DIMENSIONS, "score", "band") if c not in results.columns]
    if missing:
        raise ValueError(f"results lack columns {missing}; columns: {list(results.columns)}")
    frame = results.reindex(columns=[c for c in SAMPLE_COLUMNS if c not in COST_COLUMNS[1:]]).copy()
    frame["sample_index"] = frame["sample_index"].astype(int)
    tokens = ["input_tokens", "output_tokens", "cache_read_tokens"]
    rows = []
    for rec in records or ():
        data = rec.model_dump() if hasattr(rec, "model_dump") else dict(rec)
        rows.append({"segment_id": data["segment_id"], "sample_index": int(data.get("sample_index", 0)),
                     **{t: _num(data.get(t)) for t in tokens}})
    found = (pd.DataFrame(rows, columns=["segment_id", "sample_index", *tokens])
             .drop_duplicates(["segment_id", "sample_index"], keep="last"))
    frame = frame.merge(found, on=["segment_id", "sample_index"], how="left", validate="many_to_one")
    for column in (*tokens, "cost_usd"):
        frame[column] = pd.to_numeric(frame[column], errors="coerce").astype(np.float64)
    return frame[list(SAMPLE_COLUMNS)].sort_values(["segment_id", "sample_index"], kind="stable").reset_index(drop=True)


def borderline_sd(segments: pd.DataFrame, within: float = BORDERLINE_POINTS) -> pd.DataFrame:
    """Pooled within-segment SD per column for borderline segments (mean score within ``within`` points
    of the nearest band edge), the others, and all, from :func:`segment_noise` / ``summary.segments``.

    One row per group: ``group``, ``n_segments`` (with an SD, i.e. >= 2 judged samples) and ``sd_<column>``
    for each of :data:`NOISE_COLUMNS`: ``sqrt(sum_i w_i s_i^2 / sum_i w_i)`` with ``w_i = n_judged_i - 1``
    over segments whose ``s_i`` is known (the "all" row equals the pooled SD when no dimension is null on
    only some samples of a segment).
    """
    if not within >= 0:
        raise ValueError(f"within must be >= 0 points, got {within!r}")
    need = ["n_judged", "distance_to_edge", "sd_score"]
    if any(c not in segments.columns for c in need):
        raise ValueError(f"segments need columns {need} (from segment_noise); columns: {list(segments.columns)}")
    near = segments["distance_to_edge"].to_numpy(dtype=np.float64) <= within
    groups = {f"borderline (mean within {within:g} points of a band edge)": near,
              f"clear (further than {within:g} points)": ~near, "all": np.ones(len(segments), dtype=bool)}
    weight = (segments["n_judged"].to_numpy(dtype=np.float64) - 1.0)
    rows = []
    for name, mask in groups.items():
        row: dict[str, Any] = {"group": name,
                               "n_segments": int((mask & segments["sd_score"].notna().to_numpy()).sum())}
        for column in NOISE_COLUMNS:
            key = f"sd_{column}"
            s = segments[key].to_numpy(dtype=np.float64) if key in segments.columns else np.full(len(segments), np.nan)
            use = mask & ~np.isnan(s) & (weight > 0)
            row[key] = float(math.sqrt((weight[use] * s[use] ** 2).sum() / weight[use].sum())) if use.any() else float("nan")
        rows.append(row)
    return pd.DataFrame(rows)
