"""Judge noise: band instability (flip rates) and the flip curve against the distance to a band edge.

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
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats as sps

from ...rubric import Rubric
from .common import SampleMatrix, _check_table, pivot_samples
from .within import _edge_distance, _flip_stats, _within_stats


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
