"""Judge noise: the one-way intraclass correlation ICC(1,1) and ICC(1,k) with confidence intervals.

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

References
    Shrout, P. E., & Fleiss, J. L. (1979). Intraclass correlations: uses in assessing rater
    reliability. Psychological Bulletin, 86(2), 420-428.
    McGraw, K. O., & Wong, S. P. (1996). Forming inferences about some intraclass correlation
    coefficients. Psychological Methods, 1(1), 30-46.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as sps

from .common import NOISE_COLUMNS, SampleMatrix, pivot_samples


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
