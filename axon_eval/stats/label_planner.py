"""Label budgets, the planner: how many labels each design needs for a target half-width.

Units and symbols as in :mod:`axon_eval.stats.label_budget`; the designs are in
:mod:`axon_eval.stats.label_designs`, their estimators in :mod:`axon_eval.stats.label_estimators`. The
uncertainty signals of the active design (:func:`error_model`, :func:`panel_spread`) are here too.

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
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any
import numpy as np
import pandas as pd
from .intervals import CONFIDENCE, z_value
from .ppi import MIN_LABELLED, PLAIN_PPI_LAM, SMALL_SAMPLE_LABELLED
from .label_designs import (ASSURANCE, DESIGNS, DETECT_POWER, LABELS_ONLY, LAM_GRID, MIN_MODEL_LABELS,
    MIN_PER_STRATUM, MIX_UNIFORM, neyman_allocation, SHRINK_LABELS, SIGNAL_FLOOR, signal_intensity,
    useless_signal_inflation, _cap)
from .label_estimators import kish_n, _quantile


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
