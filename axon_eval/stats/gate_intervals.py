"""The intervals a gate decides on: skew-corrected turn-clustered means and exact shares.

A gate (:mod:`axon_eval.stats.gate`) passes a run when one end of a figure's 95% interval clears a
threshold, and so promises a one-sided error of at most 2.5%: a run whose true figure sits exactly at
the threshold passes at most that often. The report's intervals (:mod:`axon_eval.stats.intervals`:
percentile bootstrap, Wilson) describe a run well but do not keep that promise at the edges. Scores
pile up at 100 with a long tail below (left skew), so a percentile or Student-t lower bound is too high
in small samples, and a share with no event in a few turns gets a zero-width bootstrap interval.
``make bench`` measures the error of each rule by simulation (:mod:`axon_eval.stats.gate_error`); the
intervals here are the ones that hold it at every n the gate accepts.

**The unit** is the turn (a bundled turn's segments move together). For cluster ``c`` (a turn) with
``N_c`` segments carrying a value and their sum ``S_c``, the estimate is the segment-weighted mean
``r = sum_c S_c / sum_c N_c``; with one segment per turn it is the plain mean.

**Means** (the mean score, a dimension's mean, a paired difference of scores or of band indicators):
**Hall's skewness-corrected Student-t**. The turns' linearised residuals
``z_c = (S_c - r N_c) / Nbar`` (``Nbar = n / C``) have mean 0; ``s^2 = sum z_c^2 / (C - 1)`` and
``se = s / sqrt(C)`` is the cluster-robust (CR1) standard error of ``r`` (for one segment per turn the
ordinary ``s / sqrt(n)``; ``statsmodels`` OLS on a constant with ``cov_type="cluster"`` gives the same).
With the residuals' skewness ``g = (sum z_c^3 / C) / s^3``, ``a = g / (3 sqrt(C))`` and
``b = g / (6 sqrt(C))``, Hall's transformation of the studentised mean ``t = (r - mu) / se``::

    T(t) = t + a t^2 + a^2 t^3 / 3 + b        (monotone: T'(t) = (1 + a t)^2 >= 0)

is close to standard normal to second order, and its inverse is closed-form,
``T^-1(u) = ((1 + 3 a (u - b))^(1/3) - 1) / a`` (``u - b`` when ``a = 0``). The bounds are::

    lo = r - se * T^-1(q),   hi = r - se * T^-1(-q),   q = t_{C-1, (1 + confidence) / 2}

(Hall 1992, "On the removal of skewness by transformation", JRSS B 54:221; in this closed form Zhou &
Dinh 2005, "Nonparametric confidence intervals for the one- and two-sample problems", Biostatistics
6:187, who use the normal quantile: the Student-t one is a little wider at small C.) With ``g = 0``
this is the Student-t interval ``r -/+ q se``. The gate takes, on each side, **the farther of Hall's
bound and the Student-t bound** (``lo = min(lo_Hall, r - q se)``): a sample passes only when both
would pass it, so the error is at most the smaller of the two rules' errors. Hall's correction fixes
the left skew of scores (the plain t lower bound errs 4-6% at 20 turns of the bundled sets); the t
bound guards against a skewness estimated from a few heavy-tailed differences, which the
transformation can overshoot. A sample with no variation (every value the same, ``c``) bounds the
mean only through the figure's range ``[m, M]`` (a score 0-100, a difference of scores -100 to 100):
with no turn unlike the rest among ``C``, the share of such turns is at most the Clopper-Pearson bound
``u0 = 1 - ((1 - confidence) / 2)^(1/C)``, each at most the range away, so ``lo = c - (c - m) u0`` and
``hi = c + (M - c) u0``. Two identical runs of 97 turns therefore cannot show that B is within 2 points
of A (``u0`` = 3.7%: a 3.7% chance of answers that collapse by 100 points is not excluded), but can
within 4; without a range there is no interval.

**Shares of one run** (share good/partial/poor, share capped): the **Clopper-Pearson** interval at
Korn & Graubard's effective sample size (Korn & Graubard 1998, "Confidence intervals for proportions
with small expected number of positive counts estimated from survey data", Survey Methodology 24:193).
With ``p = k / n``, the design effect ``deff = v / (p (1 - p) / (n - 1))`` (``v`` the CR1 variance of
``p`` above, over the variance the same formula gives when every segment is its own turn) floored at 1, and ``n* = (n / deff) (t_{n-1} / t_{C-1})^2`` (the second factor spends the degrees of
freedom of an estimated variance, and is 1 when every turn holds one segment)::

    lo = Beta^-1(alpha / 2; k*, n* - k* + 1),   hi = Beta^-1(1 - alpha / 2; k* + 1, n* - k*),   k* = p n*

(``lo = 0`` when ``k* = 0``, ``hi = 1`` when ``k* = n*``). With one segment per turn this is exactly
``statsmodels.stats.proportion.proportion_confint(k, n, method="beta")``, whose one-sided error is at
most ``alpha / 2`` at every n and p. When ``p`` is 0 or 1 the design effect cannot be estimated and
``n* = C`` (every turn counted once, the most it can be worth).

**Paired differences of a share** (non-inferiority of the share poor or good): a pair's difference
``1[B in band] - 1[A in band]`` is +1, 0 or -1, so ``delta = p+ - p-`` with ``p+`` and ``p-`` the
shares of pairs that moved into and out of the band. Each gets its Korn-Graubard Clopper-Pearson
bounds ``(l+, u+)`` and ``(l-, u-)`` above, and the **MOVER** combines them (method of variance
estimates recovery: Zou & Donner 2008, Statistics in Medicine 27:1693; for paired proportions Newcombe
1998, Statistics in Medicine 17:2635, with Wilson bounds), with the multinomial correlation
``rho = -sqrt(p+ p- / ((1 - p+)(1 - p-)))`` of the two shares::

    lo = delta - sqrt((p+ - l+)^2 + (u- - p-)^2 - 2 rho (p+ - l+)(u- - p-))
    hi = delta + sqrt((u+ - p+)^2 + (p- - l-)^2 - 2 rho (u+ - p+)(p- - l-))

When no pair moved into the band, ``hi = u+`` is the exact bound on a share that saw no event; a
Student-t on the differences would have width 0 there and pass anything. A difference of means (the
score) uses Hall's interval on the pairs' differences.

**The smallest sample** a gate accepts depends on the figure (:func:`least_turns`): a threshold on a
share needs :data:`MIN_GATE_TURNS` turns and a non-inferiority margin on a share
:data:`MIN_PAIRED_TURNS` paired turns; **any rule on a mean** (the mean score, a dimension's mean, the
paired difference of scores) needs :data:`MIN_MEAN_GATE_TURNS`. Below them the simulated error of some
rule exceeds :data:`MAX_GATE_ERROR` on a population of the bench, or comes within a few Monte Carlo
standard errors of it, and the gate refuses (exit 2) with the reason rather than deciding. The mean's
minimum is the larger because no skew correction can see a tail the sample missed: a population with
a few turns far below the rest (scores capped at 25 among scores near 70) gives samples of 20 turns
that hold none of them, a small spread and a lower bound above the truth. The bench's populations
(every bundled set under both offline judges) put Hall's bound at up to 5.8% at 20 turns and 3.9% at
30, and within 3% from 50 (SIMULATED). Shares keep their smaller minimum: Clopper-Pearson holds its
rate at every n by construction. Pure: arrays or frames in, :class:`Interval` out.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..rubric import Rubric
from .intervals import CONFIDENCE, HEADLINE_COLUMNS, HEADLINE_FIGURES, Interval, figure_values, headline_segments

#: Fewest turns (independent units) a gate decides on; below it the gate refuses. The bench's SIMULATED
#: error table (``make bench``, section ``gate error``) shows the error of every rule at n = 5 to 300.
MIN_GATE_TURNS = 20
#: Fewest paired turns a non-inferiority gate (``compare --fail-on-regression``) decides on a share with.
MIN_PAIRED_TURNS = 30
#: Fewest turns, or paired turns, that any rule on a mean decides on (the mean score, a dimension's mean,
#: the paired difference of scores), larger than a share's because of a skewed population's unseen tail
#: (module docstring).
MIN_MEAN_GATE_TURNS = 50
#: The largest one-sided error a gate may have at any n it accepts (the bench checks it).
MAX_GATE_ERROR = 0.03
#: The method names of the gate's intervals.
MEAN_METHOD = "Student-t and Hall skew-corrected, the farther bound (turns)"
SHARE_METHOD = "Clopper-Pearson at the effective n (Korn-Graubard)"
PAIRED_SHARE_METHOD = "MOVER of Clopper-Pearson bounds (pairs moved in and out, turns)"
#: The least and largest value of a mean figure (the score in points; a dimension's mean, 0-10, is
#: :data:`DIMENSION_RANGE`): what bounds a sample with no variation.
FIGURE_RANGES: dict[str, tuple[float, float]] = {"mean score": (0.0, 100.0)}
DIMENSION_RANGE: tuple[float, float] = (0.0, 10.0)
#: What the gate's intervals cover, in one sentence.
GATE_COVERS = ("Each bound is a one-sided test of the figure over another set of turns like these, judged the "
               "same way: it does not cover judge error or a human's disagreement with the judge.")


def least_turns(figure: str, *, paired: bool = False) -> int:
    """The fewest turns a gate decides ``figure`` on: :data:`MIN_MEAN_GATE_TURNS` for a mean (any figure
    that is not a share), else :data:`MIN_PAIRED_TURNS` for a non-inferiority margin (``paired``) and
    :data:`MIN_GATE_TURNS` for a threshold."""
    if not str(figure).startswith("share "):
        return MIN_MEAN_GATE_TURNS
    return MIN_PAIRED_TURNS if paired else MIN_GATE_TURNS


def _t_quantile(confidence: float, df: np.ndarray) -> np.ndarray:
    from scipy.stats import t

    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    return t.ppf(0.5 + confidence / 2, df)


def _as_matrix(x: Any, what: str) -> np.ndarray:
    arr = np.asarray(x, dtype=np.float64)
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.ndim != 2:
        raise ValueError(f"{what} must be one row of clusters or a matrix (replicates x clusters), got shape "
                         f"{arr.shape}")
    return arr


def hall_bounds(sums: Any, sizes: Any, confidence: float = CONFIDENCE
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Hall's skew-corrected Student-t interval of a clustered mean (module docstring), vectorised over
    rows: ``sums[R, C]`` the clusters' sums ``S_c`` and ``sizes[R, C]`` their counts ``N_c`` (a row is
    one sample of ``C`` clusters). Returns ``(estimate, lo, hi)``, each ``[R]``; ``lo`` and ``hi`` are
    ``NaN`` where the residuals have no spread or ``C < 2``. The kernel of :func:`mean_interval` and of
    the bench's simulation."""
    s_c, n_c = _as_matrix(sums, "sums"), _as_matrix(sizes, "sizes")
    if s_c.shape != n_c.shape:
        raise ValueError(f"sums has shape {s_c.shape} and sizes {n_c.shape}; give one size per cluster sum")
    n_clusters = s_c.shape[1]
    total = n_c.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = s_c.sum(axis=1) / total
        z = (s_c - r[:, None] * n_c) / (total / n_clusters)[:, None]
        s2 = (z ** 2).sum(axis=1) / (n_clusters - 1) if n_clusters > 1 else np.full(len(r), np.nan)
        s = np.sqrt(s2)
        se = s / math.sqrt(n_clusters)
        g = (z ** 3).mean(axis=1) / s ** 3
    q = float(_t_quantile(confidence, np.array(max(n_clusters - 1, 1))))
    a = g / (3 * math.sqrt(n_clusters))
    b = g / (6 * math.sqrt(n_clusters))

    def t_inverse(u: float) -> np.ndarray:
        small = np.abs(a) < 1e-12
        safe = np.where(small, 1.0, a)
        return np.where(small, u - b, (np.cbrt(1 + 3 * safe * (u - b)) - 1) / safe)

    with np.errstate(invalid="ignore"):
        # the farther of Hall's bound and the plain Student-t bound: passing needs both to pass
        lo = np.minimum(r - se * t_inverse(q), r - q * se)
        hi = np.maximum(r - se * t_inverse(-q), r + q * se)
    spread = np.isfinite(s) & (s > 1e-12 * np.maximum(1.0, np.abs(r)))
    lo, hi = np.where(spread, lo, np.nan), np.where(spread, hi, np.nan)
    return r, lo, hi


def share_bounds(events: Any, sizes: Any, confidence: float = CONFIDENCE
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The Korn-Graubard Clopper-Pearson interval of a clustered share (module docstring), vectorised
    over rows: ``events[R, C]`` the clusters' counts of segments in the share, ``sizes[R, C]`` their
    segments. Returns ``(estimate, lo, hi)``, each ``[R]``, fractions in [0, 1]."""
    from scipy.stats import beta

    k_c, n_c = _as_matrix(events, "events"), _as_matrix(sizes, "sizes")
    if k_c.shape != n_c.shape:
        raise ValueError(f"events has shape {k_c.shape} and sizes {n_c.shape}; give one size per cluster count")
    if ((k_c < 0) | (k_c > n_c)).any():
        raise ValueError("every cluster's events must lie between 0 and its size")
    n_clusters = k_c.shape[1]
    n = n_c.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = k_c.sum(axis=1) / n
        resid = k_c - p[:, None] * n_c
        v = n_clusters / max(n_clusters - 1, 1) * (resid ** 2).sum(axis=1) / n ** 2
        deff = np.maximum(1.0, v / (p * (1 - p) / (n - 1)))  # 1 for independent segments
    alpha = 1 - confidence
    # Korn-Graubard's degrees-of-freedom factor (t_{n-1} / t_{C-1})^2: 1 when every turn is one segment
    df_factor = (_t_quantile(confidence, np.maximum(n - 1, 1)) / _t_quantile(confidence, max(n_clusters - 1, 1))) ** 2
    interior = (p > 0) & (p < 1)
    n_star = np.where(interior, n / np.where(interior, deff, 1.0), float(n_clusters)) * df_factor
    k_star = p * n_star
    with np.errstate(invalid="ignore"):
        lo = np.where(k_star > 0, beta.ppf(alpha / 2, np.maximum(k_star, 1e-300), n_star - k_star + 1), 0.0)
        hi = np.where(k_star < n_star, beta.ppf(1 - alpha / 2, k_star + 1, np.maximum(n_star - k_star, 1e-300)), 1.0)
    return p, lo, hi


def paired_share_bounds(moved_in: Any, moved_out: Any, sizes: Any, confidence: float = CONFIDENCE
                        ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The MOVER interval of ``delta = p+ - p-`` (module docstring), vectorised over rows:
    ``moved_in[R, C]`` the clusters' pairs whose difference is +1, ``moved_out[R, C]`` those at -1,
    ``sizes[R, C]`` their pairs. Returns ``(delta, lo, hi)``, each ``[R]``, in [-1, 1]."""
    p_in, l_in, u_in = share_bounds(moved_in, sizes, confidence)
    p_out, l_out, u_out = share_bounds(moved_out, sizes, confidence)
    delta = p_in - p_out
    with np.errstate(invalid="ignore", divide="ignore"):
        both = (p_in > 0) & (p_out > 0) & (p_in < 1) & (p_out < 1)
        rho = -np.sqrt(np.where(both, p_in * p_out / ((1 - p_in) * (1 - p_out)), 0.0))
    rho = np.clip(np.nan_to_num(rho), -1.0, 0.0)
    lo = delta - np.sqrt((p_in - l_in) ** 2 + (u_out - p_out) ** 2 - 2 * rho * (p_in - l_in) * (u_out - p_out))
    hi = delta + np.sqrt((u_in - p_in) ** 2 + (p_out - l_out) ** 2 - 2 * rho * (u_in - p_in) * (p_out - l_out))
    return delta, np.maximum(lo, -1.0), np.minimum(hi, 1.0)


def _cluster_totals(values: np.ndarray, clusters: Sequence[Any] | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    codes, uniques = pd.factorize(pd.Series(np.asarray(clusters, dtype=object)), sort=False)
    sums = np.bincount(codes, weights=values, minlength=len(uniques))
    sizes = np.bincount(codes, minlength=len(uniques)).astype(np.float64)
    return sums, sizes


def _finite_values(values: Any, clusters: Any) -> tuple[np.ndarray, np.ndarray, int]:
    x = np.asarray(values, dtype=np.float64)
    c = np.asarray(clusters, dtype=object)
    if x.shape != c.shape:
        raise ValueError(f"values has shape {x.shape} and clusters {c.shape}; give one cluster per value")
    keep = np.isfinite(x)
    return x[keep], c[keep], int((~keep).sum())


def _interval(estimate: float, lo: float, hi: float, n: int, n_clusters: int, method: str, confidence: float,
              notes: list[str]) -> Interval:
    return Interval(float(estimate), float(lo), float(hi), n, n_clusters, method, confidence,
                    note="; ".join(filter(None, notes)))


def mean_interval(values: Any, clusters: Any, confidence: float = CONFIDENCE,
                  value_range: tuple[float, float] | None = None) -> Interval:
    """Hall's skew-corrected Student-t interval of the mean of ``values`` (one per segment; ``NaN`` left
    out and counted in the note) clustered by ``clusters`` (one turn id per value), the farther bound on
    each side (module docstring). Method :data:`MEAN_METHOD`. When every value is the same, the bounds
    come from ``value_range`` (the figure's least and largest possible values) or, without one, there
    is no interval (``NaN`` bounds, a note); fewer than 2 turns give no interval."""
    x, c, missing = _finite_values(values, clusters)
    notes = [f"{missing} segment(s) without a value left out (null, not 0)" if missing else ""]
    if len(x) == 0:
        return _interval(math.nan, math.nan, math.nan, 0, 0, MEAN_METHOD, confidence, ["no units", *notes])
    sums, sizes = _cluster_totals(x, c)
    r, lo, hi = hall_bounds(sums, sizes, confidence)
    if len(sums) < 2:
        notes.insert(0, "fewer than 2 turns: nothing bounds the mean")
    elif not np.isfinite(lo[0]):
        if value_range is not None and np.ptp(x) == 0:
            least, most = value_range
            u0 = 1 - ((1 - confidence) / 2) ** (1 / len(sums))
            c = float(x[0])
            notes.insert(0, f"every value is {c:g}: the bounds are the figure's range ({least:g} to {most:g}) "
                            f"reached by at most {u0:.1%} of turns (Clopper-Pearson, none seen in {len(sums)})")
            return _interval(c, c - (c - least) * u0, c + (most - c) * u0, len(x), len(sums), MEAN_METHOD,
                             confidence, notes)
        notes.insert(0, f"no variation among the {len(sums)} turns: nothing bounds what the sample did not show")
    return _interval(r[0], lo[0], hi[0], len(x), len(sums), MEAN_METHOD, confidence, notes)


def share_interval(indicator: Any, clusters: Any, confidence: float = CONFIDENCE) -> Interval:
    """The Korn-Graubard Clopper-Pearson interval of the share of ``indicator`` (0/1 per segment; ``NaN``
    left out and counted in the note) clustered by ``clusters``. Method :data:`SHARE_METHOD`."""
    x, c, missing = _finite_values(indicator, clusters)
    if not np.isin(x, (0.0, 1.0)).all():
        raise ValueError(f"a share's indicator takes 0 or 1, got {x[~np.isin(x, (0.0, 1.0))][0]!r}")
    notes = [f"{missing} segment(s) without a value left out (null, not 0)" if missing else ""]
    if len(x) == 0:
        return _interval(math.nan, math.nan, math.nan, 0, 0, SHARE_METHOD, confidence, ["no units", *notes])
    sums, sizes = _cluster_totals(x, c)
    p, lo, hi = share_bounds(sums, sizes, confidence)
    return _interval(p[0], lo[0], hi[0], len(x), len(sums), SHARE_METHOD, confidence, notes)


def paired_share_interval(differences: Any, clusters: Any, confidence: float = CONFIDENCE) -> Interval:
    """The MOVER interval of the mean of paired band differences (each -1, 0 or +1; ``NaN`` left out),
    clustered by ``clusters``. Method :data:`PAIRED_SHARE_METHOD`."""
    x, c, missing = _finite_values(differences, clusters)
    if not np.isin(x, (-1.0, 0.0, 1.0)).all():
        raise ValueError(f"a paired band difference takes -1, 0 or +1, got {x[~np.isin(x, (-1.0, 0.0, 1.0))][0]!r}")
    notes = [f"{missing} pair(s) without a value left out (null, not 0)" if missing else ""]
    if len(x) == 0:
        return _interval(math.nan, math.nan, math.nan, 0, 0, PAIRED_SHARE_METHOD, confidence, ["no units", *notes])
    moved_in, sizes = _cluster_totals((x > 0).astype(float), c)
    moved_out, _ = _cluster_totals((x < 0).astype(float), c)
    d, lo, hi = paired_share_bounds(moved_in, moved_out, sizes, confidence)
    return _interval(d[0], lo[0], hi[0], len(x), len(sizes), PAIRED_SHARE_METHOD, confidence, notes)


def _table(rows: list[dict[str, Any]], confidence: float, *, paired: bool = False) -> pd.DataFrame:
    out = pd.DataFrame(rows, columns=list(HEADLINE_COLUMNS))
    out["seed"] = out["seed"].astype("Int64")
    out["n_boot"] = out["n_boot"].astype("Int64")
    out.attrs.update({"covers": GATE_COVERS, "confidence": confidence,
                      "min_turns": {f: least_turns(f, paired=paired) for f in out["figure"]}})
    return out


def gate_table(results_df: pd.DataFrame, rubric: Rubric | None = None, *, cluster_col: str = "turn_id",
               confidence: float = CONFIDENCE, allow_mixed: bool = False) -> pd.DataFrame:
    """Every headline figure of a run with the interval a gate decides on: the columns and figures of
    :func:`axon_eval.stats.intervals.headline_table` (same estimates over the same judged segments),
    means by :func:`mean_interval` and shares by :func:`share_interval`. ``attrs`` holds ``covers``
    (:data:`GATE_COVERS`), ``confidence`` and ``min_turns`` (figure -> the fewest turns a gate decides
    it on, :func:`least_turns`)."""
    seg = headline_segments(results_df, rubric, cluster_col=cluster_col, allow_mixed=allow_mixed)
    clusters = seg["cluster"].to_numpy(dtype=object)
    rows = []
    for figure, kind in HEADLINE_FIGURES:
        values = figure_values(seg, figure)
        iv = (share_interval(values, clusters, confidence) if kind == "share" else
              mean_interval(values, clusters, confidence, FIGURE_RANGES.get(figure, DIMENSION_RANGE)))
        rows.append({"figure": figure, "kind": kind, **{k: v for k, v in iv.as_dict().items() if k in HEADLINE_COLUMNS}})
    return _table(rows, confidence)


def paired_gate_table(pairs: pd.DataFrame, confidence: float = CONFIDENCE) -> pd.DataFrame:
    """The differences B - A a non-inferiority gate decides on, from a paired comparison's ``pairs``
    (:class:`axon_eval.stats.paired.PairedComparison`: ``cluster``, ``score_a``, ``score_b``,
    ``band_a``, ``band_b``): each band's share (the mean of ``1[band_b = band] - 1[band_a = band]``)
    by :func:`paired_share_interval` and the mean score (the mean of ``score_b - score_a``) by Hall's
    skew-corrected Student-t (:func:`mean_interval`), clustered by A's turns. ``attrs["min_turns"]``
    maps each figure to the fewest paired turns a gate decides it on (:func:`least_turns`)."""
    from ..rubric import BANDS

    need = {"cluster", "score_a", "score_b", "band_a", "band_b"}
    if not need <= set(pairs.columns):
        raise ValueError(f"pairs needs the columns {sorted(need)}; it has {sorted(pairs.columns)}")
    clusters = pairs["cluster"].astype(str).to_numpy(dtype=object)
    rows = []
    band_a, band_b = pairs["band_a"].astype(object).to_numpy(), pairs["band_b"].astype(object).to_numpy()
    for band in BANDS:
        diff = (band_b == band).astype(float) - (band_a == band).astype(float)
        iv = paired_share_interval(diff, clusters, confidence)
        rows.append({"figure": f"share {band}", "kind": "share",
                     **{k: v for k, v in iv.as_dict().items() if k in HEADLINE_COLUMNS}})
    diff = (pd.to_numeric(pairs["score_b"], errors="coerce").to_numpy(dtype=np.float64)
            - pd.to_numeric(pairs["score_a"], errors="coerce").to_numpy(dtype=np.float64))
    least, most = FIGURE_RANGES["mean score"]
    iv = mean_interval(diff, clusters, confidence, (least - most, most - least))
    rows.append({"figure": "mean score", "kind": "mean", **{k: v for k, v in iv.as_dict().items() if k in HEADLINE_COLUMNS}})
    return _table(rows, confidence, paired=True)
