"""Label budgets: where to spend human labels, and how many a corrected figure needs.

Study 09 corrects a run's headline figures with PPI++ (:mod:`axon_eval.stats.ppi`). Its interval
narrows as labels are added, and *which* segments are labelled decides how fast. This module gives the
three labelling designs, an unbiased estimator for each, and a planner that says how many labels each
needs for a target half-width. Units: the figure's own (points of 0-100 for a mean score, fractions for a
share); ``N`` judged segments in the run, ``n`` labels; ``r_i = Y_i - lam * Yhat_i`` the rectifier of
segment ``i`` (human value ``Y``, judge value ``Yhat``).

**Inclusion probabilities** ``pi_i`` (each design draws exactly ``n`` segments, ``sum_i pi_i = n``):

* *uniform*: ``pi_i = n / N`` (a simple random sample).
* *stratified*: ``pi_i = n_h / N_h`` in stratum ``h`` (the judge's band, or the design's strata), with the
  **Neyman allocation** ``n_h = n * N_h S_h / sum_k N_k S_k`` (Cochran 1977, section 5.5), ``S_h`` the
  SD of the rectifier in stratum ``h``; at least :data:`MIN_PER_STRATUM` per stratum (a within-stratum
  variance needs two), at most ``N_h``, rounded by largest remainders. Equal ``S_h``: proportional.
* *active*: probabilities proportional to an **uncertainty signal** ``s_i`` known before labelling (the
  spread of panel members, the repeat-sample SD, or a model of ``|label - judge|`` fitted on the labels
  so far), floored and mixed with uniform sampling (a *defensive mixture*, Hesterberg 1995, Technometrics
  37:185)::

      s~_i = max(s_i, SIGNAL_FLOOR * mean(s))          (a missing signal counts as the mean)
      pi_i = min(1, n * (MIX_UNIFORM / N + (1 - MIX_UNIFORM) * s~_i / sum_k s~_k))

  the excess of probabilities capped at 1 spread again over the others, in proportion. Every segment can
  be drawn (``pi_i >= MIX_UNIFORM * n / N``). Whatever the signal, the rectifier's variance is at most
  ``1 / MIX_UNIFORM`` times uniform sampling's (the weights ``n / (N pi_i)`` are at most that); a signal
  unrelated to the judge's error costs ``mean(pi) * mean(1 / pi)`` times the variance
  (:func:`useless_signal_inflation`, known before labelling).

**The draw** (:func:`systematic_sample`): randomised systematic sampling with probabilities ``pi``
(Goodman & Kish 1950; Sarndal, Swensson & Wretman 1992, section 3.6): the segments in a seeded random
order (within strata, for a stratified design), one uniform start ``u`` in [0, 1), and segment ``k`` is
drawn when an integer ``j`` has ``C_{k-1} <= u + j < C_k`` (``C`` the cumulative probabilities). It
draws exactly ``n`` and segment ``i`` with probability exactly ``pi_i``; with equal ``pi`` it is a simple
random sample (within each stratum, for a stratified design).

**Inverse-probability-weighted PPI++** (active inference, Zrnic & Candes 2024, "Active Statistical
Inference", ICML; :func:`ht_ppi`)::

    theta = lam * mean_all(Yhat) + (1/N) sum_labelled (Y_i - lam Yhat_i) / pi_i
    se^2  = var^(Y) / N + (1 - n/N) var(u) / n,          u_i = n r_i / (N pi_i)   (i labelled)
    var^(Y) = var_w(Y) + lam^2 (var_all(Yhat) - var_w(Yhat))
    interval theta -/+ q se

The point estimate is Horvitz-Thompson's, unbiased over the draw for any fixed ``lam`` and any
probabilities (each ``pi_i > 0``): ``E[sum_labelled r_i / pi_i] = sum_i r_i``, so ``E[theta | run] =
mean_all(Y)``. Its variance is therefore that of the run's human mean, ``var(Y) / N`` (the sampling of
segments: the interval covers it, as study 09's does, :data:`axon_eval.stats.ppi.PPI_COVERS`), plus the
draw's. The first is estimated with the judge's help (``var_w`` over the labelled draws weighted by
``1/pi``, ``var_all`` over every judged segment; at least 0); it replaces PPI's ``lam^2 var_all(Yhat) / N``,
which leaves out the covariance of the imputed mean with the rectifier when the labelled segments are
among the ``N`` (small when ``n << N``; on a run of 97 segments with 60 labelled, tuned ``lam`` and that
omission cover 85% instead of 95%). The draw's is the with-replacement (Hansen-Hurwitz) form ``var(u) /
n`` (Sarndal et al. 1992, section 2.9) times the finite-population correction ``1 - n/N``: exact for
equal ``pi = n/N`` (a simple random sample: ``(1 - n/N) var(r) / n``), the usual approximation for
unequal ones (Sarndal et al. 1992, section 3.6). With it, labelling every segment leaves ``var(Y) / N``,
the labels-only interval's own value there. Zrnic & Candes draw each
segment independently (Bernoulli ``pi_i``); their variance ``Var(lam Yhat + r xi / pi) / N`` also
carries the random number of labels (about ``mean(r)^2 / n``, large when the judge is biased): here the
number of labels is fixed. The expected draw variance is ``(1/n) [(1/N^2) sum_i r_i^2 / p_i - rbar^2]``
with ``p_i = pi_i / n``, smallest for ``pi_i`` proportional to ``|r_i|``: the signal should predict the
size of the judge's error (uncentred, bias included). With equal ``pi`` the point estimate is ppi_py's
``ppi_mean_pointestimate(Y, Yhat, Yhat_all, lam)``.

``lam`` and the interval follow the rule of :func:`axon_eval.stats.ppi.ppi_rule`: below
:data:`~axon_eval.stats.ppi.SMALL_SAMPLE_LABELLED` labels ``lam = 1``, ``ddof = 1`` and Student-t with
Kish's ``n_eff - 1`` df (weights ``1/pi``); from that many, ``lam`` power-tuned and a normal interval.
Power tuning takes the ``lam`` minimising the estimator's own estimated variance (:func:`ht_lam`,
:func:`stratified_lam`; Angelopoulos, Duchi & Zrnic 2023; Zrnic & Candes 2024 tune it the same way),
with equal ``pi`` essentially the slope ``cov(Y, Yhat) / var(Yhat)`` over the labelled segments.
(ppi_py's weighted ``lam``, used by study 09, centres the weighted terms at the estimate and so ignores
that the Horvitz-Thompson variance is uncentred: with unequal ``pi`` it picks a ``lam`` that widens this
interval.)

**Stratified PPI** (:func:`stratified_ppi`; Fisch et al. 2024, "Stratified prediction-powered
inference for hybrid language model evaluation"; Cochran 1977, section 5.9)::

    theta = lam * mean_all(Yhat) + sum_h W_h mean_labelled,h(r)          W_h = N_h / N
    se^2  = var^(Y) / N + sum_h W_h^2 (1 - n_h/N_h) s_h^2 / n_h          (s_h^2 with ddof = 1)

(``var^(Y)`` as above with the weights ``N_h / n_h``), one ``lam`` for all strata (tuned only when every
stratum holds 50 labels, as :func:`~axon_eval.stats.ppi.ppi_rule` says), and below 50 labels a Student-t
interval with Satterthwaite's df ``(sum c_h)^2 / sum (c_h^2 / (n_h - 1))``, ``c_h`` the stratum's term.
(Study 09 reads a stratified pack through its design weights ``N_h / n_h`` with the weighted PPI++ of
:mod:`axon_eval.stats.ppi`, whose variance also counts the spread of the strata's mean rectifiers:
wider than this one.)

**Labels only** (:func:`labels_only`): the mean of a uniform sample's labels with
:func:`axon_eval.stats.ppi.classical_mean`'s interval (``var(Y) / n``).

**Batch-sequential use**: draw a batch, label it, refit the signal, draw the next. Batch ``b`` draws
``n_b`` segments over all ``N`` with probabilities ``pi^(b)`` fixed by the labels of the earlier batches
(a segment drawn again reuses its label); with ``a_b = n_b / n``::

    theta = lam * mean_all(Yhat) + sum_b a_b (1/N) sum_{S_b} r_i / pi_i^(b)
    se^2  = var^(Y) / N + sum_b a_b^2 (1 - n_b/N) var(u^(b)) / n_b,   u^(b)_i = n_b r_i / (N pi_i^(b))

Each batch's term is unbiased given the earlier batches, so the sum is unbiased (a martingale; Zrnic &
Candes 2024, section 5). For the weighted readers (study 09, ``compare``) the labelled segment ``i``
carries the weight ``w_i = sum_{b drawing i} a_b / pi_i^(b)`` (``1/pi_i`` for one batch), so that
``theta = lam mean_all(Yhat) + (1/N) sum_labelled w_i r_i``: :func:`batch_weights`.

**The planner** (:func:`plan_labels`). For each design, the interval's half-width with ``n`` labels is
``q(n) * sqrt(A + B_d(lam, n) / n)``: ``A = var(Y) / N`` the run's own sampling term (0 for labels
only), ``B_d`` the design's draw variance per label (uniform ``(1 - n/N) var(r)``; stratified ``n
sum_h W_h^2 (1 - n_h/N_h) S_h^2 / n_h``, about ``(sum_h W_h S_h)^2`` under Neyman allocation; active ``(1
- n/N) [(1/N) sum_i r_i^2 / (N p_i) - rbar^2]``; labels only ``var(Y)``), ``lam`` by the rule above (1
below 50 labels, else the value minimising ``B_d``).
What is known of ``Y`` comes from a **pilot** (the labels so far, weighted by their ``1/pi``; a pilot
whose inclusion probabilities are unknown is taken as a simple random sample, and the plan says so) or
from a stated **judge-human correlation** ``rho``: ``E[Y | Yhat] = mean(Yhat) + rho (Yhat -
mean(Yhat))`` with the judge's spread and no bias, and ``Var(Y | Yhat) = var(Yhat) (1 - rho^2)`` (a
mean) or ``m (1 - m)`` (a share, ``m = E[Y | Yhat]``: equal margins, phi coefficient ``rho``). A
stated correlation says nothing about where the judge errs: the active design is then planned as if
its signal were unrelated to the error. The uniform PPI++ variance under a stated correlation is then
``var(Y) [1/N + (1 - n/N)(1 - rho^2) / n] = var(Y) [(1 - rho^2) / n + rho^2 / N]``, exactly the
*effective n* ``n (n + N_u) / (n + (1 - rho^2) N_u)`` of Broska, Howes & van Loon 2024 (``N_u = N - n``
unlabelled; ppi_py's power analysis).

The planned ``n`` is the smallest whose half-width reaches the target with probability
:data:`ASSURANCE` (Kupper & Hafner 1989, Am. Stat. 43:101: planning on the expected width reaches it
about half the time): the estimated variance ``A + B/n`` is taken as ``(A + B/n) chi2_d / d``, ``d``
Satterthwaite's df of the two terms, the run's term on ``n - 1`` df and the draw's on ``d_B = 2 /
(2/(n-1) + kappa/n)`` (``kappa`` the excess kurtosis of the design's per-label terms, at least 0;
Satterthwaite's combination over strata; one df less when ``lam`` is fitted on the labels), and from a
pilot of ``n_p`` labels the planned variance itself as an estimate with ``d_p`` such df, so the margin is
the ``ASSURANCE`` quantile of ``F(d, d_p)`` (``chi2_d /
d`` for a stated correlation). A **difference** between two runs (``detect``) needs ``se <= delta / (z +
z_power)`` (:data:`DETECT_POWER`): paired runs plan the per-pair difference as the figure; independent
runs split it equally, ``sqrt(2)`` narrower each.

Pure: arrays and frames in, frozen records out. The SIMULATED checks of these formulas are in
:mod:`axon_eval.stats.label_budget_sim`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd

from .intervals import CONFIDENCE, z_value
from .ppi import MIN_LABELLED, PLAIN_PPI_LAM, SMALL_SAMPLE_LABELLED

#: The labelling designs, by name.
DESIGNS: tuple[str, ...] = ("uniform", "stratified", "active")
#: The labels-only estimate (uniform sample, no judge), planned beside the designs.
LABELS_ONLY = "labels only"
#: The share of the budget an active design spreads uniformly (the defensive mixture). With any signal
#: the rectifier's variance is at most 1 / MIX_UNIFORM = 2 times uniform sampling's.
MIX_UNIFORM = 0.5
#: A signal below this fraction of its mean counts as this fraction (so a zero signal is not ignored).
SIGNAL_FLOOR = 0.1
#: The fewest labels a stratified design takes from a stratum (its variance needs two).
MIN_PER_STRATUM = 2
#: Probability with which the planned n reaches the target half-width.
ASSURANCE = 0.90
#: Power with which a planned difference is detected (two-sided, at the interval's confidence).
DETECT_POWER = 0.80
#: The fewest labels a model of the absolute error ``|label - judge|`` is fitted on; with fewer the signal
#: is flat (uniform).
MIN_MODEL_LABELS = 10
#: Pseudo-labels shrinking a cell's mean squared error toward the overall one in the error model.
SHRINK_LABELS = 5.0
#: Share of a batch-sequential active budget drawn uniformly first when the signal is a model of the
#: labels (the model needs labels to be fitted on).
FIRST_BATCH_SHARE = 0.5
#: Grid of lam over [0, 1] the planner searches from 50 labels on.
LAM_GRID = np.linspace(0.0, 1.0, 101)


# =============================================================================================
# Inclusion probabilities
# =============================================================================================
def uniform_probabilities(n_population: int, n: int) -> np.ndarray:
    """``pi_i = n / N`` for each of ``N`` segments."""
    _check_budget(n, n_population)
    return np.full(int(n_population), n / n_population)


def _check_budget(n: int, n_population: int) -> None:
    if not (isinstance(n, int | np.integer) and 1 <= n <= n_population):
        raise ValueError(f"the budget must be an integer from 1 to the {n_population} segments, got {n!r}")


def _largest_remainders(quota: np.ndarray, total: int, lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """Integers ``lower <= k <= upper`` summing to ``total``, closest to ``quota`` (largest remainders), with
    the quota of strata held at a bound spread again over the others (Cochran 1977, section 5.5)."""
    quota = np.asarray(quota, dtype=np.float64)
    fixed = np.zeros(len(quota), dtype=bool)
    alloc = np.zeros(len(quota))
    for _ in range(len(quota) + 1):
        free = ~fixed
        rest = total - alloc[fixed].sum()
        q = quota[free]
        share = q / q.sum() * rest if q.sum() > 0 else np.full(free.sum(), rest / max(free.sum(), 1))
        trial = alloc.copy()
        trial[free] = share
        low, high = trial < lower, trial > upper
        if not (low | high).any():
            alloc = trial
            break
        alloc[low] = lower[low]
        alloc[high] = upper[high]
        fixed |= low | high
    base = np.clip(np.floor(alloc + 1e-9), lower, upper).astype(np.int64)
    short = int(total - base.sum())
    order = np.argsort(-(alloc - base), kind="stable")
    for i in order:
        if short <= 0:
            break
        if base[i] < upper[i]:
            base[i] += 1
            short -= 1
    return base


def neyman_allocation(population: Sequence[int], sd: Sequence[float], n: int,
                      min_per_stratum: int = MIN_PER_STRATUM) -> np.ndarray:
    """Labels per stratum: ``n_h = n N_h S_h / sum_k N_k S_k`` (Neyman; Cochran 1977, section 5.5), at least
    ``min(min_per_stratum, N_h)`` and at most ``N_h``, integers summing to ``n`` by largest remainders.
    ``S_h`` of zero everywhere (or all equal) gives the proportional allocation. Needs ``n`` at least the
    sum of the minima."""
    pop = np.asarray(population, dtype=np.int64)
    s = np.asarray(sd, dtype=np.float64)
    if pop.shape != s.shape or pop.ndim != 1 or not len(pop):
        raise ValueError(f"population and sd must be two equal-length lists of strata, got {pop.shape} and {s.shape}")
    if (pop < 1).any() or not np.isfinite(s).all() or (s < 0).any():
        raise ValueError("every stratum needs at least one segment and a finite SD >= 0")
    lower = np.minimum(min_per_stratum, pop)
    if not lower.sum() <= n <= pop.sum():
        raise ValueError(f"a budget of {n} cannot give each of {len(pop)} strata its minimum "
                         f"({int(lower.sum())} in all) within the {int(pop.sum())} segments")
    quota = pop * s if (s > 0).any() else pop.astype(np.float64)
    return _largest_remainders(quota * (n / quota.sum()), int(n), lower.astype(np.float64), pop.astype(np.float64))


def stratified_probabilities(strata: Sequence[Any], allocation: Mapping[Any, int]) -> np.ndarray:
    """``pi_i = n_h / N_h`` for each segment of stratum ``h`` (``allocation``: stratum -> ``n_h``)."""
    arr = pd.Series(np.asarray(strata).astype(str))
    sizes = arr.value_counts()
    alloc = {str(k): int(v) for k, v in allocation.items()}
    missing = sorted(set(sizes.index) - set(alloc))
    if missing:
        raise ValueError(f"the allocation names no count for stratum/strata {missing}")
    bad = [h for h, k in alloc.items() if h in sizes.index and not 0 < k <= sizes[h]]
    if bad:
        raise ValueError(f"stratum {bad[0]!r} is allocated {alloc[bad[0]]} labels but holds {sizes[bad[0]]} segments")
    return arr.map(lambda h: alloc[h] / sizes[h]).to_numpy(dtype=np.float64)


def signal_intensity(signal: Any, *, mix: float = MIX_UNIFORM, floor: float = SIGNAL_FLOOR) -> np.ndarray:
    """``N p_i`` of the active design before capping: ``mix + (1 - mix) s~_i / mean(s~)`` (mean 1; see the
    module docstring). A missing signal counts as the mean; a constant (or all-missing) signal gives 1s."""
    s = np.asarray(signal, dtype=np.float64)
    if s.ndim != 1 or not len(s):
        raise ValueError(f"the signal must be one value per segment, got shape {s.shape}")
    if not 0 <= mix <= 1 or floor < 0:
        raise ValueError(f"mix must be in [0, 1] and floor >= 0 (got {mix}, {floor})")
    if (s[np.isfinite(s)] < 0).any():
        raise ValueError("an uncertainty signal cannot be negative (a spread, an SD or a predicted error)")
    finite = np.isfinite(s)
    if not finite.any() or np.nanmax(s) <= 0:
        return np.ones(len(s))
    mean = s[finite].mean()
    s = np.where(finite, s, mean)
    s = np.maximum(s, floor * mean)
    return mix + (1 - mix) * s / s.mean()


def _cap(intensity: np.ndarray, n: int) -> np.ndarray:
    """``pi = n * intensity / sum(intensity)`` with probabilities above 1 set to 1 and their excess spread
    over the others in proportion (repeated until none exceeds 1)."""
    pi = intensity * (n / intensity.sum())
    certain = np.zeros(len(pi), dtype=bool)
    while (pi > 1 + 1e-12).any():
        certain |= pi >= 1 - 1e-12
        rest = n - certain.sum()
        free = ~certain
        pi = np.where(certain, 1.0, intensity * (rest / intensity[free].sum()))
    return np.minimum(pi, 1.0)


def active_probabilities(signal: Any, n: int, *, mix: float = MIX_UNIFORM, floor: float = SIGNAL_FLOOR) -> np.ndarray:
    """The active design's inclusion probabilities for a budget of ``n`` (module docstring): proportional
    to the floored signal mixed with uniform, capped at 1, summing to ``n``."""
    intensity = signal_intensity(signal, mix=mix, floor=floor)
    _check_budget(n, len(intensity))
    return _cap(intensity, n)


def useless_signal_inflation(pi: Any) -> float:
    """``mean(pi) * mean(1 / pi)``: how many times uniform sampling's variance the rectifier term has when
    the signal is unrelated to the judge's error (1 for uniform; at most ``1 / MIX_UNIFORM``)."""
    p = np.asarray(pi, dtype=np.float64)
    return float(p.mean() * (1.0 / p).mean())


# =============================================================================================
# The draw
# =============================================================================================
def systematic_sample(pi: Any, rng: np.random.Generator, *, strata: Any = None, size: int | None = None) -> np.ndarray:
    """Randomised systematic sampling with inclusion probabilities ``pi`` (module docstring): a boolean
    mask of the drawn segments, ``(N,)``, or ``(size, N)`` for ``size`` independent draws. ``pi`` is
    ``(N,)`` or ``(size, N)`` and must sum to an integer (per row). With ``strata`` (``(N,)`` codes) the
    random order is taken within strata, strata kept together: with ``pi = n_h / N_h`` each stratum
    gives exactly ``n_h``."""
    p = np.asarray(pi, dtype=np.float64)
    reps = 1 if size is None else int(size)
    p2 = np.broadcast_to(p, (reps, p.shape[-1])) if p.ndim == 1 else p
    if p2.shape[0] != reps:
        raise ValueError(f"pi has {p2.shape[0]} rows for {reps} draws")
    if (p2 <= 0).any() or (p2 > 1 + 1e-9).any():
        raise ValueError("inclusion probabilities must be in (0, 1]")
    totals = p2.sum(-1)
    n = np.rint(totals)
    if np.abs(totals - n).max() > 1e-6:
        raise ValueError(f"inclusion probabilities must sum to a whole number of labels, got {totals.max():.6f}")
    keys = rng.random(p2.shape)
    if strata is not None:
        st = np.asarray(strata)
        codes = st if np.issubdtype(st.dtype, np.integer) else \
            np.unique(st.astype(str), return_inverse=True)[1].reshape(st.shape)
        keys = keys + np.broadcast_to(codes, p2.shape)  # strata kept together, random order within
    order = np.argsort(keys, axis=-1, kind="stable")
    ps = np.take_along_axis(p2, order, axis=-1)
    cum = np.cumsum(ps, axis=-1)
    cum *= (n / cum[:, -1])[:, None]
    prev = np.concatenate([np.zeros((reps, 1)), cum[:, :-1]], axis=-1)
    u = rng.random((reps, 1))
    picked_sorted = np.floor(cum - u + 1e-12) > np.floor(prev - u + 1e-12)
    mask = np.zeros_like(picked_sorted)
    np.put_along_axis(mask, order, picked_sorted, axis=-1)
    return mask[0] if size is None else mask


# =============================================================================================
# Estimators
# =============================================================================================
@dataclass(frozen=True)
class DesignEstimate:
    """One corrected mean under a labelling design: ``estimate``, ``se``, the interval ``lo``..``hi`` at
    ``confidence`` (normal, or Student-t with ``df``), the ``lam`` used, ``n_labelled`` draws, the ``N``
    judged segments, the ``design`` and the ``method`` in words, and a ``note``."""

    design: str
    estimate: float
    se: float
    lo: float
    hi: float
    lam: float
    n_labelled: int
    n_population: int
    confidence: float
    df: float | None
    method: str
    note: str = ""

    @property
    def half_width(self) -> float:
        return (self.hi - self.lo) / 2

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "half_width": self.half_width}


def _quantile(df: np.ndarray | float | None, confidence: float) -> np.ndarray:
    """Two-sided quantile: Student-t where ``df`` is finite, else normal."""
    from scipy.stats import t

    z = z_value(confidence)
    if df is None:
        return np.asarray(z)
    d = np.asarray(df, dtype=np.float64)
    return np.where(np.isfinite(d), t.ppf(0.5 + confidence / 2, np.where(np.isfinite(d), d, 1.0)), z)


def kish_n(w: np.ndarray) -> np.ndarray:
    """Kish's effective sample size ``(sum w)^2 / sum w^2`` along the last axis."""
    return w.sum(-1) ** 2 / (w ** 2).sum(-1)


def _weighted_var(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Row-wise variance of ``x`` weighted by ``w`` (``ddof=0``, Hajek: centred at the weighted mean)."""
    m = (w * x).sum(-1, keepdims=True) / w.sum(-1, keepdims=True)
    return (w * (x - m) ** 2).sum(-1) / w.sum(-1)


def _draw_weights(pi: np.ndarray, batches: Sequence[int] | None) -> np.ndarray:
    """Each draw's weight ``a_b / pi_i^(b)`` (``1 / pi_i`` for one batch), columns in batch order."""
    n = pi.shape[-1]
    sizes = [n] if batches is None else list(batches)
    a = np.concatenate([np.full(nb, nb / n) for nb in sizes])
    return a / pi


def population_term(y: np.ndarray, yhat: np.ndarray, w: np.ndarray, var_all: np.ndarray, n_population: int,
                    lam: np.ndarray) -> np.ndarray:
    """``var^(Y) / N``, the run's own sampling term (module docstring): ``(var_w(Y) + lam^2 (var_all(Yhat) -
    var_w(Yhat))) / N``, at least 0, over ``R`` samples (``y``/``yhat``/``w`` ``(R, n)``)."""
    v = _weighted_var(y, w) + lam ** 2 * (var_all - _weighted_var(yhat, w))
    return np.maximum(v, 0.0) / n_population


def ht_lam(y: np.ndarray, yhat: np.ndarray, pi: np.ndarray, var_all: np.ndarray, n_population: int,
           batches: Sequence[int] | None = None) -> np.ndarray:
    """The power-tuned ``lam`` of the inverse-probability-weighted estimator over ``R`` samples: the value
    minimising its estimated variance (module docstring) ``[var_w(Y) + lam^2 (var_all - var_w(Yhat))] / N
    + sum_b a_b^2 var(c (Y - lam Yhat)) / n_b`` (``c_i = n_b / (N pi_i)``, variances with ``ddof=0``),
    clipped to [0, 1]::

        lam = sum_b k_b cov(c Y, c Yhat) / (sum_b k_b var(c Yhat) + (var_all - var_w(Yhat)) / N),  k_b = a_b^2 / n_b

    A sample whose judge values do not vary gets ``lam = 0``."""
    n = y.shape[-1]
    sizes = [n] if batches is None else list(batches)
    num = np.zeros(y.shape[0])
    den = np.zeros(y.shape[0])
    start = 0
    for nb in sizes:
        sl = slice(start, start + nb)
        start += nb
        c = nb / (n_population * pi[:, sl])
        cy, ch = c * y[:, sl], c * yhat[:, sl]
        k = (nb / n) ** 2 / nb * max(1.0 - nb / n_population, 0.0)
        num += k * ((cy - cy.mean(-1, keepdims=True)) * (ch - ch.mean(-1, keepdims=True))).mean(-1)
        den += k * ch.var(-1)
    den = den + (var_all - _weighted_var(yhat, _draw_weights(pi, batches))) / n_population
    with np.errstate(invalid="ignore", divide="ignore"):
        lam = np.where(den > 0, num / den, 0.0)
    return np.clip(np.nan_to_num(lam), 0.0, 1.0)


def stratified_lam(y: np.ndarray, yhat: np.ndarray, codes: np.ndarray, n_strata: int, share: np.ndarray,
                   var_all: np.ndarray, n_population: int) -> np.ndarray:
    """The power-tuned ``lam`` of stratified PPI over ``R`` samples: the value minimising its estimated
    variance ``[var_w(Y) + lam^2 (var_all - var_w(Yhat))] / N + sum_h W_h^2 var_h(Y - lam Yhat) / n_h``
    (within-stratum variances with ``ddof=1``, ``w = N_h / n_h``), clipped to [0, 1]."""
    reps = y.shape[0]
    idx = (codes + n_strata * np.arange(reps)[:, None]).ravel()
    size = reps * n_strata

    def sums(values: np.ndarray) -> np.ndarray:
        return np.bincount(idx, weights=values.ravel(), minlength=size).reshape(reps, n_strata)

    cnt = np.bincount(idx, minlength=size).reshape(reps, n_strata).astype(np.float64)
    sy, sh, syh, shh = sums(y), sums(yhat), sums(y * yhat), sums(yhat * yhat)
    w = np.take_along_axis(share / np.maximum(cnt, 1), codes, axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        ok = cnt > 1
        cov = np.where(ok, (syh - sy * sh / np.maximum(cnt, 1)) / (cnt - 1), 0.0)
        var = np.where(ok, (shh - sh * sh / np.maximum(cnt, 1)) / (cnt - 1), 0.0)
        k = np.where(ok, share ** 2 / np.maximum(cnt, 1) * np.clip(1 - cnt / np.maximum(share * n_population, 1), 0, 1), 0.0)
        den = (k * var).sum(-1) + (var_all - _weighted_var(yhat, w)) / n_population
        lam = np.where(den > 0, (k * cov).sum(-1) / den, 0.0)
    return np.clip(np.nan_to_num(lam), 0.0, 1.0)


def ht_kernel(y: np.ndarray, yhat: np.ndarray, pi: np.ndarray, mean_all: np.ndarray, var_all: np.ndarray,
              n_population: int, lam: np.ndarray, ddof: int, batches: Sequence[int] | None = None
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Vectorised inverse-probability-weighted PPI++ over ``R`` samples: ``y``/``yhat``/``pi`` ``(R, n)``,
    the judge's mean and variance (``ddof=0``) over all ``N`` segments ``(R,)``, ``lam`` ``(R,)``;
    ``ddof`` of the draw variance. ``batches``: the sizes of consecutive batches along the columns
    (``None``: one). Returns ``(estimate, se, population term)`` by the module docstring's formulas."""
    n = y.shape[-1]
    sizes = [n] if batches is None else list(batches)
    if sum(sizes) != n:
        raise ValueError(f"batch sizes {sizes} do not add up to the {n} labelled values")
    r = y - lam[:, None] * yhat
    rect = np.zeros(y.shape[0])
    var = np.zeros(y.shape[0])
    start = 0
    for nb in sizes:
        sl = slice(start, start + nb)
        start += nb
        u = nb * r[:, sl] / (n_population * pi[:, sl])
        a = nb / n
        rect += a * u.mean(-1)
        fpc = max(1.0 - nb / n_population, 0.0)
        var += a * a * fpc * (((u - u.mean(-1, keepdims=True)) ** 2).sum(-1) / (nb - ddof) / nb if nb > ddof else np.nan)
    pop = population_term(y, yhat, _draw_weights(pi, batches), var_all, n_population, lam)
    return lam * mean_all + rect, np.sqrt(var + pop), pop


def batch_weights(pi_by_batch: Sequence[np.ndarray], drawn_by_batch: Sequence[np.ndarray]) -> np.ndarray:
    """Each segment's design weight after several batches (module docstring): ``w_i = sum_b a_b / pi_i^(b)``
    over the batches ``b`` that drew it, ``a_b = n_b / n``; 0 for a segment never drawn. ``pi_by_batch``
    and ``drawn_by_batch``: one ``(N,)`` array of probabilities and one boolean mask per batch."""
    if len(pi_by_batch) != len(drawn_by_batch) or not pi_by_batch:
        raise ValueError("give one probability array and one drawn mask per batch")
    sizes = [int(np.asarray(m, dtype=bool).sum()) for m in drawn_by_batch]
    total = sum(sizes)
    w = np.zeros(len(np.asarray(pi_by_batch[0])))
    for p, m, nb in zip(pi_by_batch, drawn_by_batch, sizes, strict=True):
        m = np.asarray(m, dtype=bool)
        w[m] += (nb / total) / np.asarray(p, dtype=np.float64)[m]
    return w


def ht_ppi(y_labelled: Any, yhat_labelled: Any, pi_labelled: Any, yhat_all: Any, *, lam: float | None = None,
           batches: Sequence[int] | None = None, confidence: float = CONFIDENCE, design: str = "active") -> DesignEstimate:
    """The inverse-probability-weighted PPI++ mean of the module docstring for one labelled sample.

    ``y_labelled``/``yhat_labelled``: the labelled segments' human and judge values, ``pi_labelled`` their
    inclusion probabilities (for batches: each draw's own batch probability, the columns in batch order,
    ``batches`` the batch sizes; a segment drawn in two batches appears twice). ``yhat_all``: the judge's
    values of every judged segment (labelled or not). ``lam=None``: the rule of
    :func:`axon_eval.stats.ppi.ppi_rule` (1 below 50 labels, else tuned); an explicit ``lam`` is used as
    given. With equal ``pi = n/N`` the point estimate is uniform PPI++'s over every judged segment (ppi_py's
    ``ppi_mean_pointestimate(Y, Yhat, Yhat_all, lam)``).
    """
    y = np.asarray(y_labelled, dtype=np.float64)
    yh = np.asarray(yhat_labelled, dtype=np.float64)
    pi = np.asarray(pi_labelled, dtype=np.float64)
    ya = np.asarray(yhat_all, dtype=np.float64)
    if not (y.ndim == yh.ndim == pi.ndim == 1 and len(y) == len(yh) == len(pi)):
        raise ValueError(f"labelled arrays must be one-dimensional and the same length: {y.shape}, {yh.shape}, {pi.shape}")
    if len(y) < MIN_LABELLED:
        raise ValueError(f"need at least {MIN_LABELLED} labelled values, got {len(y)}")
    for name, arr in (("y_labelled", y), ("yhat_labelled", yh), ("yhat_all", ya)):
        if not np.isfinite(arr).all():
            raise ValueError(f"{name} holds missing values; drop them first (a null is not a 0)")
    if not ((pi > 0) & (pi <= 1)).all():
        raise ValueError("inclusion probabilities must be in (0, 1]")
    if lam is not None and not 0 <= lam <= 1:
        raise ValueError(f"lam must be in [0, 1] or None, got {lam!r}")
    n, big_n = len(y), len(ya)
    w = 1.0 / pi
    small = n < SMALL_SAMPLE_LABELLED
    if lam is not None:
        lam_arr = np.array([float(lam)])
    elif small:
        lam_arr = np.array([PLAIN_PPI_LAM])
    else:
        lam_arr = ht_lam(y[None], yh[None], pi[None], np.array([ya.var()]), big_n, batches)
    ddof = 1 if small else 0
    est, se, _ = ht_kernel(y[None], yh[None], pi[None], np.array([ya.mean()]), np.array([ya.var()]), big_n,
                           lam_arr, ddof, batches)
    df = max(1.0, float(kish_n(w)) - 1.0) if small else None
    q = float(_quantile(df, confidence))
    e, s = float(est[0]), float(se[0])
    how = f"Student-t, {df:.3g} df" if df is not None else "normal"
    method = (f"inverse-probability-weighted PPI (lam = {lam_arr[0]:.3g}), {how}"
              + (f", {len(batches)} batches" if batches is not None and len(batches) > 1 else ""))
    return DesignEstimate(design, e, s, e - q * s, e + q * s, float(lam_arr[0]), n, big_n, confidence, df, method)


def stratified_kernel(y: np.ndarray, yhat: np.ndarray, codes: np.ndarray, n_strata: int, share: np.ndarray,
                      mean_all: np.ndarray, var_all: np.ndarray, n_population: int, lam: np.ndarray
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Vectorised stratified PPI over ``R`` samples: ``y``/``yhat``/``codes`` ``(R, n)`` (stratum codes
    ``0..H-1``), ``share`` the strata's population shares ``W_h`` ``(R, H)``. Returns ``(estimate, se,
    satterthwaite_df, population term)`` (module docstring); a stratum with one label adds no variance."""
    reps = y.shape[0]
    r = y - lam[:, None] * yhat
    idx = (codes + n_strata * np.arange(reps)[:, None]).ravel()
    size = reps * n_strata
    cnt = np.bincount(idx, minlength=size).reshape(reps, n_strata).astype(np.float64)
    s1 = np.bincount(idx, weights=r.ravel(), minlength=size).reshape(reps, n_strata)
    s2 = np.bincount(idx, weights=(r ** 2).ravel(), minlength=size).reshape(reps, n_strata)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_h = np.where(cnt > 0, s1 / np.maximum(cnt, 1), 0.0)
        var_h = np.where(cnt > 1, (s2 - cnt * mean_h ** 2) / np.maximum(cnt - 1, 1), 0.0)
        var_h = np.maximum(var_h, 0.0)
        fpc = np.clip(1 - cnt / np.maximum(share * n_population, 1), 0.0, 1.0)
        c = np.where(cnt > 1, share ** 2 * fpc * var_h / np.maximum(cnt, 1), 0.0)
        v = c.sum(-1)
        df = v ** 2 / np.where(cnt > 1, c ** 2 / np.maximum(cnt - 1, 1), 0.0).sum(-1)
    w = np.take_along_axis(share / np.maximum(cnt, 1), codes, axis=-1)
    pop = population_term(y, yhat, w, var_all, n_population, lam)
    est = lam * mean_all + (share * mean_h).sum(-1)
    return est, np.sqrt(v + pop), df, pop


def stratified_ppi(y_labelled: Any, yhat_labelled: Any, strata_labelled: Any, yhat_all: Any, strata_all: Any, *,
                   lam: float | None = None, confidence: float = CONFIDENCE) -> DesignEstimate:
    """Stratified PPI (module docstring) for one labelled sample: the labelled segments' human and judge
    values and strata, and every judged segment's judge value and stratum. Every stratum of the run needs
    a label, and two unless it holds one segment. ``lam=None``: 1 unless every stratum holds
    :data:`~axon_eval.stats.ppi.SMALL_SAMPLE_LABELLED` labels, then tuned with the weights ``N_h / n_h``."""
    y = np.asarray(y_labelled, dtype=np.float64)
    yh = np.asarray(yhat_labelled, dtype=np.float64)
    ya = np.asarray(yhat_all, dtype=np.float64)
    hl = np.asarray(strata_labelled).astype(str)
    ha = np.asarray(strata_all).astype(str)
    if not (len(y) == len(yh) == len(hl)) or len(ya) != len(ha):
        raise ValueError("labelled values and strata, and all judge values and strata, must pair up")
    if len(y) < MIN_LABELLED or not (np.isfinite(y).all() and np.isfinite(yh).all() and np.isfinite(ya).all()):
        raise ValueError(f"need at least {MIN_LABELLED} labelled values and no missing value")
    names, codes_all = np.unique(ha, return_inverse=True)
    unknown = sorted(set(hl) - set(names))
    if unknown:
        raise ValueError(f"labelled segment(s) in stratum/strata {unknown} that no judged segment is in")
    codes = np.searchsorted(names, hl)
    pop = np.bincount(codes_all, minlength=len(names))
    cnt = np.bincount(codes, minlength=len(names))
    short = [str(names[h]) for h in range(len(names)) if cnt[h] < min(2, pop[h])]
    if short:
        raise ValueError(f"stratum/strata {short} hold fewer than two labels; stratified PPI needs two per stratum "
                         f"(one when the stratum has a single segment)")
    share = pop / pop.sum()
    small = cnt.min() < SMALL_SAMPLE_LABELLED
    if lam is not None:
        lam_arr = np.array([float(lam)])
    elif small:
        lam_arr = np.array([PLAIN_PPI_LAM])
    else:
        lam_arr = stratified_lam(y[None], yh[None], codes[None], len(names), share[None], np.array([ya.var()]), len(ya))
    est, se, df, _ = stratified_kernel(y[None], yh[None], codes[None], len(names), share[None],
                                       np.array([ya.mean()]), np.array([ya.var()]), len(ya), lam_arr)
    dfv = float(df[0]) if len(y) < SMALL_SAMPLE_LABELLED and np.isfinite(df[0]) else None
    q = float(_quantile(dfv, confidence))
    e, s = float(est[0]), float(se[0])
    how = "normal" if dfv is None else f"Student-t, {dfv:.3g} df (Satterthwaite)"
    return DesignEstimate("stratified", e, s, e - q * s, e + q * s, float(lam_arr[0]), len(y), len(ya), confidence,
                          dfv, f"stratified PPI (lam = {lam_arr[0]:.3g}), {how}")


def uniform_ppi(y_labelled: Any, yhat_labelled: Any, yhat_all: Any, *, lam: float | None = None,
                confidence: float = CONFIDENCE) -> DesignEstimate:
    """Uniform PPI++: :func:`ht_ppi` with ``pi = n / N`` (the imputed term over every judged segment)."""
    n, big_n = len(np.asarray(y_labelled)), len(np.asarray(yhat_all))
    out = ht_ppi(y_labelled, yhat_labelled, np.full(n, n / big_n), yhat_all, lam=lam, confidence=confidence,
                 design="uniform")
    return DesignEstimate(**{**asdict(out), "method": out.method.replace("inverse-probability-weighted PPI", "PPI")})


def labels_only(y_labelled: Any, *, pi_labelled: Any = None, n_population: int | None = None,
                confidence: float = CONFIDENCE) -> DesignEstimate:
    """The labels-only mean (no judge): the mean of the labels with :func:`axon_eval.stats.ppi.classical_mean`'s
    interval, or with inclusion probabilities the Horvitz-Thompson mean ``(1/N) sum y_i / pi_i`` with the
    with-replacement variance plus ``var_w(Y) / N`` (:func:`ht_ppi` with ``lam = 0``)."""
    y = np.asarray(y_labelled, dtype=np.float64)
    if pi_labelled is None:
        from .ppi import classical_mean

        res = classical_mean(y, confidence=confidence)
        return DesignEstimate(LABELS_ONLY, res.estimate, res.se, res.lo, res.hi, 0.0, len(y), len(y), confidence,
                              res.df, "labels only, " + ("normal" if res.df is None else f"Student-t, {res.df:.3g} df"))
    if n_population is None:
        raise ValueError("give n_population with pi_labelled")
    out = ht_ppi(y, np.zeros(len(y)), pi_labelled, np.zeros(int(n_population)), lam=0.0, confidence=confidence,
                 design=LABELS_ONLY)
    return DesignEstimate(**{**asdict(out), "method": "labels only, " + out.method.split(", ", 1)[1]})


# =============================================================================================
# Signals
# =============================================================================================
def error_model(cells_all: Any, cells_labelled: Any, residual: Any, weights: Any = None, *,
                shrink: float = SHRINK_LABELS, min_labels: int = MIN_MODEL_LABELS) -> np.ndarray:
    """A model of ``|label - judge|`` fitted on the labels so far, as a signal for every segment: the
    root mean square of the labelled residuals ``Y - Yhat`` in each cell (e.g. the judge's band, or bins
    of another signal), shrunk toward the overall one with ``shrink`` pseudo-labels::

        signal_c = sqrt((sum_{i in c} w_i r_i^2 + shrink * mean_w(r^2)) / (sum_{i in c} w_i + shrink))

    (``w`` the labels' design weights normalised to sum to their number). With fewer than ``min_labels``
    labels the signal is flat (uniform sampling). ``cells_all``: every segment's cell; ``cells_labelled``,
    ``residual``: the labelled segments'."""
    ca = pd.Series(np.asarray(cells_all).astype(str))
    cl = np.asarray(cells_labelled).astype(str)
    r = np.asarray(residual, dtype=np.float64)
    if len(cl) != len(r):
        raise ValueError("cells_labelled and residual must pair up")
    keep = np.isfinite(r)
    cl, r = cl[keep], r[keep]
    w = np.ones(len(r)) if weights is None else np.asarray(weights, dtype=np.float64)[keep]
    if len(r) < min_labels:
        return np.ones(len(ca))
    w = w / w.sum() * len(w)
    overall = float((w * r ** 2).sum() / w.sum())
    frame = pd.DataFrame({"cell": cl, "wr2": w * r ** 2, "w": w}).groupby("cell")[["wr2", "w"]].sum()
    per_cell = np.sqrt((frame["wr2"] + shrink * overall) / (frame["w"] + shrink))
    return ca.map(per_cell).fillna(math.sqrt(overall)).to_numpy(dtype=np.float64)


def panel_spread(members: pd.DataFrame, value: str = "score") -> pd.Series:
    """The spread of panel members (study 10's members table: ``segment_id``, ``member``, ``value``): per
    segment the SD (``ddof=1``) of the members' values, averaged over samples first; ``NaN`` with fewer
    than two members."""
    need = {"segment_id", "member", value}
    if not need <= set(members.columns):
        raise ValueError(f"a members table needs the columns {sorted(need)}; has {sorted(members.columns)}")
    per = members.groupby(["segment_id", "member"])[value].mean().unstack("member")
    return per.std(axis=1, ddof=1).rename("signal")


# =============================================================================================
# The planner
# =============================================================================================
@dataclass(frozen=True)
class WorkingModel:
    """What the planner takes the human values to be: units with population shares ``omega`` (summing to
    1), judge values ``yhat``, and the raw moments of their human values (``moments[k-1] = E[Y^k]``,
    ``k = 1..4``). From a pilot the units are its labels (``dof``: Kish's effective labels; ``positions``:
    their positions among the run's segments, for their strata and signal); from a stated correlation every
    judged segment (``dof`` infinite, ``positions`` ``None``). ``source`` says which, in words."""

    omega: np.ndarray
    yhat: np.ndarray
    moments: np.ndarray
    dof: float
    source: str
    notes: tuple[str, ...] = ()
    positions: np.ndarray | None = None


def pilot_model(y: Any, yhat: Any, positions: Any, weights: Any = None, *, pilot_design: str | None = None
                ) -> WorkingModel:
    """The working model of a pilot: its labels (human ``y``, judge ``yhat``, their ``positions`` among the
    run's judged segments) weighted by their design weights ``1/pi`` (``None``: unknown inclusion
    probabilities, taken as uniform and said in ``notes``). Labels without a value on both sides are left out."""
    y = np.asarray(y, dtype=np.float64)
    yh = np.asarray(yhat, dtype=np.float64)
    pos = np.asarray(positions, dtype=np.int64)
    if not y.shape == yh.shape == pos.shape or y.ndim != 1:
        raise ValueError(f"y, yhat and positions must pair up, got {y.shape}, {yh.shape}, {pos.shape}")
    keep = np.isfinite(y) & np.isfinite(yh)
    notes = []
    if weights is None:
        w = np.ones(int(keep.sum()))
        notes.append("the pilot's inclusion probabilities are unknown: it is treated as a simple random sample")
    else:
        w = np.asarray(weights, dtype=np.float64)[keep]
        if not (np.isfinite(w).all() and (w > 0).all()):
            raise ValueError("pilot weights must be finite and > 0 (1 / inclusion probability)")
    y, yh, pos = y[keep], yh[keep], pos[keep]
    if len(y) < MIN_LABELLED + 1:
        raise ValueError(f"a pilot needs at least {MIN_LABELLED + 1} labels with values, got {len(y)}")
    moments = np.vstack([y, y ** 2, y ** 3, y ** 4])
    src = f"pilot of {len(y)} labels" + (f" ({pilot_design})" if pilot_design else "")
    return WorkingModel(w / w.sum(), yh, moments, float(kish_n(w)), src, tuple(notes), pos)


def correlation_model(yhat_all: Any, correlation: float, kind: str) -> WorkingModel:
    """The working model of a stated judge-human ``correlation`` over every judged segment (module
    docstring): ``E[Y | Yhat] = mean + rho (Yhat - mean)``, normal with variance ``var(Yhat)(1 - rho^2)``
    for a mean, Bernoulli for a share."""
    if not -1 < correlation < 1:
        raise ValueError(f"the correlation must be strictly between -1 and 1, got {correlation!r}")
    yh = np.asarray(yhat_all, dtype=np.float64)
    mu = yh.mean()
    m = mu + correlation * (yh - mu)
    if kind == "share":
        m = np.clip(m, 0.0, 1.0)
        moments = np.vstack([m, m, m, m])  # Y in {0, 1}: E[Y^k] = P(Y = 1)
    elif kind == "mean":
        v = yh.var() * (1 - correlation ** 2)
        moments = np.vstack([m, m ** 2 + v, m ** 3 + 3 * m * v, m ** 4 + 6 * m ** 2 * v + 3 * v ** 2])
    else:
        raise ValueError(f"kind must be 'mean' or 'share', got {kind!r}")
    src = (f"stated judge-human correlation {correlation:g} (human spread = the judge's, no bias, errors the "
           "same size everywhere)")
    note = ("a stated correlation says nothing about where the judge errs: the active design is planned as if its "
            "signal were unrelated to the error")
    return WorkingModel(np.full(len(yh), 1 / len(yh)), yh, moments, math.inf, src, (note,))


def _power_sums(omega: np.ndarray, yhat: np.ndarray, moments: np.ndarray, rel: np.ndarray | None) -> np.ndarray:
    """``T[k, j] = sum_i q_i yhat_i^j E[Y^(k-j)] / rel_i^k`` (``q`` = omega * rel renormalised: the draw
    distribution; ``rel`` the relative draw intensity ``N p_i``, ``None`` for uniform) so that the raw
    moments of the per-label term ``x = r / rel`` are polynomials in ``lam``:
    ``E x^k = sum_j C(k, j) (-lam)^j T[k, j]``."""
    rl = np.ones(len(omega)) if rel is None else rel
    q = omega * rl
    q = q / q.sum()
    mom = np.vstack([np.ones(len(omega)), moments])
    t = np.zeros((5, 5))
    for k in range(1, 5):
        base = q / rl ** k
        for j in range(k + 1):
            t[k, j] = float((base * yhat ** j * mom[k - j]).sum())
    return t


def _moments_at(t: np.ndarray, lam: float) -> tuple[float, float]:
    """``(variance, excess kurtosis)`` of the per-label term at ``lam`` from :func:`_power_sums`."""
    raw = [sum(math.comb(k, j) * (-lam) ** j * t[k, j] for j in range(k + 1)) for k in range(1, 5)]
    m1, m2, m3, m4 = raw
    var = max(m2 - m1 ** 2, 0.0)
    c4 = m4 - 4 * m1 * m3 + 6 * m1 ** 2 * m2 - 3 * m1 ** 4
    return var, (c4 / var ** 2 - 3 if var > 1e-300 else 0.0)


def _variance_at(t: np.ndarray, lam: np.ndarray) -> np.ndarray:
    """The per-label term's variance at each ``lam`` (``E x = T10 - lam T11``, ``E x^2 = T20 - 2 lam T21 +
    lam^2 T22``)."""
    return np.maximum(t[2, 0] - 2 * lam * t[2, 1] + lam ** 2 * t[2, 2] - (t[1, 0] - lam * t[1, 1]) ** 2, 0.0)


def _df(n: float, kurt: float) -> float:
    """Effective df of a variance estimated from ``n`` terms of excess kurtosis ``kurt`` (taken >= 0)."""
    if n <= 1:
        return math.nan
    return 2.0 / (2.0 / (n - 1) + max(kurt, 0.0) / n)


def _satterthwaite(c: np.ndarray, df: np.ndarray) -> float:
    """Satterthwaite's df of ``sum c_h`` with ``c_h`` on ``df_h`` df (terms with no df add none)."""
    ok = np.isfinite(df) & (df > 0) & (c > 0)
    if not ok.any():
        return math.nan
    return float(c.sum() ** 2 / (c[ok] ** 2 / df[ok]).sum())


def _margin(d: float, d_pilot: float) -> float:
    """The :data:`ASSURANCE` quantile of the future variance estimate over the planned one: ``F(d, d_p)``
    (``chi2_d / d`` when the planned one is exact)."""
    from scipy.stats import chi2, f

    if not math.isfinite(d) or d <= 0:
        return math.inf
    if not math.isfinite(d_pilot):
        return float(chi2.ppf(ASSURANCE, d) / d)
    return float(f.ppf(ASSURANCE, d, max(d_pilot, 1.0)))


@dataclass(frozen=True)
class DesignPlan:
    """The planned labels of one design: ``n`` (``None`` when even every segment labelled does not reach
    the target), the half-width reached at ``n`` with the :data:`ASSURANCE` margin (``half_width``) and on
    average (``expected_half_width``), the ``lam`` planned with, the stratified ``allocation`` (stratum ->
    labels), and a ``note``."""

    design: str
    n: int | None
    half_width: float
    expected_half_width: float
    lam: float
    allocation: dict[str, int] | None = None
    note: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class LabelPlan:
    """Labels needed for one figure under each design (:func:`plan_labels`): the ``figure`` and its
    ``kind``, the ``target_half_width``, ``confidence`` and ``assurance``, the run's ``n_population``
    judged segments, the ``source`` of what is known about the human values, the ``designs`` (labels only
    first), the active design's ``useless_signal_inflation``, the ``pilot_labels`` and ``notes``."""

    figure: str
    kind: str
    target_half_width: float
    confidence: float
    assurance: float
    n_population: int
    source: str
    designs: tuple[DesignPlan, ...]
    useless_signal_inflation: float | None
    pilot_labels: int = 0
    notes: tuple[str, ...] = ()

    def design(self, name: str) -> DesignPlan:
        """The plan of design ``name``."""
        return next(d for d in self.designs if d.design == name)

    def table(self) -> pd.DataFrame:
        """One row per design: ``design``, ``n``, ``half_width``, ``expected_half_width``, ``lam``,
        ``allocation``, ``note``."""
        return pd.DataFrame([d.as_dict() for d in self.designs])

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["designs"] = {d.design: d.as_dict() for d in self.designs}
        out["notes"] = list(self.notes)
        return out


class _Engine:
    """The half-width of one design as a function of ``n`` under a working model (the planner's engine)."""

    def __init__(self, name: str, model: WorkingModel, yhat_all: np.ndarray, strata_all: np.ndarray,
                 intensity: np.ndarray | None, confidence: float):
        self.name, self.model, self.conf = name, model, confidence
        self.big_n = len(yhat_all)
        self.var_all = float(yhat_all.var())
        om, mom = model.omega, model.moments
        self.var_y = float((om * mom[1]).sum() - (om * mom[0]).sum() ** 2)
        self.var_gap = max(self.var_all - float((om * model.yhat ** 2).sum() - (om * model.yhat).sum() ** 2), 0.0)
        self.intensity = intensity
        pos = model.positions
        self.pilot = pos is not None
        names, codes_all = np.unique(strata_all, return_inverse=True)
        self.pop_h = np.bincount(codes_all, minlength=len(names))
        self.share_h = self.pop_h / self.big_n
        self.names = names
        unit_codes = codes_all if pos is None else codes_all[pos]
        om, yh, mom = model.omega, model.yhat, model.moments
        self._rel_key: Any = None
        if name == "stratified":
            self.t_h, self.k_h = [], np.zeros(len(names))
            for h in range(len(names)):
                mask = unit_codes == h
                self.k_h[h] = float(kish_n(om[mask])) if mask.any() else 0.0
                ok = mask.any() and (not self.pilot or self.k_h[h] > 1.5)
                self.t_h.append(_power_sums(om[mask], yh[mask], mom[:, mask], None) if ok else None)
            self.t_pool = _power_sums(om, yh, mom, None)
        elif name == "uniform":
            self.t = _power_sums(om, yh, mom, None)
        elif name == LABELS_ONLY:  # the per-label term is Y itself: the same sums with a judge value of 0
            self.t = _power_sums(om, np.zeros(len(om)), mom, None)

    def _active_t(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """``(power sums, relative intensity at every segment)`` of the active design at ``n``."""
        inten = np.ones(self.big_n) if self.intensity is None else self.intensity
        capped = n * inten.max() / inten.sum() > 1
        key = n if capped else 0
        if key != self._rel_key:
            pi = _cap(inten, n) if capped else inten * (n / inten.sum())
            rel_all = pi * self.big_n / n
            pos = self.model.positions
            rel = rel_all if pos is None else rel_all[pos]
            self._active = (_power_sums(self.model.omega, self.model.yhat, self.model.moments, rel), rel_all)
            self._rel_key = key
        return self._active

    def _bias(self, k: float) -> float:
        """A pilot's plug-in variance is low by ``1 - 1/k`` (``k`` its effective labels)."""
        return k / (k - 1) if self.pilot and k > 1 else 1.0

    def _strata_sd(self, lam: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(S_h, excess kurtosis_h, pilot df_h)`` at ``lam``; a stratum the pilot does not reach takes the
        mean within-stratum variance (or the pooled one)."""
        pooled_v, pooled_k = _moments_at(self.t_pool, lam)
        var = np.full(len(self.names), np.nan)
        kurt = np.full(len(self.names), pooled_k)
        for h, t in enumerate(self.t_h):
            if t is not None:
                v, k = _moments_at(t, lam)
                var[h], kurt[h] = v * self._bias(self.k_h[h]), k
        fill = np.nanmean(var) if np.isfinite(var).any() else pooled_v * self._bias(self.model.dof)
        d_pilot = np.array([_df(k, kk) if self.pilot else math.inf for k, kk in zip(self.k_h, kurt, strict=True)])
        if self.pilot:
            d_pilot = np.where(np.isfinite(var), d_pilot, _df(self.model.dof, pooled_k))
        return np.sqrt(np.where(np.isfinite(var), var, fill)), kurt, d_pilot

    def at(self, n: int, lam: float | None) -> dict[str, Any]:
        """The variance components at ``n`` labels: ``lam`` (chosen when ``None``), ``imputed`` (A, the run's
        own sampling term ``var(Y) / N``),
        ``rect`` (the rectifier variance), ``d`` (its effective df), ``d_pilot``, ``t_df`` (the Student-t df
        of the small-sample rule) and the stratified ``allocation``."""
        out: dict[str, Any] = {"allocation": None}
        if self.name == "stratified":
            def rect_of(lv: float):
                s, kurt, d_pilot = self._strata_sd(lv)
                alloc = neyman_allocation(self.pop_h, s, n)
                fpc = np.clip(1 - alloc / self.pop_h, 0.0, 1.0)
                return float((self.share_h ** 2 * fpc * s ** 2 / alloc).sum()), s, kurt, d_pilot, alloc

            if lam is None:
                grid = LAM_GRID[::5]
                totals = [lv ** 2 * self.var_gap / self.big_n + rect_of(float(lv))[0] for lv in grid]
                lam = float(grid[int(np.argmin(totals))])
            rect, s, kurt, d_pilot, alloc = rect_of(lam)
            c = self.share_h ** 2 * np.clip(1 - alloc / self.pop_h, 0.0, 1.0) * s ** 2 / alloc
            out.update(rect=rect, d=_satterthwaite(c, np.array([_df(a, k) for a, k in zip(alloc, kurt, strict=True)])),
                       d_pilot=_satterthwaite(c, d_pilot) if self.pilot else math.inf,
                       t_df=_satterthwaite(c, alloc - 1.0),
                       allocation=dict(zip(self.names.tolist(), alloc.tolist(), strict=True)))
        else:
            if self.name == "active":
                t, rel_all = self._active_t(n)
                t_df = n / float((1.0 / rel_all).mean()) - 1.0
            else:
                t, t_df = self.t, n - 1.0
            if self.name == LABELS_ONLY:
                lam = 0.0
            elif lam is None:
                totals = LAM_GRID ** 2 * self.var_gap / self.big_n + _variance_at(t, LAM_GRID) / n
                lam = float(LAM_GRID[int(np.argmin(totals))])
            var, kurt = _moments_at(t, lam)
            fpc = 1.0 if self.name == LABELS_ONLY else max(1.0 - n / self.big_n, 0.0)
            out.update(rect=fpc * var * self._bias(self.model.dof) / n, d=_df(n, kurt),
                       d_pilot=_df(self.model.dof, kurt) if self.pilot else math.inf, t_df=t_df)
        out.update(lam=float(lam), imputed=(0.0 if self.name == LABELS_ONLY else
                                            (self.var_y + lam ** 2 * self.var_gap) / self.big_n))
        return out

    def small(self, n: int) -> bool:
        """Whether ``lam`` is 1 at ``n`` (fewer than 50 labels; in any stratum, for stratified)."""
        if self.name == "stratified":
            return min(self.at(n, PLAIN_PPI_LAM)["allocation"].values()) < SMALL_SAMPLE_LABELLED
        return n < SMALL_SAMPLE_LABELLED

    def half_width(self, n: int) -> tuple[float, float, float, dict[str, int] | None]:
        """``(assured half-width, expected half-width, lam, allocation)`` at ``n`` labels."""
        tuned = not self.small(n) and self.name != LABELS_ONLY
        c = self.at(n, None if tuned else PLAIN_PPI_LAM)
        q = float(_quantile(max(1.0, c["t_df"]) if n < SMALL_SAMPLE_LABELLED else None, self.conf))
        a, r = c["imputed"], c["rect"]
        d_r = c["d"] * (n - 2) / (n - 1) if tuned and n > 2 else c["d"]  # lam fitted on the same labels: one df
        # both terms are estimated from the labels: Satterthwaite's df of their sum (the run's term on n - 1)
        d = _satterthwaite(np.array([a, r]), np.array([n - 1.0, d_r])) if a > 0 else d_r
        d_p = c["d_pilot"]
        if math.isfinite(d_p) and a > 0:
            d_p = _satterthwaite(np.array([a, r]), np.array([self.model.dof - 1.0, d_p]))
        total = (a + r) * _margin(d, d_p)
        return q * math.sqrt(total), q * math.sqrt(a + r), c["lam"], c["allocation"]

    def minimum_n(self) -> int:
        if self.name == "stratified":
            return int(np.minimum(MIN_PER_STRATUM, self.pop_h).sum())
        return MIN_LABELLED


def _solve(engine: _Engine, target: float) -> DesignPlan:
    """The smallest n whose assured half-width is at most ``target``: every n below
    :data:`~axon_eval.stats.ppi.SMALL_SAMPLE_LABELLED` scanned, then bisection up to ``N``."""
    lo_n, top = engine.minimum_n(), engine.big_n
    if lo_n > top:
        return DesignPlan(engine.name, None, math.nan, math.nan, math.nan, None, "more strata than segments")
    for n in range(lo_n, min(SMALL_SAMPLE_LABELLED, top + 1)):
        hw, ehw, lam, alloc = engine.half_width(n)
        if hw <= target:
            return DesignPlan(engine.name, n, hw, ehw, lam, alloc)
    hw_top, ehw_top, lam_top, alloc_top = engine.half_width(top)
    if hw_top > target:
        return DesignPlan(engine.name, None, hw_top, ehw_top, lam_top, alloc_top,
                          f"with all {top} segments labelled the half-width is still {hw_top:.3g} "
                          "(the judge's own sampling term and the labels' spread set a floor)")
    lo, hi = max(lo_n, SMALL_SAMPLE_LABELLED) - 1, top  # hw(lo) > target >= hw(hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if engine.half_width(mid)[0] <= target:
            hi = mid
        else:
            lo = mid
    hw, ehw, lam, alloc = engine.half_width(hi)
    return DesignPlan(engine.name, hi, hw, ehw, lam, alloc)


def plan_labels(yhat_all: Any, *, target_half_width: float, kind: str = "mean", figure: str = "mean score",
                strata_all: Any = None, signal: Any = None, pilot: WorkingModel | None = None,
                correlation: float | None = None, confidence: float = CONFIDENCE, mix: float = MIX_UNIFORM,
                floor: float = SIGNAL_FLOOR, designs: Sequence[str] = (LABELS_ONLY, *DESIGNS)) -> LabelPlan:
    """Labels needed for ``figure`` to reach ``target_half_width`` under each design (module docstring).

    ``yhat_all``: the judge's values of every judged segment (scores, or 0/1 for a share); ``strata_all``:
    their strata (``None``: one stratum); ``signal``: the active design's uncertainty signal per segment
    (``None``: flat, so active is uniform). What is known of the human values: a ``pilot``
    (:func:`pilot_model`, its ``positions`` index ``yhat_all``) or a stated ``correlation``.
    """
    ya = np.asarray(yhat_all, dtype=np.float64)
    if ya.ndim != 1 or len(ya) < 2 or not np.isfinite(ya).all():
        raise ValueError("yhat_all must be the judge's finite values of at least two segments")
    if not target_half_width > 0:
        raise ValueError(f"the target half-width must be > 0, got {target_half_width!r}")
    if (pilot is None) == (correlation is None):
        raise ValueError("give either a pilot (the labels so far) or a stated correlation, not both or neither")
    strata = np.zeros(len(ya), dtype=np.int64).astype(str) if strata_all is None else np.asarray(strata_all).astype(str)
    if strata.shape != ya.shape:
        raise ValueError(f"strata_all has {strata.shape} values for {ya.shape} segments")
    sig = None if signal is None else np.asarray(signal, dtype=np.float64)
    if sig is not None and sig.shape != ya.shape:
        raise ValueError(f"signal has {sig.shape} values for {ya.shape} segments")
    if pilot is not None:
        if pilot.positions is None or pilot.positions.max(initial=-1) >= len(ya) or pilot.positions.min(initial=0) < 0:
            raise ValueError("the pilot's positions must index the run's judged segments")
        model = pilot
    else:
        model = correlation_model(ya, float(correlation), kind)
    intensity = None if sig is None else signal_intensity(sig, mix=mix, floor=floor)
    plans = []
    for name in designs:
        if name not in (LABELS_ONLY, *DESIGNS):
            raise ValueError(f"unknown design {name!r}; expected some of {[LABELS_ONLY, *DESIGNS]}")
        plans.append(_solve(_Engine(name, model, ya, strata, intensity if name == "active" else None, confidence),
                            float(target_half_width)))
    inflation = None
    if "active" in designs:
        inflation = 1.0 if intensity is None else float(np.mean(1.0 / intensity))
    notes = list(model.notes)
    if sig is None and "active" in designs:
        notes.append("no uncertainty signal given: the active design is uniform sampling")
    if strata_all is None and "stratified" in designs:
        notes.append("no strata given: the stratified design is uniform sampling")
    return LabelPlan(figure, kind, float(target_half_width), confidence, ASSURANCE, len(ya), model.source,
                     tuple(plans), inflation, 0 if model.positions is None else len(model.omega), tuple(notes))


def detect_half_width(delta: float, confidence: float = CONFIDENCE, power: float = DETECT_POWER) -> float:
    """The half-width an interval of a difference needs for a true difference ``delta`` to exclude 0 with
    probability ``power``: ``z * delta / (z + z_power)`` (``se = delta / (z + z_power)``)."""
    from scipy.stats import norm

    if not delta > 0 or not 0 < power < 1:
        raise ValueError(f"need delta > 0 and power in (0, 1), got {delta!r}, {power!r}")
    z = z_value(confidence)
    return z * delta / (z + float(norm.ppf(power)))
