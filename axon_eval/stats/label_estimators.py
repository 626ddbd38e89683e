"""Label budgets, the estimators: one unbiased corrected mean per labelling design.

Units and symbols as in :mod:`axon_eval.stats.label_budget`.

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
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from .intervals import CONFIDENCE, z_value
from .ppi import MIN_LABELLED, PLAIN_PPI_LAM, SMALL_SAMPLE_LABELLED
from .label_designs import LABELS_ONLY


# =============================================================================================
# Estimators
# =============================================================================================
@dataclass(frozen=True)
class DesignEstimate:
    """One corrected mean under a labelling design: ``estimate``, ``se``, the interval ``lo`` to ``hi`` at
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
