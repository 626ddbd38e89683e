"""Study 11, SIMULATED: how the labelling designs of :mod:`axon_eval.stats.label_budget` do, and whether
the planner's numbers hold.

Every number here comes from seeded SIMULATED replications of a labelling draw, on two populations, each
said for what it is:

* **bundled** (:func:`bundled_population`): the run's judged segments with their (constructed) labels
  as a census. Each replication resamples the segments with replacement (another run like this one:
  the published intervals cover the sampling of segments as well as of the labels) and then draws the
  labels; the truth is the census mean of the labels.
* **simulated** (:func:`simulated_population`): a SIMULATED population where the judge's error is
  concentrated: judge scores ``Yhat ~ N(JUDGE_MEAN, JUDGE_SD^2)``; human scores ``Y = Yhat - JUDGE_BIAS +
  e`` with ``e ~ N(0, HARD_SD^2)`` on a share :data:`HARD_SHARE` of the segments drawn at random
  (independently of the judge's band, so stratifying by band cannot find them) and ``N(0, EASY_SD^2)``
  elsewhere; scores are not clipped to 0-100 (a model, not a run). An uncertainty signal of correlation
  ``rho`` with the judge's absolute error ``a = |Y - Yhat|``::

      s = max(0, mean(a) + sd(a) * (rho * z(a) + sqrt(1 - rho^2) * eps)),   eps ~ N(0, 1)

  (``z(a)`` the standardised error; the realised correlation is reported, slightly off ``rho`` by the
  clipping at 0). Each replication draws a fresh population; the truth is ``JUDGE_MEAN - JUDGE_BIAS``.

The designs (:func:`simulate_design`): *labels only* and *uniform* PPI++ on the same uniform draw;
*stratified* PPI by the judge's band with the Neyman allocation from given strata SDs; *active* with a
signal known before labelling (one batch), or with ``model``: a batch-sequential design whose first
:data:`~axon_eval.stats.label_budget.FIRST_BATCH_SHARE` of the budget is uniform and whose second batch
is drawn with probabilities from the model of ``|label - judge|``
(:func:`~axon_eval.stats.label_budget.error_model`, cells = the judge's band) fitted on the first. A segment drawn in both batches reuses its
label: ``n_distinct`` counts the labels actually spent (the budget counts draws). Every replication
gets the estimator's own interval (``lam`` and the Student-t rule of :mod:`axon_eval.stats.ppi`).

**Labels saved** (:func:`labels_saved`): with ``B_d`` the rectifier variance per label measured in the
replications (``n * mean(se^2 - the run's own term)``, averaged over the budgets), the labels a design needs
for a mean half-width ``h`` are ``B_d / ((h / z)^2 - A)`` (``A`` the run's own term ``var(Y)/N``); labels saved
= uniform's minus active's, and their share ``1 - B_active / B_uniform`` does not depend on ``h``.

**Goals** (:data:`GOALS`), reported and recorded: with a signal of correlation at least
:data:`GOAL_SIGNAL_CORRELATION`, active reaches uniform PPI's half-width with at least
:data:`GOAL_SAVED_SHARE` fewer labels; with a useless signal (``rho = 0``) active is at most
:data:`GOAL_USELESS_WIDER` wider than uniform at every budget; every design's coverage within
:data:`COVERAGE_GOAL` at every budget shown (else the budget below which it fails).

**The plan** (:func:`plan_check`): the planner (:func:`axon_eval.stats.label_budget.plan_labels`) is given
a uniform pilot of :data:`PILOT_LABELS` labels from one simulated population and the signal of
correlation :data:`PLAN_CORRELATION`; each design is then simulated at its planned n, and the share of
replications whose half-width reaches the target is reported beside the planner's
:data:`~axon_eval.stats.label_budget.ASSURANCE`.

Pure: arrays in, frames and frozen records out.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..rubric import Rubric
from .intervals import CONFIDENCE, z_value
from .label_budget import (
    ASSURANCE,
    FIRST_BATCH_SHARE,
    LABELS_ONLY,
    MIN_MODEL_LABELS,
    MIX_UNIFORM,
    SHRINK_LABELS,
    SIGNAL_FLOOR,
    _cap,
    _quantile,
    ht_kernel,
    ht_lam,
    kish_n,
    neyman_allocation,
    pilot_model,
    plan_labels,
    signal_intensity,
    stratified_kernel,
    stratified_lam,
    systematic_sample,
)
from .ppi import PLAIN_PPI_LAM, SMALL_SAMPLE_LABELLED

STUDY = "11_label_budget"
#: Segments of the SIMULATED population (large beside the budgets, as a real run is).
SIM_SEGMENTS = 4000
#: The mean and SD (points) of the SIMULATED judge's scores.
JUDGE_MEAN, JUDGE_SD = 70.0, 18.0
#: The SIMULATED judge is this many points more lenient than people on average.
JUDGE_BIAS = 2.0
#: Share of SIMULATED segments where the judge errs much (the hard ones), and the error SDs (points).
HARD_SHARE = 0.15
HARD_SD, EASY_SD = 15.0, 3.0
#: Signal correlations with the judge's absolute error studied by default.
SIGNAL_CORRELATIONS: tuple[float, ...] = (0.0, 0.3, 0.6, 0.9)
#: Labels spent, by default.
BUDGETS: tuple[int, ...] = (10, 20, 30, 40, 50, 60)
#: Pilot labels the planner is given in the plan check, and the signal correlation it plans with.
PILOT_LABELS = 40
PLAN_CORRELATION = 0.6
#: Replications of the plan check (a pilot, a plan and a draw at the planned n in each), at most.
PLAN_REPLICATIONS = 200
#: Goals (module docstring).
GOAL_SIGNAL_CORRELATION = 0.6
GOAL_SAVED_SHARE = 0.30
GOAL_USELESS_WIDER = 0.10
COVERAGE_GOAL = (0.93, 0.97)
#: The designs of a curve, in order.
CURVE_DESIGNS: tuple[str, ...] = (LABELS_ONLY, "uniform", "stratified", "active")


# =============================================================================================
# Populations
# =============================================================================================
@dataclass
class Population:
    """``R`` replications of a population of ``N`` segments: judge values ``yhat`` and human values ``y``
    ``(R, N)``, stratum codes ``strata`` ``(R, N)`` (names ``strata_names``), the ``truth`` the intervals
    aim at, uncertainty ``signals`` by name (each ``(R, N)``), whether it is ``simulated`` and its
    ``description``."""

    name: str
    yhat: np.ndarray
    y: np.ndarray
    strata: np.ndarray
    strata_names: tuple[str, ...]
    truth: float
    signals: dict[str, np.ndarray] = field(default_factory=dict)
    simulated: bool = True
    description: str = ""

    @property
    def shape(self) -> tuple[int, int]:
        return self.y.shape

    def rows(self, sel: Any) -> Population:
        """The replications ``sel`` of this population."""
        return Population(self.name, self.yhat[sel], self.y[sel], self.strata[sel], self.strata_names, self.truth,
                          {k: v[sel] for k, v in self.signals.items()}, self.simulated, self.description)


def _band_codes(scores: np.ndarray, rubric: Rubric | None = None) -> tuple[np.ndarray, tuple[str, ...]]:
    """The judge's band of each score as codes into ``("good", "partial", "poor")`` (the rubric's edges)."""
    rb = rubric or Rubric.default()
    codes = np.where(scores >= rb.bands.good, 0, np.where(scores >= rb.bands.partial, 1, 2))
    return codes, ("good", "partial", "poor")


def simulated_population(n_replications: int, seed: int, *, correlations: Sequence[float] = SIGNAL_CORRELATIONS,
                         n_segments: int = SIM_SEGMENTS) -> Population:
    """The SIMULATED population of the module docstring, ``n_replications`` fresh draws of ``n_segments``;
    one signal per correlation (named ``rho=<value>``), all from the same noise (common random numbers)."""
    rng = np.random.default_rng([seed, 11, 1])
    shape = (int(n_replications), int(n_segments))
    yhat = JUDGE_MEAN + JUDGE_SD * rng.standard_normal(shape)
    hard = rng.random(shape) < HARD_SHARE
    y = yhat - JUDGE_BIAS + np.where(hard, HARD_SD, EASY_SD) * rng.standard_normal(shape)
    a = np.abs(y - yhat)
    za = (a - a.mean(-1, keepdims=True)) / a.std(-1, keepdims=True)
    eps = rng.standard_normal(shape)
    signals = {}
    for rho in correlations:
        if not 0 <= rho <= 1:
            raise ValueError(f"signal correlations must be in [0, 1], got {rho!r}")
        s = a.mean(-1, keepdims=True) + a.std(-1, keepdims=True) * (rho * za + math.sqrt(1 - rho ** 2) * eps)
        signals[signal_name(rho)] = np.maximum(s, 0.0)
    codes, names = _band_codes(yhat)
    desc = (f"SIMULATED: {n_segments:,} segments per replication; judge N({JUDGE_MEAN:g}, {JUDGE_SD:g}^2), people "
            f"{JUDGE_BIAS:g} points lower, the judge's error SD {HARD_SD:g} on {HARD_SHARE:.0%} of segments (at random) "
            f"and {EASY_SD:g} elsewhere; signals of correlation {', '.join(f'{r:g}' for r in correlations)} with "
            "the judge's absolute error")
    return Population("simulated", yhat, y, codes, names, JUDGE_MEAN - JUDGE_BIAS, signals, True, desc)


def signal_name(rho: float) -> str:
    """The name of the SIMULATED signal of correlation ``rho``: ``rho=0.6``."""
    return f"rho={rho:g}"


def bundled_population(yhat: Any, y: Any, strata: Any, n_replications: int, seed: int, *,
                       signals: Mapping[str, Any] | None = None, description: str = "") -> Population:
    """The bundled population of the module docstring: ``yhat``/``y``/``strata`` of the census (one value
    per segment), resampled with replacement ``n_replications`` times (row 0 included). ``signals``:
    per-segment uncertainty signals known before labelling, resampled alongside."""
    yh = np.asarray(yhat, dtype=np.float64)
    yy = np.asarray(y, dtype=np.float64)
    names, codes = np.unique(np.asarray(strata).astype(str), return_inverse=True)
    if not (yh.shape == yy.shape == codes.shape) or yh.ndim != 1:
        raise ValueError("yhat, y and strata must be one value per segment each")
    if not (np.isfinite(yh).all() and np.isfinite(yy).all()):
        raise ValueError("the census needs a judge and a human value for every segment")
    rng = np.random.default_rng([seed, 11, 2])
    idx = rng.integers(0, len(yh), size=(int(n_replications), len(yh)))
    sig = {k: np.asarray(v, dtype=np.float64)[idx] for k, v in (signals or {}).items()}
    return Population("bundled", yh[idx], yy[idx], codes[idx], tuple(names.tolist()), float(yy.mean()), sig, False,
                      description or f"the run's {len(yh)} judged segments with their labels, resampled")


# =============================================================================================
# One design at one budget
# =============================================================================================
def _take(a: np.ndarray, idx: np.ndarray) -> np.ndarray:
    return np.take_along_axis(a, idx, axis=-1)


def _drawn(mask: np.ndarray, n: int) -> np.ndarray:
    """The ``(R, n)`` column indices of a fixed-size draw's ``(R, N)`` mask."""
    idx = np.nonzero(mask)[1].reshape(mask.shape[0], -1)
    if idx.shape[1] != n:
        raise RuntimeError(f"the draw gave {idx.shape[1]} segments, expected {n}")
    return idx


def _active_pi(signal: np.ndarray, n: int, mix: float, floor: float) -> np.ndarray:
    """Row-wise :func:`~axon_eval.stats.label_budget.active_probabilities` of a ``(R, N)`` signal."""
    inten = np.vstack([signal_intensity(row, mix=mix, floor=floor) for row in signal]) if len(signal) < 64 else None
    if inten is None:
        s = signal.astype(np.float64)
        mean = np.nanmean(np.where(np.isfinite(s), s, np.nan), axis=-1, keepdims=True)
        s = np.where(np.isfinite(s), s, mean)
        s = np.maximum(s, floor * mean)
        inten = np.where(mean > 0, mix + (1 - mix) * s / s.mean(-1, keepdims=True), 1.0)
    pi = inten * (n / inten.sum(-1, keepdims=True))
    over = (pi > 1).any(-1)
    for i in np.flatnonzero(over):
        pi[i] = _cap(inten[i], n)
    return pi


def _model_signal(pop: Population, idx: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Row-wise :func:`~axon_eval.stats.label_budget.error_model` (cells = the strata) from the labelled
    columns ``idx`` with design weights ``w``."""
    reps, _ = pop.shape
    n_cells = len(pop.strata_names)
    r = _take(pop.y, idx) - _take(pop.yhat, idx)
    codes = _take(pop.strata, idx)
    wn = w / w.sum(-1, keepdims=True) * w.shape[-1]
    overall = (wn * r ** 2).sum(-1) / wn.sum(-1)
    flat = (codes + n_cells * np.arange(reps)[:, None]).ravel()
    num = np.bincount(flat, weights=(wn * r ** 2).ravel(), minlength=reps * n_cells).reshape(reps, n_cells)
    den = np.bincount(flat, weights=wn.ravel(), minlength=reps * n_cells).reshape(reps, n_cells)
    cell = np.sqrt((num + SHRINK_LABELS * overall[:, None]) / (den + SHRINK_LABELS))
    return _take(cell, pop.strata)


def simulate_design(pop: Population, design: str, n: int, *, seed: int, signal: str | None = None,
                    strata_sd: Sequence[float] | None = None, confidence: float = CONFIDENCE,
                    mix: float = MIX_UNIFORM, floor: float = SIGNAL_FLOOR) -> dict[str, np.ndarray]:
    """Every replication of ``design`` at a budget of ``n`` draws: arrays ``(R,)`` ``estimate``, ``se``,
    ``lo``, ``hi``, ``half_width``, ``covered``, ``imputed`` (the run's own sampling term ``var^(Y)/N``), ``n_distinct``
    (labels spent) and ``lam``. ``signal``: for ``active``, a name of ``pop.signals`` or ``model``
    (batch-sequential, module docstring). ``strata_sd``: the strata SDs of the Neyman allocation
    (``None``: proportional)."""
    reps, big_n = pop.shape
    if not 2 <= n <= big_n:
        raise ValueError(f"a budget must be between 2 and the {big_n} segments, got {n}")
    rng = np.random.default_rng([seed, 11, 3, n, CURVE_DESIGNS.index(design) if design in CURVE_DESIGNS else 9])
    mean_all, var_all = pop.yhat.mean(-1), pop.yhat.var(-1)
    small = n < SMALL_SAMPLE_LABELLED
    ddof = 1 if small else 0
    batches = None
    if design in (LABELS_ONLY, "uniform"):
        idx = _drawn(systematic_sample(np.full(big_n, n / big_n), rng, size=reps), n)
        pi = np.full((reps, n), n / big_n)
    elif design == "stratified":
        h = len(pop.strata_names)
        sd = np.ones(h) if strata_sd is None else np.asarray(strata_sd, dtype=np.float64)
        counts = np.stack([np.bincount(row, minlength=h) for row in pop.strata])
        alloc = np.zeros_like(counts)
        for i, c in enumerate(counts):
            present = c > 0
            alloc[i, present] = neyman_allocation(c[present], sd[present], n)
        pi_all = _take(alloc / np.maximum(counts, 1), pop.strata)
        idx = _drawn(systematic_sample(pi_all, rng, strata=pop.strata, size=reps), n)
        y, yh, codes = _take(pop.y, idx), _take(pop.yhat, idx), _take(pop.strata, idx)
        share = counts / big_n
        lam = np.full(reps, PLAIN_PPI_LAM)
        tune = alloc.min(-1) >= SMALL_SAMPLE_LABELLED
        if tune.any():
            lam[tune] = stratified_lam(y[tune], yh[tune], codes[tune], h, share[tune], var_all[tune], big_n)
        est, se, df, pterm = stratified_kernel(y, yh, codes, h, share, mean_all, var_all, big_n, lam)
        q = _quantile(np.where(np.isfinite(df), df, 1.0) if small else None, confidence)
        return _summary(pop, est, se, q, pterm, np.full(reps, n), lam)
    elif design == "active":
        if signal is None:
            raise ValueError("the active design needs a signal: a name of the population's signals, or 'model'")
        if signal == "model":
            n1 = max(1, math.ceil(FIRST_BATCH_SHARE * n))
            n2 = n - n1
            idx1 = _drawn(systematic_sample(np.full(big_n, n1 / big_n), rng, size=reps), n1)
            pi1 = np.full((reps, n1), n1 / big_n)
            if n2 == 0:
                idx, pi = idx1, pi1
            else:
                sig = (_model_signal(pop, idx1, 1.0 / pi1) if n1 >= MIN_MODEL_LABELS
                       else np.ones((reps, big_n)))
                pi_all = _active_pi(sig, n2, mix, floor)
                idx2 = _drawn(systematic_sample(pi_all, rng, size=reps), n2)
                idx = np.concatenate([idx1, idx2], axis=-1)
                pi = np.concatenate([pi1, _take(pi_all, idx2)], axis=-1)
                batches = [n1, n2]
        else:
            if signal not in pop.signals:
                raise ValueError(f"unknown signal {signal!r}; the population has {sorted(pop.signals)} (or 'model')")
            pi_all = _active_pi(pop.signals[signal], n, mix, floor)
            idx = _drawn(systematic_sample(pi_all, rng, size=reps), n)
            pi = _take(pi_all, idx)
    else:
        raise ValueError(f"unknown design {design!r}; expected one of {list(CURVE_DESIGNS)}")
    y, yh = _take(pop.y, idx), _take(pop.yhat, idx)
    if design == LABELS_ONLY:  # classical_mean: mean(y), sd(y) / sqrt(n)
        est, se = y.mean(-1), y.std(-1, ddof=ddof) / math.sqrt(n)
        q = _quantile(np.full(reps, n - 1.0) if small else None, confidence)
        return _summary(pop, est, se, q, np.zeros(reps), np.full(reps, n), np.zeros(reps))
    sizes = batches or [n]
    w = np.concatenate([(nb / n) / pi[:, sum(sizes[:i]):sum(sizes[:i + 1])] for i, nb in enumerate(sizes)], axis=-1)
    lam = np.full(reps, PLAIN_PPI_LAM) if small else ht_lam(y, yh, pi, var_all, big_n, batches)
    est, se, pterm = ht_kernel(y, yh, pi, mean_all, var_all, big_n, lam, ddof, batches)
    q = _quantile(np.maximum(kish_n(w) - 1.0, 1.0) if small else None, confidence)
    distinct = np.array([len(np.unique(row)) for row in idx]) if batches else np.full(reps, n)
    return _summary(pop, est, se, q, pterm, distinct, lam)


def _summary(pop: Population, est: np.ndarray, se: np.ndarray, q: np.ndarray, imputed: np.ndarray,
             distinct: np.ndarray, lam: np.ndarray) -> dict[str, np.ndarray]:
    half = np.asarray(q) * se
    lo, hi = est - half, est + half
    return {"estimate": est, "se": se, "lo": lo, "hi": hi, "half_width": half, "covered": (lo <= pop.truth) & (pop.truth <= hi),
            "imputed": imputed, "n_distinct": distinct.astype(np.float64), "lam": lam}


def curve_row(pop: Population, design: str, signal: str | None, n: int, sim: Mapping[str, np.ndarray]) -> dict[str, Any]:
    """One row of a curve table from :func:`simulate_design`'s arrays."""
    reps = len(sim["estimate"])
    cov = float(sim["covered"].mean())
    return {"population": pop.name, "design": design, "signal": signal, "n": int(n),
            "half_width": float(np.mean(sim["half_width"])), "half_width_median": float(np.median(sim["half_width"])),
            "coverage": cov, "coverage_mc_se": math.sqrt(cov * (1 - cov) / reps), "n_distinct": float(sim["n_distinct"].mean()),
            "rect_per_label": float(n * np.mean(sim["se"] ** 2 - sim["imputed"])), "imputed": float(np.mean(sim["imputed"])),
            "bias": float(np.mean(sim["estimate"]) - pop.truth), "truth": float(pop.truth), "replications": int(reps),
            "simulated": True}


def simulate_curves(pop: Population, budgets: Sequence[int], *, signals: Sequence[str], seed: int,
                    strata_sd: Sequence[float] | None = None, confidence: float = CONFIDENCE) -> pd.DataFrame:
    """Half-width and coverage of every design at every budget (:func:`curve_row` rows): labels only,
    uniform and stratified once, active once per signal in ``signals``."""
    rows = []
    for n in budgets:
        for design in CURVE_DESIGNS:
            for sig in (signals if design == "active" else [None]):
                sim = simulate_design(pop, design, int(n), seed=seed, signal=sig, strata_sd=strata_sd,
                                      confidence=confidence)
                rows.append(curve_row(pop, design, sig, int(n), sim))
    return pd.DataFrame(rows)


# =============================================================================================
# Labels saved, goals, the plan check
# =============================================================================================
def labels_saved(curves: pd.DataFrame, target_half_width: float, *, confidence: float = CONFIDENCE) -> pd.DataFrame:
    """Per active signal: the labels uniform PPI and the active design need for a mean half-width of
    ``target_half_width`` (module docstring), the labels saved and their share."""
    z = z_value(confidence)
    uni = curves[curves["design"] == "uniform"]
    b_u, a_u = float(uni["rect_per_label"].mean()), float(uni["imputed"].mean())
    rows = []
    for sig, g in curves[curves["design"] == "active"].groupby("signal", sort=False):
        b_a, a_a = float(g["rect_per_label"].mean()), float(g["imputed"].mean())
        need_u = b_u / ((target_half_width / z) ** 2 - a_u) if (target_half_width / z) ** 2 > a_u else math.inf
        need_a = b_a / ((target_half_width / z) ** 2 - a_a) if (target_half_width / z) ** 2 > a_a else math.inf
        wider = (g.set_index("n")["half_width"] / uni.set_index("n")["half_width"]).max() - 1
        rows.append({"signal": sig, "target_half_width": target_half_width, "n_uniform": need_u, "n_active": need_a,
                     "labels_saved": need_u - need_a, "share_saved": 1 - b_a / b_u,
                     "max_wider_than_uniform": float(wider), "simulated": True})
    return pd.DataFrame(rows)


def coverage_verdict(curves: pd.DataFrame, goal: tuple[float, float] = COVERAGE_GOAL) -> dict[str, Any]:
    """Whether every design's coverage is within ``goal`` at every budget, and for each (design, signal)
    that misses it the budgets where it does and the n below which it does not hold (``None`` when it
    misses at the largest budget too)."""
    out: dict[str, Any] = {"met": True, "range": list(goal), "misses": []}
    for (design, sig), g in curves.groupby(["design", "signal"], dropna=False, sort=False):
        g = g.sort_values("n")
        ok = g["coverage"].between(*goal)
        if ok.all():
            continue
        out["met"] = False
        bad = g.loc[~ok, "n"].tolist()
        holds_from = None
        if ok.iloc[-1]:
            last_bad = max(bad)
            later = g.loc[g["n"] > last_bad, "n"]
            holds_from = int(later.min()) if len(later) else None
        out["misses"].append({"design": design, "signal": None if pd.isna(sig) else sig, "n": [int(x) for x in bad],
                              "coverage": [round(float(c), 4) for c in g.loc[~ok, "coverage"]],
                              "holds_from_n": holds_from})
    return out


def plan_check(pop: Population, target_half_width: float, *, seed: int, signal: str, n_pilot: int = PILOT_LABELS,
               n_plans: int = PLAN_REPLICATIONS, correlation: float | None = None,
               confidence: float = CONFIDENCE) -> pd.DataFrame:
    """The planner against the simulated outcome (module docstring). In each of ``n_plans`` replications
    (each a fresh population) a uniform pilot of ``n_pilot`` labels is drawn (or, with ``correlation``,
    the planner is told that judge-human correlation instead), the planner plans every design from it
    (strata: the judge's band; the active design's ``signal``), and the labels are then drawn afresh at
    each planned n. One row per design: the planned n (``planned_n`` of the first
    replication, ``planned_n_median``/``_min``/``_max`` over them), the planner's assured and expected
    half-widths (medians), and over the replications the mean half-width at the planned n, the share
    reaching the target and the coverage."""
    reps, big_n = pop.shape
    k = min(int(n_plans), reps)
    plans: dict[str, list[Any]] = {}
    sds = []
    for row in range(k):
        rng = np.random.default_rng([seed, 11, 4, row])
        pos = np.flatnonzero(systematic_sample(np.full(big_n, n_pilot / big_n), rng))
        pilot = None if correlation is not None else pilot_model(
            pop.y[row, pos], pop.yhat[row, pos], pos, np.full(len(pos), big_n / n_pilot), pilot_design="uniform")
        strata = np.asarray(pop.strata_names, dtype=object)[pop.strata[row]]
        plan = plan_labels(pop.yhat[row], target_half_width=target_half_width, strata_all=strata,
                           signal=pop.signals[signal][row], pilot=pilot, correlation=correlation, confidence=confidence)
        sds.append(_pilot_strata_sd(pop, row, pos) if correlation is None else np.ones(len(pop.strata_names)))
        for d in plan.designs:
            plans.setdefault(d.design, []).append(d)
    rows = []
    for design, ds in plans.items():
        ns = np.array([np.nan if d.n is None else d.n for d in ds], dtype=np.float64)
        hw = np.full(k, np.nan)
        covered = np.zeros(k, dtype=bool)
        for n in np.unique(ns[np.isfinite(ns)]).astype(int):
            sel = np.flatnonzero(ns == n)
            sub = pop.rows(sel)
            sd = np.nanmean(np.vstack([sds[i] for i in sel]), axis=0)
            sim = simulate_design(sub, design, int(n), seed=seed + 1, signal=signal if design == "active" else None,
                                  strata_sd=sd, confidence=confidence)
            hw[sel], covered[sel] = sim["half_width"], sim["covered"]
        ok = np.isfinite(hw)
        rows.append({"design": design, "planned_n": ds[0].n,
                     "planned_n_median": float(np.nanmedian(ns)) if ok.any() else None,
                     "planned_n_min": float(np.nanmin(ns)) if ok.any() else None,
                     "planned_n_max": float(np.nanmax(ns)) if ok.any() else None,
                     "planned_half_width": float(np.nanmedian([d.half_width for d in ds])),
                     "expected_half_width": float(np.nanmedian([d.expected_half_width for d in ds])),
                     "simulated_half_width": float(hw[ok].mean()) if ok.any() else None,
                     "share_reaching_target": float((hw[ok] <= target_half_width).mean()) if ok.any() else None,
                     "coverage": float(covered[ok].mean()) if ok.any() else None,
                     "replications": int(ok.sum()), "unreachable": int((~ok).sum()), "note": ds[0].note})
    out = pd.DataFrame(rows)
    out.attrs.update(source=(f"uniform pilot of {n_pilot} labels per replication" if correlation is None else
                             f"a stated judge-human correlation of {correlation:g}"), pilot_labels=n_pilot,
                     target_half_width=target_half_width, signal=signal, assurance=ASSURANCE)
    return out


def _pilot_strata_sd(pop: Population, row: int, pos: np.ndarray) -> np.ndarray:
    """Within-stratum SDs of the rectifier ``Y - Yhat`` from a pilot (the pooled SD where a stratum has
    fewer than two pilot labels)."""
    r = pop.y[row, pos] - pop.yhat[row, pos]
    codes = pop.strata[row, pos]
    pooled = float(np.std(r, ddof=1))
    return np.array([float(np.std(r[codes == h], ddof=1)) if (codes == h).sum() >= 2 else pooled
                     for h in range(len(pop.strata_names))])


def strata_sd(pop: Population, row: int = 0) -> np.ndarray:
    """The within-stratum SDs of ``Y - Yhat`` in one replication of a population (for the bundled census,
    row 0 resampled; use the census itself for the true ones)."""
    return _pilot_strata_sd(pop, row, np.arange(pop.shape[1]))


# =============================================================================================
# The study
# =============================================================================================
@dataclass(frozen=True)
class LabelBudgetStudy:
    """What study 11 reports: the ``curves`` (per population, design, signal and budget), the
    ``labels_saved`` per signal correlation, the ``plan`` check, the ``goals`` and the ``signal``
    description, with the ``seed`` and ``n_replications``."""

    curves: pd.DataFrame
    labels_saved: pd.DataFrame
    plan: pd.DataFrame
    goals: dict[str, Any]
    signal: dict[str, Any]
    seed: int
    n_replications: int
    target_half_width: float
    notes: tuple[str, ...] = ()

    def designs_json(self) -> dict[str, list[dict[str, Any]]]:
        """``designs`` of study.json: per population, a list of (design, signal, budget) records."""
        keep = ["design", "signal", "n", "half_width", "coverage", "n_distinct", "bias", "truth", "replications"]
        return {p: [{k: _clean(v) for k, v in r.items()} for r in g[keep].to_dict("records")]
                for p, g in self.curves.groupby("population", sort=False)}

    def labels_saved_json(self) -> dict[str, dict[str, Any]]:
        return {str(r["signal"]).removeprefix("rho="): {k: _clean(v) for k, v in r.items() if k != "signal"}
                for r in self.labels_saved.to_dict("records")}

    def plan_json(self) -> dict[str, dict[str, Any]]:
        return {r["design"]: {k: _clean(v) for k, v in r.items() if k != "design"} for r in self.plan.to_dict("records")}


def _clean(v: Any) -> Any:
    if isinstance(v, float | np.floating):
        return None if not math.isfinite(float(v)) else float(v)
    if isinstance(v, np.integer):
        return int(v)
    return v


def goals(curves: pd.DataFrame, saved: pd.DataFrame) -> dict[str, Any]:
    """The study's goals (module docstring), each with ``met`` and what it was measured on."""
    strong = saved[saved["signal"].map(lambda s: float(str(s).removeprefix("rho=")) >= GOAL_SIGNAL_CORRELATION)]
    useless = saved[saved["signal"] == signal_name(0.0)]
    return {
        "active_saves_labels": {
            "goal": f"with a signal correlated {GOAL_SIGNAL_CORRELATION:g} or more with the judge's error, active "
                    f"reaches uniform PPI's half-width with at least {GOAL_SAVED_SHARE:.0%} fewer labels",
            "met": bool(len(strong)) and bool((strong["share_saved"] >= GOAL_SAVED_SHARE).all()),
            "share_saved": {str(r.signal): round(float(r.share_saved), 4) for r in strong.itertuples()}},
        "useless_signal_costs_little": {
            "goal": f"with a useless signal (correlation 0) active is never more than {GOAL_USELESS_WIDER:.0%} wider "
                    "than uniform at the same labels",
            "met": bool(len(useless)) and bool((useless["max_wider_than_uniform"] <= GOAL_USELESS_WIDER).all()),
            "max_wider": None if not len(useless) else round(float(useless["max_wider_than_uniform"].iloc[0]), 4)},
        "coverage": {"goal": f"coverage {COVERAGE_GOAL[0]:.0%}-{COVERAGE_GOAL[1]:.0%} at every n shown",
                     **{p: coverage_verdict(g) for p, g in curves.groupby("population", sort=False)}},
    }


def label_budget_study(bundled: Population, simulated: Population, *, budgets: Sequence[int], bundled_signals: Sequence[str],
                       target_half_width: float, seed: int, bundled_strata_sd: Sequence[float] | None = None,
                       confidence: float = CONFIDENCE) -> LabelBudgetStudy:
    """Study 11 on two populations (module docstring): the curves of both, labels saved and the goals on
    the simulated one, the plan check on the simulated one with the :data:`PLAN_CORRELATION` signal."""
    sim_signals = list(simulated.signals)
    sim_curves = simulate_curves(simulated, budgets, signals=sim_signals, seed=seed, confidence=confidence)
    bun_curves = simulate_curves(bundled, [n for n in budgets if n <= bundled.shape[1]], signals=list(bundled_signals),
                                 seed=seed, strata_sd=bundled_strata_sd, confidence=confidence)
    curves = pd.concat([bun_curves, sim_curves], ignore_index=True)
    saved = labels_saved(sim_curves, target_half_width, confidence=confidence)
    plan_signal = signal_name(PLAN_CORRELATION) if signal_name(PLAN_CORRELATION) in simulated.signals else sim_signals[-1]
    plan = plan_check(simulated, target_half_width, seed=seed, signal=plan_signal, confidence=confidence)
    realised = {k: round(float(np.mean([np.corrcoef(s, np.abs(y - yh))[0, 1]
                                        for s, y, yh in zip(v[:50], simulated.y[:50], simulated.yhat[:50], strict=True)])), 3)
                for k, v in simulated.signals.items()}
    signal = {"bundled": {"signals": list(bundled_signals), "description": bundled.description},
              "simulated": {"correlations": [float(k.removeprefix("rho=")) for k in sim_signals],
                            "realised_correlation": realised, "description": simulated.description},
              "mix_uniform": MIX_UNIFORM, "signal_floor": SIGNAL_FLOOR, "first_batch_share": FIRST_BATCH_SHARE,
              "shrink_labels": SHRINK_LABELS, "min_model_labels": MIN_MODEL_LABELS}
    return LabelBudgetStudy(curves, saved, plan, goals(curves, saved), signal, int(seed), int(simulated.shape[0]),
                            float(target_half_width))
