"""Label budgets, the designs: inclusion probabilities of the three labelling designs and the draw.

Units and symbols as in :mod:`axon_eval.stats.label_budget`: ``N`` judged segments, ``n`` labels, ``r_i`` the
rectifier of segment ``i``.

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

The study's constants (designs, mixture, floors, assurance and power) are here, in one place.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd


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
