"""Weight recalibration, the fits: rubric weights by constrained least squares and by an ordinal logistic model.

The data and its target scores are in :mod:`axon_eval.stats.recalibration_data`.

(a) Constrained least squares (:func:`fit_least_squares`)
---------------------------------------------------------
The rubric's own score as a function of the weights, with null faithfulness renormalised exactly as the
scorer does and the weight-independent caps of the base rubric applied (``c_i`` = the lowest cap that
triggers for segment ``i``, ``inf`` when none)::

    r_i(w) = 10 * sum_d w_d o_id s_id / sum_d w_d o_id          (raw score, 0-100)
    p_i(w) = min(r_i(w), c_i)
    w_hat  = argmin_w  L(w) = (1/n) sum_i (p_i(w) - y_i)^2
             subject to  w_d >= 0,  sum_d w_d = 1,
                         w_intent + w_sql + w_relevance >= m   (only when some segment has null faithfulness)

``r_i`` is undefined where ``sum_d w_d o_id = 0``: a segment with null faithfulness and no weight on the
three always-observed dimensions cannot be scored. :func:`predicted_scores` returns NaN with the reason
there (never 0), and the floor ``m`` (:data:`MIN_OBSERVED_WEIGHT`, 0.01) keeps the fit, and so its
proposal, away from that face of the simplex; ``L`` is discontinuous on it (the limit depends on the
direction of approach), which is where a gradient method alone stalls.

``L`` is not convex (the renormalised rows are ratios in ``w``; the caps add kinks), so the fit is global
then local:

1. **grid**: ``L`` on every point of the simplex grid ``w = k / K``, ``k`` non-negative integers summing
   to ``K = 1 / step`` (:data:`LSQ_GRID_STEP` 0.02: 23,426 points; points violating the floor left out),
   vectorised;
2. **polish**: SLSQP (``scipy.optimize.minimize``, analytic gradient
   ``dr_i/dw_d = 10 * o_id * (s_id - r_i / 10) / sum_k w_k o_ik``, 0 where the cap binds) from the
   :data:`LSQ_POLISH_POINTS` best grid points (each more than two steps from the ones before it), the
   base weights and equal weights (or the ``starts`` given);
3. **choose**: every polished point (clipped to the simplex and the floor) and the best grid point are
   candidates; the returned one has the smallest ``L``, except that among the candidates within a
   relative :data:`LSQ_OBJECTIVE_RTOL` of the smallest a converged one is preferred. The result is never
   worse than the best grid point (beyond that tolerance).

``converged`` describes the returned point: SLSQP reported success from it, or it passes the KKT check
-- ``grad L = lambda 1 + sum_{d: w_d = 0} nu_d e_d + mu a`` with ``nu, mu >= 0`` (``a`` the floor's
normal, when it binds) solved by bounded least squares (``scipy.optimize.lsq_linear``), the residual's
largest component at most :data:`LSQ_KKT_TOL` times ``1 + max_d |dL/dw_d|``. ``method`` names the
candidate returned (e.g. ``SLSQP from grid point 1``), ``grid_step`` and ``rmse_grid`` the grid and its
best point. The fit is on the unrounded capped score (rounding to 0.1 is a step function with no
gradient). A segment whose cap binds contributes a constant: the weights cannot move it.
``apply_caps=False`` fits the raw score instead.

(b) Ordinal logistic model (:func:`fit_ordinal`)
------------------------------------------------
A proportional-odds model of the labelled band on the four subscores (statsmodels ``OrderedModel``,
``distr="logit"``, thresholds instead of an intercept)::

    P(v_i <= k) = logistic(theta_k - sum_d beta_d x_id),   k in {poor, partial}  (poor < partial < good)

``x_id = s_id``, except that a null faithfulness is imputed as the base rubric's renormalised weighted
mean of the segment's three observed subscores (the value that leaves the base rubric's score unchanged:
the renormalisation written as an imputation). Segments with a triggered cap are left out of this fit
(``exclude_capped=True``): their band is set, or bounded, by the cap, not by the subscores.

Weights from coefficients: ``w_d = max(beta_d, 0) / sum_k max(beta_k, 0)``. Its limits, all recorded:

* only the *direction* of ``beta`` is used; its scale and the thresholds ``theta`` are dropped, so the
  ordinal weights carry no information about where the band edges should be (the proposal keeps 80 / 50);
* a negative coefficient (a higher subscore going with a worse band) becomes weight 0 and is listed in
  ``negative``; a subscore that does not vary in the data cannot be estimated, is dropped from the model
  and gets weight 0 (``dropped``); when no coefficient is positive there are no weights (``None``);
* (quasi-)separation -- a subscore that sorts the bands perfectly -- makes the likelihood maximum lie at
  infinity: the optimiser stops with huge coefficients. ``separation_suspected`` is set when the fit did
  not converge, a standard error is not finite, or some ``|beta_d| > 10`` (one subscore point multiplying
  the odds by e^10); statsmodels' warnings are kept in ``warnings``.
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy.optimize import lsq_linear, minimize

from ..rubric import DIMENSIONS, Rubric
from ..scoring import _effective_caps
from .recalibration_data import (ALWAYS_OBSERVED, LabelledSegments, LSQ_ACTIVE_TOL, LSQ_GRID_STEP, LSQ_KINK_TOL,
    LSQ_KKT_TOL, LSQ_OBJECTIVE_RTOL, LSQ_POLISH_POINTS, MIN_OBSERVED_WEIGHT, ORDINAL_ORDER, predicted_scores,
    SEPARATION_COEF, _as_dict, _GRID_BLOCK_CELLS, _weights_vector)


# =============================================================================================
# (a) constrained least squares
# =============================================================================================
@dataclass(frozen=True)
class LeastSquaresFit:
    """``weights``: the fitted vector; ``rmse``: root mean squared error of ``p_i`` against ``y_i`` (points);
    ``rmse_base``: the same under the base weights; ``n_capped``: segments whose cap binds at the optimum
    (the weights cannot move them). ``converged``: the returned point is a verified local optimum (SLSQP
    reported success from it, or the KKT check passed; ``kkt_residual`` is the check's relative residual);
    ``message``: how it was found and checked. ``method``: the candidate returned (``SLSQP from grid point
    k``, ``... from nominal weights``, ``... from equal weights``, ``... from start k``, or ``grid point``);
    ``grid_step``, ``n_grid``: the simplex grid evaluated; ``rmse_grid``: its best point's RMSE (the fit
    is never worse); ``min_observed_weight``: the floor on ``w_intent + w_sql + w_relevance`` applied
    (0 when no segment has null faithfulness); ``n_starts``: SLSQP runs."""

    weights: dict[str, float]
    rmse: float
    rmse_base: float
    n: int
    n_capped: int
    converged: bool
    message: str
    apply_caps: bool
    method: str
    grid_step: float
    n_grid: int
    rmse_grid: float
    min_observed_weight: float
    kkt_residual: float
    n_starts: int


@functools.lru_cache(maxsize=8)
def simplex_grid(step: float = LSQ_GRID_STEP) -> np.ndarray:
    """Every ``w = k / K`` with ``k`` non-negative integers summing to ``K = 1 / step``: (C(K+3, 3), 4), read-only."""
    k = int(round(1.0 / step))
    if k < 1 or abs(k * step - 1.0) > 1e-9:
        raise ValueError(f"grid step must be 1 / K for a positive integer K, got {step}")
    a, b, c = np.meshgrid(*(np.arange(k + 1),) * 3, indexing="ij")
    keep = a + b + c <= k
    units = np.column_stack([a[keep], b[keep], c[keep], k - a[keep] - b[keep] - c[keep]])
    grid = units / float(k)
    grid.setflags(write=False)
    return grid


def _project_feasible(w: np.ndarray, floor: float) -> np.ndarray:
    """Clip to ``w >= 0``, rescale to sum 1 and, if ``w_0 + w_1 + w_2`` fell below ``floor``, raise it to it."""
    w = np.clip(np.asarray(w, dtype=np.float64), 0.0, None)
    w = w / w.sum() if w.sum() > 0 else np.full(len(w), 1.0 / len(w))
    observed = w[:3].sum()
    if observed < floor:
        w[:3] = w[:3] * (floor / observed) if observed > 0 else floor / 3.0
        w[3] = 1.0 - floor
    return w


def _split(w: np.ndarray) -> np.ndarray:
    """``w`` -> ``x = (u, t)``: ``t = w_0 + w_1 + w_2``, ``u = w[:3] / t`` (equal thirds when ``t = 0``)."""
    t = float(w[:3].sum())
    u = w[:3] / t if t > 0 else np.full(3, 1.0 / 3.0)
    return np.append(u, t)


def _join(x: np.ndarray) -> np.ndarray:
    """``x = (u, t)`` -> ``w = (t u, 1 - t)``."""
    return np.append(x[3] * x[:3], 1.0 - x[3])


def _grad_x(x: np.ndarray, grad_w: np.ndarray) -> np.ndarray:
    """Chain rule: ``dL/du_k = t dL/dw_k``, ``dL/dt = sum_k u_k dL/dw_k - dL/dw_3``."""
    return np.append(x[3] * grad_w[:3], x[:3] @ grad_w[:3] - grad_w[3])


def _kkt_residual(x: np.ndarray, grad: np.ndarray, floor: float, kinks: np.ndarray | None = None) -> float:
    """Relative stationarity residual of ``x = (u, t)`` on {u >= 0, sum u = 1, floor <= t <= 1}.

    ``grad + sum_j theta_j h_j = lambda (1, 1, 1, 0) + sum_{u_k = 0} nu_k e_k + mu_lo e_t [t = floor]
    - mu_hi e_t [t = 1]`` with ``nu, mu >= 0`` and ``theta_j`` in [0, 1], solved by bounded least squares.
    ``grad`` leaves out the segments sitting at their cap (``|r_i - c_i|`` at most :data:`LSQ_KINK_TOL`),
    whose loss has a kink there; ``kinks`` (4, k) holds their gradients on the uncapped side ``h_j``, so
    ``theta`` spans the subdifferential (Clarke stationarity; plain KKT when no segment is at its cap).
    Returns ``max |residual| / (1 + max |grad|)`` (0 at a stationary point; ``inf`` if not finite).
    """
    if not np.all(np.isfinite(grad)):
        return float("inf")
    eye = np.eye(4)
    cols, lower, upper = [np.array([1.0, 1.0, 1.0, 0.0])], [-np.inf], [np.inf]
    for k in np.flatnonzero(x[:3] <= LSQ_ACTIVE_TOL):
        cols.append(eye[k])
        lower.append(0.0)
        upper.append(np.inf)
    if x[3] - floor <= LSQ_ACTIVE_TOL:
        cols.append(eye[3])
        lower.append(0.0)
        upper.append(np.inf)
    if 1.0 - x[3] <= LSQ_ACTIVE_TOL:
        cols.append(-eye[3])
        lower.append(0.0)
        upper.append(np.inf)
    for h in (kinks.T if kinks is not None else ()):
        cols.append(-h)
        lower.append(0.0)
        upper.append(1.0)
    a = np.column_stack(cols)
    sol = lsq_linear(a, grad, bounds=(np.array(lower), np.array(upper)), method="bvls")
    scale = 1.0 + max(np.abs(grad).max(), np.abs(kinks).max() if kinks is not None and kinks.size else 0.0)
    return float(np.abs(grad - a @ sol.x).max() / scale)


@dataclass(frozen=True)
class _Candidate:
    w: np.ndarray
    loss: float
    converged: bool
    kkt: float
    method: str
    message: str
    order: int


def fit_least_squares(data: LabelledSegments, base: Rubric | None = None, *, apply_caps: bool = True,
                      starts: Sequence[Mapping[str, float]] | None = None, grid_step: float = LSQ_GRID_STEP,
                      min_observed_weight: float | None = None) -> LeastSquaresFit:
    """Weights minimising ``sum_i (p_i(w) - y_i)^2`` on the simplex: a grid, polished by SLSQP (module
    docstring, (a)).

    ``starts``: SLSQP starts instead of the base and equal weights (the best grid points are always
    polished). ``min_observed_weight``: the floor on ``w_intent + w_sql + w_relevance``; ``None`` applies
    :data:`MIN_OBSERVED_WEIGHT` when some segment has null faithfulness and no floor otherwise (pass the
    full data set's floor when fitting a subset, as the cross-validation does).
    """
    base = base or Rubric.default()
    if data.n == 0:
        raise ValueError("no labelled segments to fit")
    obs = ~np.isnan(data.subscores)
    missing = np.flatnonzero(~obs[:, :3].all(axis=1))
    if len(missing):
        raise ValueError(f"{len(missing)} segment(s) lack a required dimension ({', '.join(ALWAYS_OBSERVED)}); "
                         f"first ids: {[str(i) for i in data.segment_ids[missing[:5]]]}; only answer_faithfulness may be null")
    floor = (MIN_OBSERVED_WEIGHT if (~obs[:, 3]).any() else 0.0) if min_observed_weight is None \
        else float(min_observed_weight)
    if not 0.0 <= floor < 1.0:
        raise ValueError(f"min_observed_weight must be in [0, 1), got {min_observed_weight}")
    s0 = np.where(obs, data.subscores, 0.0)
    obs_f = obs.astype(np.float64)
    cap = _effective_caps(data.subscores, data.facts, base) if apply_caps else np.full(data.n, np.inf)
    y = data.y

    def loss_and_grad(w: np.ndarray, kink: np.ndarray | None = None) -> tuple[float, np.ndarray]:
        """``L(w)`` and its gradient; segments flagged in ``kink`` are left out of the gradient."""
        wo = obs * w
        den = np.maximum(wo.sum(axis=1), 1e-12)
        raw = 10.0 * (wo * s0).sum(axis=1) / den
        free = raw < cap
        pred = np.where(free, raw, cap)
        resid = pred - y
        drdw = 10.0 * obs * (s0 - raw[:, None] / 10.0) / den[:, None]
        use = free if kink is None else free & ~kink
        grad = 2.0 * ((resid * use)[:, None] * drdw).sum(axis=0) / len(y)
        return float((resid ** 2).mean()), grad  # the mean: same minimiser, a scale SLSQP's tolerance suits

    def stationarity(w: np.ndarray) -> float:
        """The KKT residual of :func:`_kkt_residual` at ``w`` (in ``(u, t)``), kinks of the caps included."""
        x = _split(w)
        raw = 10.0 * ((obs * w) * s0).sum(axis=1) / np.maximum((obs * w).sum(axis=1), 1e-12)
        kink = np.abs(raw - cap) <= LSQ_KINK_TOL
        _loss, grad = loss_and_grad(w, kink)
        drdw = 10.0 * obs[kink] * (s0[kink] - raw[kink, None] / 10.0) / np.maximum((obs[kink] * w).sum(axis=1),
                                                                                      1e-12)[:, None]
        h = 2.0 * (raw[kink] - y[kink])[:, None] * drdw / len(y)
        kinks = np.column_stack([_grad_x(x, row) for row in h]) if len(h) else None
        return _kkt_residual(x, _grad_x(x, grad), floor, kinks)

    def loss_at(w: np.ndarray) -> float:
        """``L(w)`` with an undefined score as ``inf`` (never a feasible optimum)."""
        den = (obs * w).sum(axis=1)
        return loss_and_grad(w)[0] if np.all(den > 0) else float("inf")

    # 1. grid, vectorised in blocks: num, den (points, segments)
    grid = simplex_grid(grid_step)
    grid = grid[grid[:, :3].sum(axis=1) >= floor - 1e-12] if floor > 0 else grid
    grid_loss = np.empty(len(grid))
    block = max(1, _GRID_BLOCK_CELLS // data.n)
    for lo in range(0, len(grid), block):
        g = grid[lo:lo + block]
        den = g @ obs_f.T
        with np.errstate(invalid="ignore", divide="ignore"):
            pred = np.minimum(10.0 * (g @ s0.T) / den, cap[None, :])
        sq = (pred - y[None, :]) ** 2
        grid_loss[lo:lo + block] = np.where((den > 0).all(axis=1), sq.mean(axis=1), np.inf)
    order = np.argsort(grid_loss, kind="stable")
    picked: list[int] = []
    for i in order:
        if not np.isfinite(grid_loss[i]) or len(picked) == LSQ_POLISH_POINTS:
            break
        if all(np.abs(grid[i] - grid[j]).max() > 2 * grid_step + 1e-12 for j in picked):
            picked.append(int(i))
    if not picked:
        raise ValueError("no grid point scores every labelled segment")  # unreachable: floor > 0 or all observed
    best_grid = picked[0]

    # 2. polish
    w_base = _weights_vector(base.weights.as_dict())
    named = ([("nominal weights", w_base), ("equal weights", np.full(4, 0.25))] if starts is None
             else [(f"start {k + 1}", _weights_vector(s)) for k, s in enumerate(starts)])
    runs = [(f"grid point {k + 1}", grid[i]) for k, i in enumerate(picked)] + named
    def loss_and_grad_x(x: np.ndarray) -> tuple[float, np.ndarray]:
        loss, grad = loss_and_grad(_join(x))
        return loss, _grad_x(x, grad)

    constraints = [{"type": "eq", "fun": lambda x: x[:3].sum() - 1.0, "jac": lambda x: np.array([1.0, 1.0, 1.0, 0.0])}]
    bounds = [(0.0, 1.0)] * 3 + [(floor, 1.0)]

    def candidate(w: np.ndarray, method: str, message: str, success: bool, k: int) -> _Candidate:
        loss = loss_at(w)
        kkt = stationarity(w) if np.isfinite(loss) else float("inf")
        return _Candidate(w, loss, bool(np.isfinite(loss) and (success or kkt <= LSQ_KKT_TOL)), kkt, method,
                          message, k)

    cands = [candidate(np.array(grid[best_grid]), "grid point", "best point of the grid (not polished)", False, 0)]
    for k, (label, w0) in enumerate(runs, start=1):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            res = minimize(loss_and_grad_x, _split(_project_feasible(w0, floor)), jac=True, method="SLSQP",
                           bounds=bounds, constraints=constraints, options={"ftol": 1e-12, "maxiter": 500})
        if not np.all(np.isfinite(res.x)):
            continue
        cands.append(candidate(_project_feasible(_join(res.x), floor), f"SLSQP from {label}", str(res.message),
                               bool(res.success), k))

    # 3. choose: least objective; within the tolerance of it, a converged candidate first
    best_loss = min(c.loss for c in cands)
    tied = [c for c in cands if c.loss <= best_loss + LSQ_OBJECTIVE_RTOL * abs(best_loss) + 1e-12]
    chosen = min(tied, key=lambda c: (not c.converged, c.loss, c.order))
    w = chosen.w
    check = "KKT check passed" if chosen.kkt <= LSQ_KKT_TOL else "KKT check failed"
    message = f"{chosen.method}: {chosen.message}; {check}"
    pred = predicted_scores(data, w, base, apply_caps=apply_caps)
    pred_base = predicted_scores(data, w_base, base, apply_caps=apply_caps)
    raw = predicted_scores(data, w, base, apply_caps=False)
    return LeastSquaresFit(
        weights=_as_dict(w), rmse=float(np.sqrt(np.mean((pred - y) ** 2))),
        rmse_base=float(np.sqrt(np.mean((pred_base - y) ** 2))), n=data.n, n_capped=int((raw > cap).sum()),
        converged=chosen.converged, message=message, apply_caps=apply_caps, method=chosen.method,
        grid_step=float(grid_step), n_grid=int(len(grid)), rmse_grid=float(np.sqrt(grid_loss[best_grid])),
        min_observed_weight=floor, kkt_residual=chosen.kkt, n_starts=len(runs))


# =============================================================================================
# (b) ordinal logistic model
# =============================================================================================
@dataclass(frozen=True)
class OrdinalFit:
    """``coefficients`` beta_d (None for a dropped dimension), ``std_errors``, ``thresholds`` theta_k
    (``poor/partial``, ``partial/good``), ``weights`` (normalised positive coefficients, or ``None`` when
    none is positive), ``negative`` / ``dropped`` dimensions, ``n`` segments fitted (``n_excluded_capped``
    left out), convergence, ``separation_suspected`` and statsmodels' ``warnings``."""

    coefficients: dict[str, float | None]
    std_errors: dict[str, float | None]
    thresholds: dict[str, float]
    weights: dict[str, float] | None
    negative: list[str]
    dropped: list[str]
    n: int
    n_excluded_capped: int
    n_imputed_faithfulness: int
    converged: bool
    separation_suspected: bool
    llf: float
    warnings: list[str] = field(default_factory=list)


def ordinal_design(data: LabelledSegments, base: Rubric | None = None, *, exclude_capped: bool = True
                   ) -> tuple[pd.DataFrame, pd.Series, int, int]:
    """(exog, ordered endog, n_excluded_capped, n_imputed) of the ordinal model (module docstring, (b))."""
    base = base or Rubric.default()
    subs = data.subscores.copy()
    w = _weights_vector(base.weights.as_dict())
    null_f = np.isnan(subs[:, 3])
    if null_f.any():
        subs[null_f, 3] = (subs[null_f, :3] * w[:3]).sum(axis=1) / w[:3].sum()
    keep = np.ones(data.n, dtype=bool)
    if exclude_capped:
        keep = ~np.isfinite(_effective_caps(data.subscores, data.facts, base))
    exog = pd.DataFrame(subs[keep], columns=list(DIMENSIONS))
    codes = np.array([ORDINAL_ORDER.index(v) for v in data.verdict[keep]], dtype=int)
    endog = pd.Series(pd.Categorical.from_codes(codes, categories=list(ORDINAL_ORDER), ordered=True), name="verdict")
    return exog, endog, int((~keep).sum()), int((null_f & keep).sum())


def fit_ordinal(data: LabelledSegments, base: Rubric | None = None, *, exclude_capped: bool = True,
                maxiter: int = 2000) -> OrdinalFit:
    """Proportional-odds logit of the labelled band on the subscores; weights from its coefficients."""
    from statsmodels.miscmodels.ordinal_model import OrderedModel

    exog, endog, n_capped, n_imputed = ordinal_design(data, base, exclude_capped=exclude_capped)
    present = [c for c in ORDINAL_ORDER if (endog == c).any()]
    if len(present) < 2:
        raise ValueError(f"the ordinal model needs at least two labelled bands, got {present} "
                         f"({len(endog)} segment(s))")
    dropped = [d for d in DIMENSIONS if exog[d].nunique() < 2]
    used = [d for d in DIMENSIONS if d not in dropped]
    if not used:
        raise ValueError("no subscore varies among the fitted segments")
    # categories absent from the data cannot have a threshold: model only the bands present
    endog = endog.cat.remove_unused_categories()
    caught: list[str] = []
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        model = OrderedModel(endog, exog[used], distr="logit")
        res = model.fit(method="bfgs", disp=False, maxiter=maxiter)
        try:
            bse = np.asarray(res.bse, dtype=np.float64)
        except Exception as exc:  # a singular Hessian
            caught.append(f"standard errors unavailable: {exc}")
            bse = np.full(len(res.params), np.nan)
    caught += [f"{w.category.__name__}: {w.message}" for w in record]
    params = np.asarray(res.params, dtype=np.float64)
    beta = dict(zip(used, params[: len(used)], strict=True))
    se = dict(zip(used, bse[: len(used)], strict=True))
    cuts = model.transform_threshold_params(res.params)[1:-1]
    cats = list(endog.cat.categories)
    thresholds = {f"{cats[k]}/{cats[k + 1]}": float(cuts[k]) for k in range(len(cuts))}
    converged = bool(res.mle_retvals.get("converged", False))
    separation = (not converged or not np.all(np.isfinite(bse[: len(used)]))
                  or any(abs(b) > SEPARATION_COEF for b in beta.values()))
    positive = {d: max(b, 0.0) for d, b in beta.items()}
    total = sum(positive.values())
    weights = ({d: (positive.get(d, 0.0) / total) for d in DIMENSIONS} if total > 0 else None)
    return OrdinalFit(
        coefficients={d: (float(beta[d]) if d in beta else None) for d in DIMENSIONS},
        std_errors={d: (float(se[d]) if d in se and math.isfinite(se[d]) else None) for d in DIMENSIONS},
        thresholds=thresholds, weights=weights, negative=[d for d, b in beta.items() if b < 0], dropped=dropped,
        n=len(endog), n_excluded_capped=n_capped, n_imputed_faithfulness=n_imputed, converged=converged,
        separation_suspected=bool(separation), llf=float(res.llf), warnings=caught)
