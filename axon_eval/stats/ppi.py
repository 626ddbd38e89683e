"""Human-corrected headline figures: prediction-powered inference (PPI++) with power tuning.

When a labelled subset of a run exists, the figures the judge gives (mean score, band shares,
dimension means) are biased toward the judge's standard. PPI corrects them toward the *human* standard
the labels define, using every judged segment (Angelopoulos, Bates, Fannjiang, Jordan & Zrnic, Science
382:669, 2023) with the power-tuning parameter of PPI++ (Angelopoulos, Duchi & Zrnic 2023,
arXiv:2311.01453). For a mean, with ``n`` labelled segments (human ``Y``, judge ``Yhat``) and ``N``
unlabelled ones (judge ``Yhat_u``)::

    theta_lam = mean(lam * Yhat_u) + mean(Y - lam * Yhat)
    se^2      = var(lam * Yhat_u) / N + var(Y - lam * Yhat) / n          (variances with ddof=0)
    interval  = theta_lam -/+ z * se                                      (two-sided normal)

``lam = 0`` is the labels-only (classical) estimate, ``lam = 1`` plain PPI. The tuned ``lam_hat``
minimises the variance: ``lam_hat = Cov(Y, Yhat) / ((1 + n/N) Var(Yhat))``, clipped to [0, 1]; the
covariance is taken over the labelled segments (``ddof=0``), the variance over labelled and unlabelled
predictions together (``ddof=1``), both of gradients centred at the ``lam = 1`` estimate. This is
exactly ``ppi_py.ppi_mean_pointestimate`` / ``ppi_mean_ci`` with ``lam=None`` (ppi_py 0.2.3,
``_calc_lam_glm`` with ``clip=True``); the tests check agreement to 1e-6 wherever the large-sample rule
below applies (at least :data:`SMALL_SAMPLE_LABELLED` labels, unweighted). With sample weights ``w``
(normalised to sum to ``n``, as ppi_py does) the point estimate and ``lam_hat`` are still ppi_py's, but
the variance of a weighted mean is the linearised (Hajek) one, ``mean(w^2 (r - rbar_w)^2) / n``
(Sarndal, Swensson & Wretman 1992, section 5.7), where ppi_py takes ``var(w r)``, which is not centred
at the estimate and overstates the variance by about ``mean(r)^2 var(w) / n`` (large for a score near
60). Without weights the two coincide. When the judge's predictions are constant (``Var(Yhat) = 0``)
ppi_py divides by zero; here ``lam = 0`` (the judge carries no information).

A **share** is the mean of a band indicator (``Y = 1[human band = b]``, ``Yhat = 1[judge band = b]``).

**Small labelled samples** (:func:`ppi_rule`; ``m`` = :data:`SMALL_SAMPLE_LABELLED` = 50). The normal
interval above assumes many labels: in a SIMULATED check (the mean model of
:func:`axon_eval.stats.coverage.small_sample_coverage`) ppi_py's "95%" interval covered the truth 50% of
the time at n = 2, 79% at n = 5, 88% at n = 10 and 93% at n = 30; and ``lam`` tuned on the same few labels
it then corrects with biases the estimate (about half a point at 4 labels per stratum of a stratified
design; ``tests/test_ppi.py`` measures it). So:

* **lam**: tuned only when every stratum of the labelling design holds at least ``m`` labels (a simple
  random sample is one stratum: ``n >= m``); otherwise ``lam = 1``, plain PPI, which is unbiased for the
  human mean over the design for any fixed ``lam``. Strata are the ``strata`` given (the design's
  ``stratum``), else the groups of labelled segments sharing one design weight ``N_h / n_h`` (segments of
  strata sampled at the same rate form one group: together they are sampled like one stratum). An
  explicit ``lam`` is always used as given.
* **interval**: with fewer than ``m`` effective labelled segments (Kish's ``n_eff`` below; with unequal
  design weights 60 labels can be worth 40, and the normal interval's coverage fell from 95.5% to 92.8%
  where a count of labels switched at 50), the labelled term's variance is taken with
  ``ddof = 1`` (weighted: the linearised variance times ``n / (n - 1)``) and the quantile is Student's t
  with ``df = n_eff - 1`` degrees of freedom, ``n_eff = (sum w)^2 / sum w^2`` Kish's effective sample
  size (``n`` unweighted; at least 1 df): ``theta -/+ t_{df, (1 + confidence)/2} * se``. From ``m``
  labels on, the normal interval above (ppi_py's). The labels-only interval (:func:`classical_mean`)
  follows the same rule.

With this rule the mean model's published PPI interval covered 94-98% at every simulated n (2 to 200
labelled; 93-95% in the stratified design at 4, 10 and 30 labels per stratum). A share is harder: its
rectifier ``Y - Yhat`` is mostly 0 when the judge agrees with people, so a few labels can show no
disagreement at all and the interval is too narrow (84% at n = 5, 79% at n = 10, 55% at 4 labels per
stratum). Every corrected figure therefore quotes the SIMULATED coverage its intervals had at the
nearest simulated n (:data:`SIMULATED_COVERAGE`, measured by
:func:`axon_eval.stats.coverage.small_sample_coverage` and printed by ``make bench``; :func:`coverage_note`),
flagged when under :data:`COVERAGE_WARNING_BELOW`.

**Effective labels**: ``n * var(labels-only) / var(PPI)``, how many labels the labels-only estimate
would need for the PPI interval's width; the judge was worth ``effective_labels - n`` labels.

**Labelling designs.**

* *Simple random sample* (no weights): the unlabelled set is the judged segments without a label, as in
  ppi_py (labelled and unlabelled disjoint).
* *Stratified* (``sample-for-labelling`` samples by band, surface and client): **weighted PPI++**, not
  stratified PPI. Each labelled segment carries its design weight ``w_i = N_h / n_h = 1 / pi_i`` (the
  inverse of its inclusion probability in its stratum ``h``; ``design.json``'s ``weight``); the imputed
  term is the judge's mean over *every* judged segment of the run (weight 1), the rectifier the
  design-weighted mean of ``Y - lam Yhat`` over the labelled ones (ppi_py's point estimate
  ``ppi_mean_pointestimate(Y, Yhat, Yhat_all, w=w)``). Since ``sum_lab 1/pi_i = N`` it is the survey
  difference estimator ``lam mean_all(Yhat) + (1/N) sum_lab (Y_i - lam Yhat_i) / pi_i`` (Cochran 1977,
  section 6.3), unbiased over the design for any fixed ``lam``. Its linearised variance is at least
  the stratified one ``sum_h W_h^2 s_h^2 / n_h`` (they differ by the spread of the strata's means of
  ``r`` around the overall one), so it errs on the wide side there; it ignores that the labelled
  segments are also in the imputed mean (a covariance of relative order ``n/N``). The tests check its
  coverage by simulation. Stratified PPI (Fisch et al. 2024) would need a variance within every
  stratum, and the sampler's minimum per stratum is 1.

The unit is the segment: the PPI intervals treat segments as independent (a bundled turn's segments
are not clustered here; :func:`axon_eval.stats.intervals.headline_intervals` gives the clustered judge
interval). :data:`PPI_COVERS` says what the intervals cover.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd

from .intervals import CONFIDENCE, HEADLINE_FIGURES, Interval, figure_values, z_value

#: What the three side-by-side intervals cover, in one sentence.
PPI_COVERS = ("The labels-only and PPI intervals cover the sampling of turns and of the labelled subset, for "
              "the standard the human labels define; the judge-only interval covers sampling alone and is "
              "centred on the judge's standard, so its bias toward the judge is not inside it.")
#: Fewest labelled segments (with a value) for a corrected figure; below it the row says so.
MIN_LABELLED = 2
#: Fewest labelled segments for a corrected figure a decision may rest on. A corrected mean at 2 labels
#: is valid but about 95 points wide, so below this it reads "not informative" rather than a number.
MIN_INFORMATIVE_LABELS = 5
#: Labels below which the small-sample rule applies (module docstring) -- fewer labelled segments in all
#: -> Student-t interval with ddof = 1; fewer in any stratum -> lam = 1 (not tuned on the same labels).
SMALL_SAMPLE_LABELLED = 50
#: ``lam`` of plain PPI, used below :data:`SMALL_SAMPLE_LABELLED` labels per stratum.
PLAIN_PPI_LAM = 1.0
#: Relative tolerance under which two design weights are the same weight (one stratum group).
SAME_WEIGHT_RTOL = 1e-9
#: The labelling designs of the SIMULATED coverage record, by key.
SIMULATED_COVERAGE_DESIGNS: dict[str, str] = {"srs": "simple random sample", "stratified": "stratified, 2 strata"}
#: A quoted SIMULATED coverage below this is flagged beside the figure -- its interval is too narrow there.
COVERAGE_WARNING_BELOW = 0.90


@dataclass(frozen=True)
class CoverageRecord:
    """The SIMULATED coverage of the published intervals in one cell of
    :func:`axon_eval.stats.coverage.small_sample_coverage`: its ``design`` (a key of
    :data:`SIMULATED_COVERAGE_DESIGNS`), figure ``kind`` (``mean``/``share``), ``n_labelled``,
    ``per_stratum`` (0 for a simple random sample), and the coverage of the ``ppi`` and ``labels_only``
    95% intervals (fractions)."""

    design: str
    kind: str
    n_labelled: int
    per_stratum: int
    ppi: float
    labels_only: float


#: SIMULATED coverage of the published 95% intervals by design, figure kind and labelled n, measured once by
#: ``axon_eval.stats.coverage.small_sample_coverage()`` (its defaults: 2,000 replications per row, seed 0;
#: the models are in that module) and printed by ``make bench``; tests/test_ppi.py runs it again and checks
#: every figure here. The corrected figures quote the row nearest their n (:func:`simulated_coverage_at`).
SIMULATED_COVERAGE: tuple[CoverageRecord, ...] = (
    CoverageRecord("srs", "mean", 2, 0, 0.976, 0.956),
    CoverageRecord("srs", "mean", 5, 0, 0.962, 0.950),
    CoverageRecord("srs", "mean", 10, 0, 0.955, 0.962),
    CoverageRecord("srs", "mean", 20, 0, 0.961, 0.948),
    CoverageRecord("srs", "mean", 30, 0, 0.946, 0.956),
    CoverageRecord("srs", "mean", 50, 0, 0.942, 0.942),
    CoverageRecord("srs", "mean", 100, 0, 0.947, 0.952),
    CoverageRecord("srs", "mean", 200, 0, 0.944, 0.941),
    CoverageRecord("srs", "share", 2, 0, 0.996, 0.372),
    CoverageRecord("srs", "share", 5, 0, 0.839, 0.761),
    CoverageRecord("srs", "share", 10, 0, 0.789, 0.942),
    CoverageRecord("srs", "share", 20, 0, 0.871, 0.897),
    CoverageRecord("srs", "share", 30, 0, 0.927, 0.951),
    CoverageRecord("srs", "share", 50, 0, 0.911, 0.933),
    CoverageRecord("srs", "share", 100, 0, 0.933, 0.945),
    CoverageRecord("srs", "share", 200, 0, 0.943, 0.930),
    CoverageRecord("stratified", "mean", 8, 4, 0.929, 0.941),
    CoverageRecord("stratified", "mean", 20, 10, 0.944, 0.948),
    CoverageRecord("stratified", "mean", 60, 30, 0.946, 0.959),
    CoverageRecord("stratified", "share", 8, 4, 0.550, 0.838),
    CoverageRecord("stratified", "share", 20, 10, 0.857, 0.857),
    CoverageRecord("stratified", "share", 60, 30, 0.924, 0.929),
)


def simulated_coverage_at(n_labelled: int, kind: str, weighted: bool) -> CoverageRecord:
    """The row of :data:`SIMULATED_COVERAGE` for a ``kind`` figure (``mean``/``share``) whose design is
    stratified (``weighted``) or a simple random sample, at the simulated n nearest ``n_labelled`` (a tie
    goes to the smaller n)."""
    design = "stratified" if weighted else "srs"
    rows = [r for r in SIMULATED_COVERAGE if r.design == design and r.kind == kind]
    if not rows:
        raise ValueError(f"no SIMULATED coverage for kind {kind!r}; expected 'mean' or 'share'")
    return min(rows, key=lambda r: (abs(r.n_labelled - n_labelled), r.n_labelled))


def coverage_note(n_labelled: int, kind: str, weighted: bool, confidence: float = CONFIDENCE) -> str:
    """One sentence quoting the SIMULATED coverage of a corrected figure's intervals at the nearest n
    (:func:`simulated_coverage_at`), flagged when below :data:`COVERAGE_WARNING_BELOW`."""
    from ..display import fmt_compared, fmt_share

    r = simulated_coverage_at(n_labelled, kind, weighted)
    at = f"n = {r.n_labelled}" + (f", {r.per_stratum} per stratum" if r.per_stratum else "")
    level = "" if math.isclose(confidence, 0.95) else f" (measured for 95% intervals, not {confidence:.0%})"
    text = (f"SIMULATED coverage of the 95% intervals at {at} ({SIMULATED_COVERAGE_DESIGNS[r.design]}, {kind} "
            f"model; {n_labelled} labelled here): PPI {fmt_share(r.ppi)}, labels only {fmt_share(r.labels_only)}{level}")
    if min(r.ppi, r.labels_only) < COVERAGE_WARNING_BELOW:
        lowest, limit = fmt_compared(min(r.ppi, r.labels_only), COVERAGE_WARNING_BELOW, share=True)
        text += f"; {lowest} is below {limit}, the interval is too narrow at this n: label more"
    return text


SRS_DESIGN = "simple random sample (unweighted PPI++; unlabelled = judged segments without a label)"
WEIGHTED_DESIGN = ("weighted PPI++ (labelled segments weighted by 1 / inclusion probability from the pack's "
                   "design: N_h/n_h for a stratified sample; imputed term over every judged segment)")


@dataclass(frozen=True)
class PPIRule:
    """How ``lam`` and the interval are chosen for one labelled sample (module docstring, "Small labelled
    samples"): ``n_labelled``, ``smallest_stratum`` (labels in the smallest stratum or weight group),
    ``tune_lam`` (tune ``lam``, else :data:`PLAIN_PPI_LAM`), ``df`` (Student-t degrees of freedom,
    ``None`` for the normal interval), ``ddof`` of the labelled term's variance (1 with ``df``) and
    ``n_eff`` (Kish's effective sample size)."""

    n_labelled: int
    smallest_stratum: int
    tune_lam: bool
    df: float | None
    ddof: int
    n_eff: float

    def quantile(self, confidence: float) -> float:
        """The two-sided quantile at ``confidence``: ``t_{df, (1 + confidence) / 2}``, or the normal one."""
        if self.df is None:
            return z_value(confidence)
        from scipy.stats import t

        z_value(confidence)  # validates the level
        return float(t.ppf(0.5 + confidence / 2, self.df))

    def describe(self) -> str:
        """The interval's method in words, e.g. ``"PPI (lam = 1), Student-t, 29 df"``."""
        lam = "PPI++ power-tuned" if self.tune_lam else f"PPI (lam = {PLAIN_PPI_LAM:g})"
        return f"{lam}, " + ("normal" if self.df is None else f"Student-t, {self.df:.3g} df")


def _groups(strata: Any, w: np.ndarray | None, n: int) -> np.ndarray:
    """Group codes of the labelled segments: the ``strata`` given, else equal design weights (relative
    tolerance :data:`SAME_WEIGHT_RTOL`), else one group."""
    if strata is not None:
        arr = np.asarray(strata)
        if arr.shape != (n,):
            raise ValueError(f"strata has shape {arr.shape}, expected ({n},): one stratum per labelled value")
        return np.unique(arr.astype(str), return_inverse=True)[1]
    if w is None:
        return np.zeros(n, dtype=np.int64)
    order = np.argsort(w, kind="stable")
    ws = w[order]
    new_group = np.concatenate([[True], np.abs(np.diff(ws)) > SAME_WEIGHT_RTOL * np.abs(ws[1:])])
    codes = np.empty(n, dtype=np.int64)
    codes[order] = np.cumsum(new_group) - 1
    return codes


def kish_effective_n(w: Any) -> float:
    """Kish's effective sample size ``(sum w)^2 / sum w^2`` of weights ``w`` (``n`` when all are equal)."""
    arr = np.asarray(w, dtype=np.float64)
    return float(arr.sum() ** 2 / (arr ** 2).sum())


def ppi_rule(n_labelled: int, w: Any = None, strata: Any = None) -> PPIRule:
    """The rule for ``n_labelled`` labelled segments with design weights ``w`` (or ``None``) and their
    ``strata`` (or ``None``: groups of equal weight), as the module docstring states: ``lam`` tuned only
    when the smallest stratum holds at least :data:`SMALL_SAMPLE_LABELLED` labels; below that many
    *effective* labels in all (Kish's ``n_eff``, ``n`` unweighted), a Student-t interval with
    ``df = max(1, n_eff - 1)`` and ``ddof = 1``."""
    n = int(n_labelled)
    warr = None if w is None else np.asarray(w, dtype=np.float64)
    codes = _groups(strata, warr, n)
    smallest = int(np.bincount(codes).min()) if n else 0
    n_eff = float(n) if warr is None else kish_effective_n(warr)
    # on the effective n: unequal weights make 60 labels worth fewer, and the normal interval needs many
    small = n_eff < SMALL_SAMPLE_LABELLED
    return PPIRule(n, smallest, smallest >= SMALL_SAMPLE_LABELLED, max(1.0, n_eff - 1.0) if small else None,
                   1 if small else 0, n_eff)


@dataclass(frozen=True)
class PPIResult:
    """One PPI(++) mean: ``estimate``, its ``se``, the two-sided interval ``lo`` to ``hi`` at ``confidence``
    (normal, or Student-t with ``df`` degrees of freedom under the small-sample rule), the ``lam`` used,
    the labelled ``n_labelled`` and unlabelled ``n_unlabelled`` counts, whether sample weights were used,
    and the ``rule`` that chose ``lam`` and the interval."""

    estimate: float
    lo: float
    hi: float
    se: float
    lam: float
    n_labelled: int
    n_unlabelled: int
    confidence: float
    weighted: bool = False
    df: float | None = None
    rule: PPIRule | None = None

    def interval(self, method: str, note: str = "") -> Interval:
        n = self.n_labelled
        return Interval(self.estimate, self.lo, self.hi, n, n, method, self.confidence, note=note)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _weights(w: Any, n: int, what: str) -> np.ndarray | None:
    """ppi_py's normalisation: ``w / sum(w) * n`` (None stays None, meaning all ones)."""
    if w is None:
        return None
    arr = np.asarray(w, dtype=np.float64)
    if arr.shape != (n,):
        raise ValueError(f"{what} has shape {arr.shape}, expected ({n},): one weight per value")
    if not (np.isfinite(arr).all() and (arr > 0).all()):
        bad = np.flatnonzero(~(np.isfinite(arr) & (arr > 0)))
        raise ValueError(f"{what} must be finite and > 0; position {int(bad[0])} is {arr[bad[0]]!r}")
    return arr / arr.sum() * n


def ppi_kernel(y: np.ndarray, yhat: np.ndarray, yhat_u: np.ndarray, lam: float | None = None,
               w: np.ndarray | None = None, w_u: np.ndarray | None = None, *,
               ddof: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Vectorised PPI++ over a batch: ``y``/``yhat`` ``(R, n)``, ``yhat_u`` ``(R, N)``, normalised
    weights ``w`` ``(n,)`` or ``(R, n)`` and ``w_u`` ``(N,)`` (or ``None``). Returns ``(estimate, se,
    lam)``, each ``(R,)``. The formulas are the module docstring's; ``N = 0`` gives the labels-only
    estimate; ``ddof=1`` scales the labelled term's variance by ``n / (n - 1)`` (the small-sample rule)."""
    n, n_u = y.shape[-1], yhat_u.shape[-1]
    wl = np.ones(n) if w is None else w
    wu = np.ones(n_u) if w_u is None else w_u
    if n_u == 0:
        lam_arr = np.zeros(y.shape[0])
    elif lam is None:
        theta1 = (wu * yhat_u).mean(-1) + (wl * (y - yhat)).mean(-1)
        g = wl * (y - theta1[:, None])
        gh = wl * (yhat - theta1[:, None])
        gu = wu * (yhat_u - theta1[:, None])
        cov = (2.0 / n) * ((g - g.mean(-1, keepdims=True)) * (gh - gh.mean(-1, keepdims=True))).sum(-1)
        pooled = np.concatenate([gh, gu], axis=-1)
        var = pooled.var(-1, ddof=1)
        # constant predictions (up to rounding): no information in the judge, lam = 0
        flat = np.ptp(pooled, axis=-1) <= 1e-12 * np.maximum(np.abs(pooled).max(-1), 1e-300)
        with np.errstate(divide="ignore", invalid="ignore"):
            lam_arr = np.where(flat | (var <= 0), 0.0, cov / (2.0 * (1.0 + n / n_u) * var))
        lam_arr = np.clip(lam_arr, 0.0, 1.0)
    else:
        lam_arr = np.full(y.shape[0], float(lam))
    lam_col = lam_arr[:, None]
    rect = y - lam_col * yhat
    rect_mean = (wl * rect).mean(-1)
    # Linearised (Hajek) variance of a weighted mean: mean(w^2 (r - rbar_w)^2) / n; with w = 1 this is
    # var(r) (ddof=0), ppi_py's. (ppi_py's var(w r) is not centred at the estimate when w varies.)
    var_est = ((wl * (rect - rect_mean[:, None])) ** 2).sum(-1) / (n - ddof) / n
    estimate = rect_mean
    if n_u:
        imputed = lam_col * yhat_u
        imputed_mean = (wu * imputed).mean(-1)
        estimate = estimate + imputed_mean
        var_est = var_est + ((wu * (imputed - imputed_mean[:, None])) ** 2).mean(-1) / n_u
    return estimate, np.sqrt(var_est), lam_arr


def _vector(x: Any, what: str, min_len: int = 0) -> np.ndarray:
    arr = np.asarray(x, dtype=np.float64)
    if arr.ndim != 1:
        raise ValueError(f"{what} must be one-dimensional, got shape {arr.shape}")
    if not np.isfinite(arr).all():
        bad = np.flatnonzero(~np.isfinite(arr))
        raise ValueError(f"{what} has {len(bad)} missing/non-finite value(s) (first at position {int(bad[0])}); "
                         "drop them first: a null is not a 0")
    if len(arr) < min_len:
        raise ValueError(f"{what} has {len(arr)} value(s); need at least {min_len}")
    return arr


def _weights_batch(w: Any, shape: tuple[int, int], what: str) -> np.ndarray | None:
    """:func:`_weights` for ``(n,)`` or ``(R, n)`` weights, each row normalised to sum to ``n``."""
    if w is None:
        return None
    arr = np.asarray(w, dtype=np.float64)
    if arr.ndim == 1:
        return _weights(arr, shape[1], what)
    if arr.shape != shape:
        raise ValueError(f"{what} has shape {arr.shape}, expected ({shape[1]},) or {shape}")
    if not (np.isfinite(arr).all() and (arr > 0).all()):
        raise ValueError(f"{what} must be finite and > 0")
    return arr / arr.sum(-1, keepdims=True) * shape[1]


def ppi_batch(y: np.ndarray, yhat: np.ndarray, yhat_u: np.ndarray, *, lam: float | None = None,
              w: Any = None, strata: Any = None, confidence: float = CONFIDENCE) -> dict[str, np.ndarray]:
    """:func:`ppi_mean` over a batch of ``R`` samples of one design (the simulations' entry point):
    ``y``/``yhat`` ``(R, n)``, ``yhat_u`` ``(R, N)``, design weights ``w`` ``(n,)`` or ``(R, n)``,
    ``strata`` ``(n,)``. :func:`ppi_rule` chooses ``lam`` (when ``lam`` is ``None``) and the interval for
    each sample. Returns arrays ``(R,)``: ``estimate``, ``se``, ``lo``, ``hi``, ``lam``, ``df`` (``NaN``:
    normal) and ``quantile``."""
    n_rep, n = y.shape
    warr = None if w is None else np.asarray(w, dtype=np.float64)
    rules = ([ppi_rule(n, row, strata) for row in warr] if warr is not None and warr.ndim == 2
             else [ppi_rule(n, warr, strata)] * n_rep)
    wn = _weights_batch(warr, (n_rep, n), "w")
    tuned = np.array([lam is None and r.tune_lam for r in rules])
    est, se, lam_used = np.empty(n_rep), np.empty(n_rep), np.empty(n_rep)
    for mask, chosen in ((tuned, None), (~tuned, PLAIN_PPI_LAM if lam is None else float(lam))):
        if mask.any():
            w_rows = wn if wn is None or wn.ndim == 1 else wn[mask]
            est[mask], se[mask], lam_used[mask] = ppi_kernel(y[mask], yhat[mask], yhat_u[mask], chosen, w_rows,
                                                             ddof=rules[0].ddof)
    quantiles: dict[float | None, float] = {}
    q = np.array([quantiles.setdefault(r.df, r.quantile(confidence)) for r in rules])
    df = np.array([math.nan if r.df is None else r.df for r in rules])
    return {"estimate": est, "se": se, "lo": est - q * se, "hi": est + q * se, "lam": lam_used, "df": df,
            "quantile": q}


def ppi_mean(y_labelled: Sequence[float], yhat_labelled: Sequence[float], yhat_unlabelled: Sequence[float], *,
             lam: float | None = None, w: Sequence[float] | None = None, w_unlabelled: Sequence[float] | None = None,
             strata: Sequence[Any] | None = None, confidence: float = CONFIDENCE) -> PPIResult:
    """PPI++ estimate and two-sided interval of the human-standard mean.

    ``y_labelled`` human values and ``yhat_labelled`` judge values of the same labelled segments (same
    order), ``yhat_unlabelled`` judge values of the unlabelled set; ``lam=None`` lets :func:`ppi_rule`
    choose: tuned (clipped to [0, 1]) when every stratum holds at least :data:`SMALL_SAMPLE_LABELLED`
    labels, else :data:`PLAIN_PPI_LAM`; ``lam=1`` is plain PPI, ``lam=0`` the labels-only mean. ``w`` /
    ``w_unlabelled`` are sample weights as in ppi_py (normalised to sum to their sizes); ``strata`` the
    labelled segments' strata (``None``: groups of equal ``w``). Below :data:`SMALL_SAMPLE_LABELLED`
    labels the interval is Student-t (module docstring). From that many labels on, unweighted, this
    equals ``ppi_py.ppi_mean_pointestimate`` and ``ppi_py.ppi_mean_ci(alpha=1 - confidence)`` on the
    same inputs (weighted, the variance is the linearised one of the module docstring). Needs at least
    :data:`MIN_LABELLED` labelled values.
    """
    y = _vector(y_labelled, "y_labelled", MIN_LABELLED)
    yhat = _vector(yhat_labelled, "yhat_labelled")
    yu = _vector(yhat_unlabelled, "yhat_unlabelled")
    if len(yhat) != len(y):
        raise ValueError(f"y_labelled has {len(y)} values but yhat_labelled {len(yhat)}; they must pair up")
    if lam is not None and not 0 <= lam <= 1:
        raise ValueError(f"lam must be in [0, 1] or None (chosen by ppi_rule), got {lam!r}")
    rule = ppi_rule(len(y), _weights(w, len(y), "w"), strata)
    z = rule.quantile(confidence)
    wl, wu = _weights(w, len(y), "w"), _weights(w_unlabelled, len(yu), "w_unlabelled")
    chosen = lam if lam is not None else (None if rule.tune_lam else PLAIN_PPI_LAM)
    est, se, lam_used = ppi_kernel(y[None, :], yhat[None, :], yu[None, :], chosen, wl, wu, ddof=rule.ddof)
    e, s = float(est[0]), float(se[0])
    return PPIResult(e, e - z * s, e + z * s, s, float(lam_used[0]), len(y), len(yu), confidence,
                     w is not None or w_unlabelled is not None, rule.df, rule)


def classical_mean(y: Sequence[float], *, w: Sequence[float] | None = None, confidence: float = CONFIDENCE) -> PPIResult:
    """The labels-only (or judge-only) mean with its interval: PPI with ``lam = 0``, i.e. ``mean(w y)``
    with ``se^2 = mean(w^2 (y - ybar_w)^2) / n`` (``w`` normalised to sum to ``n``) and a normal interval;
    below :data:`SMALL_SAMPLE_LABELLED` values the variance takes ``ddof = 1`` and the quantile is
    Student's t with ``n_eff - 1`` df (:func:`ppi_rule`). Unweighted and from that many values on this is
    ``se = sd(y) / sqrt(n)`` (``ddof=0``), ppi_py's ``classical_mean_ci``; below it, unweighted, it is
    ``scipy.stats.t.interval(confidence, n - 1, mean, sem)``; weighted, the linearised variance (see
    the module docstring) where ppi_py takes ``var(w y)``."""
    arr = _vector(y, "y", MIN_LABELLED)
    wl = _weights(w, len(arr), "w")
    rule = ppi_rule(len(arr), wl)
    z = rule.quantile(confidence)
    est, se, _ = ppi_kernel(arr[None, :], np.zeros((1, len(arr))), np.zeros((1, 0)), 0.0, wl, None, ddof=rule.ddof)
    e, s = float(est[0]), float(se[0])
    return PPIResult(e, e - z * s, e + z * s, s, 0.0, len(arr), 0, confidence, w is not None, rule.df, rule)


def effective_labels(labels_only: PPIResult, ppi: PPIResult) -> float:
    """``n * var(labels-only) / var(PPI)``: the labels a labels-only estimate would need to be as
    precise as the PPI one (``NaN`` when the PPI variance is 0)."""
    if ppi.se == 0:
        return math.nan
    return labels_only.n_labelled * (labels_only.se / ppi.se) ** 2


# -- the headline figures of a run, side by side --------------------------------------------------------
@dataclass(frozen=True)
class CorrectedFigure:
    """One headline figure three ways: ``judge_only`` (all judged segments; biased toward the judge),
    ``labels_only`` (unbiased for the human standard, wide), ``ppi`` (unbiased, narrower), with the
    ``lam`` used (:func:`ppi_rule`), the ``effective_labels``, a ``note`` and the SIMULATED coverage of
    its intervals at the nearest simulated n (``simulated_coverage``: PPI's, a fraction;
    ``coverage_note``: the sentence, :func:`coverage_note`)."""

    figure: str
    kind: str
    judge_only: Interval
    labels_only: Interval
    ppi: Interval
    lam: float
    effective_labels: float
    n_labelled: int
    n_unlabelled: int
    design: str
    note: str = ""
    simulated_coverage: float = math.nan
    coverage_note: str = ""

    def row(self) -> dict[str, Any]:
        out: dict[str, Any] = {"figure": self.figure, "kind": self.kind, "n_labelled": self.n_labelled,
                               "n_unlabelled": self.n_unlabelled}
        for prefix, iv in (("judge", self.judge_only), ("labels", self.labels_only), ("ppi", self.ppi)):
            out.update({f"{prefix}_estimate": iv.estimate, f"{prefix}_lo": iv.lo, f"{prefix}_hi": iv.hi})
        out["judge_n"] = self.judge_only.n
        out.update({"lam": self.lam, "effective_labels": self.effective_labels, "design": self.design,
                    "confidence": self.ppi.confidence, "note": self.note, "ppi_method": self.ppi.method,
                    "simulated_coverage": self.simulated_coverage, "coverage_note": self.coverage_note})
        return out


CORRECTED_COLUMNS: tuple[str, ...] = (
    "figure", "kind", "n_labelled", "n_unlabelled", "judge_estimate", "judge_lo", "judge_hi", "labels_estimate",
    "labels_lo", "labels_hi", "ppi_estimate", "ppi_lo", "ppi_hi", "judge_n", "lam", "effective_labels", "design",
    "confidence", "note", "ppi_method", "simulated_coverage", "coverage_note",
)


def _indexed(frame: pd.DataFrame, key: str, what: str) -> pd.DataFrame:
    if key not in frame.columns:
        raise ValueError(f"{what} frame lacks the key column {key!r}; has {list(frame.columns)}")
    dup = frame[key][frame[key].duplicated()]
    if len(dup):
        raise ValueError(f"{what} frame has {len(dup)} duplicated {key}(s), e.g. {dup.iloc[0]!r}; "
                         "give one row per segment (average several raters first)")
    return frame.set_index(key, drop=False)


def _available(frame: pd.DataFrame, figure: str) -> bool:
    if figure == "share capped":
        return "capped" in frame.columns
    if figure.startswith("share "):
        return "band" in frame.columns
    return ("score" if figure == "mean score" else figure.removeprefix("mean ")) in frame.columns


def _missing_row(figure: str, kind: str, judge_iv: Interval, n_lab: int, n_unl: int, design: str, note: str,
                 confidence: float) -> CorrectedFigure:
    nan = Interval(math.nan, math.nan, math.nan, n_lab, n_lab, "none", confidence, note=note)
    return CorrectedFigure(figure, kind, judge_iv, nan, nan, math.nan, math.nan, n_lab, n_unl, design, note)


def _judge_only(values: np.ndarray, confidence: float) -> Interval:
    """The judge-only interval over every judged value (:func:`classical_mean`)."""
    res = classical_mean(values, confidence=confidence)
    how = "normal (CLT)" if res.df is None else f"Student-t, {res.df:.3g} df"
    return res.interval(f"{how}, all judged segments")


def corrected_figures(judge_all: pd.DataFrame, human_labelled: pd.DataFrame, *, key: str = "segment_id",
                      weight_col: str | None = None, stratum_col: str | None = None,
                      figures: Sequence[str] | None = None,
                      confidence: float = CONFIDENCE) -> tuple[list[CorrectedFigure], list[str]]:
    """The records behind :func:`corrected_estimates`, and its notes."""
    judge = _indexed(judge_all, key, "judge_all")
    human = _indexed(human_labelled, key, "human_labelled")
    notes: list[str] = []
    outside = human.index.difference(judge.index, sort=False)
    if len(outside):
        notes.append(f"{len(outside)} labelled segment(s) are not among the judged segments and are left out "
                     f"(e.g. {list(outside[:3])})")
    labelled = human.index.intersection(judge.index, sort=False)
    human = human.loc[labelled]
    weights = None
    if weight_col is not None:
        if weight_col not in human.columns:
            raise ValueError(f"human_labelled lacks the weight column {weight_col!r}; has {list(human.columns)}")
        weights = pd.to_numeric(human[weight_col], errors="coerce").to_numpy(dtype=np.float64)
        _weights(weights, len(weights), f"human_labelled[{weight_col!r}]")  # validates
    strata = None
    if stratum_col is not None:
        if stratum_col not in human.columns:
            raise ValueError(f"human_labelled lacks the stratum column {stratum_col!r}; has {list(human.columns)}")
        strata = human[stratum_col].astype(str).to_numpy()
    design = SRS_DESIGN if weights is None else WEIGHTED_DESIGN
    is_labelled = judge.index.isin(labelled)
    wanted = [f for f, _ in HEADLINE_FIGURES] if figures is None else list(figures)
    kinds = dict(HEADLINE_FIGURES)
    out: list[CorrectedFigure] = []
    for figure in wanted:
        if figure not in kinds:
            raise ValueError(f"unknown figure {figure!r}; expected one of {list(kinds)}")
        kind = kinds[figure]
        missing = [what for what, frame in (("judge_all", judge), ("human_labelled", human))
                   if not _available(frame, figure)]
        if missing:
            notes.append(f"{figure}: not computed, {' and '.join(missing)} lack(s) its column")
            continue
        all_values = figure_values(judge, figure)
        finite_all = np.isfinite(all_values)
        judge_iv = _judge_only(all_values[finite_all], confidence) if finite_all.sum() >= MIN_LABELLED else Interval(
            math.nan, math.nan, math.nan, int(finite_all.sum()), int(finite_all.sum()), "none", confidence)
        y = figure_values(human, figure)
        yhat = figure_values(judge.loc[labelled], figure)
        pair = np.isfinite(y) & np.isfinite(yhat)
        unl_mask = finite_all & (~is_labelled if weights is None else np.ones(len(judge), dtype=bool))
        yu = all_values[unl_mask]
        n_lab, n_unl = int(pair.sum()), int(unl_mask.sum())
        row_notes = []
        if (~pair).any():
            row_notes.append(f"{int((~pair).sum())} labelled segment(s) without a value on both sides left out")
        if n_lab < MIN_LABELLED:
            row_notes.append(f"fewer than {MIN_LABELLED} labelled segments with a value: no correction")
            out.append(_missing_row(figure, kind, judge_iv, n_lab, n_unl, design, "; ".join(row_notes), confidence))
            continue
        w = None if weights is None else weights[pair]
        labels = classical_mean(y[pair], w=w, confidence=confidence)
        ppi = ppi_mean(y[pair], yhat[pair], yu, w=w, strata=None if strata is None else strata[pair],
                       confidence=confidence)
        note = "; ".join(row_notes)
        labels_method = "labels only, " + ("normal" if labels.df is None else f"Student-t, {labels.df:.3g} df")
        sim = simulated_coverage_at(n_lab, kind, weights is not None)
        out.append(CorrectedFigure(figure, kind, judge_iv, labels.interval(labels_method, note),
                                   ppi.interval(ppi.rule.describe() if ppi.rule else "PPI", note), ppi.lam,
                                   effective_labels(labels, ppi), n_lab, n_unl, design, note, sim.ppi,
                                   coverage_note(n_lab, kind, weights is not None, confidence)))
    return out, notes


def corrected_estimates(judge_all: pd.DataFrame, human_labelled: pd.DataFrame, *, key: str = "segment_id",
                        weight_col: str | None = None, stratum_col: str | None = None,
                        figures: Sequence[str] | None = None, confidence: float = CONFIDENCE) -> pd.DataFrame:
    """The headline figures judge-only, labels-only and PPI++ side by side, one row per figure.

    ``judge_all``: one row per judged segment of the run (e.g.
    :func:`axon_eval.stats.intervals.headline_segments`), columns ``key``, ``score``, ``band``, the
    dimensions and optionally ``capped``. ``human_labelled``: one row per labelled segment with the
    human values under the same column names (a consensus of raters, scored by the rubric), and for a
    stratified design a ``weight_col`` holding each segment's design weight ``N_h / n_h`` and optionally a
    ``stratum_col`` naming its stratum (for the ``lam`` rule of :func:`ppi_rule`; without it, segments of
    equal weight are one group). The judge's
    values of the labelled segments are taken from ``judge_all`` by ``key``, so the pairs cannot be
    misaligned. A figure whose column either frame lacks is skipped and named in ``attrs["notes"]``;
    labelled segments the judge did not judge are left out and counted there too.

    Columns :data:`CORRECTED_COLUMNS`: ``judge_*`` (CLT over all judged segments), ``labels_*``
    (:func:`classical_mean`), ``ppi_*`` (:func:`ppi_mean`; ``lam`` and the interval by :func:`ppi_rule`,
    ``ppi_method`` says which), ``lam``, ``effective_labels``, ``n_labelled``, ``n_unlabelled`` (judge values
    in the imputed term), ``design``, ``note``, and the SIMULATED coverage of the intervals at the nearest
    simulated n (``simulated_coverage``, PPI's; ``coverage_note``, the sentence to print beside the figure).
    Shares are fractions. ``attrs``: ``design``, ``confidence``, ``notes``, ``covers`` (:data:`PPI_COVERS`).
    """
    records, notes = corrected_figures(judge_all, human_labelled, key=key, weight_col=weight_col,
                                       stratum_col=stratum_col, figures=figures, confidence=confidence)
    frame = pd.DataFrame([r.row() for r in records], columns=list(CORRECTED_COLUMNS))
    frame.attrs.update({"design": SRS_DESIGN if weight_col is None else WEIGHTED_DESIGN,
                        "confidence": confidence, "notes": notes, "covers": PPI_COVERS})
    return frame


def format_corrected(table: pd.DataFrame) -> list[str]:
    """One line per figure of :func:`corrected_estimates` for people (shares as percentages), each with
    the SIMULATED coverage its intervals had at the nearest simulated n."""
    from ..display import fmt_estimate

    lines = []
    for r in table.itertuples(index=False):
        share = r.kind == "share"

        def iv(prefix: str) -> str:
            est, lo, hi = (getattr(r, f"{prefix}_{k}") for k in ("estimate", "lo", "hi"))
            if math.isnan(est):
                return "-"
            if prefix != "judge" and r.n_labelled < MIN_INFORMATIVE_LABELS:
                return f"not informative ({r.n_labelled} labels, fewer than {MIN_INFORMATIVE_LABELS})"
            return fmt_estimate(est, lo, hi, share=share)

        eff = "" if math.isnan(r.effective_labels) else (f"; PPI is as precise as {r.effective_labels:.0f} labels "
                                                           f"alone ({r.n_labelled} labelled)")
        quoted = f" [{r.coverage_note}]" if getattr(r, "coverage_note", "") else ""
        lines.append(f"{r.figure}: judge only {iv('judge')}, labels only {iv('labels')}, PPI {iv('ppi')}{eff}{quoted}")
    lines.extend(table.attrs.get("notes", []))
    lines.append(table.attrs.get("covers", PPI_COVERS))
    return lines
