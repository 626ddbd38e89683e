"""Weight recalibration (study 07): rubric weights fitted to labels, two ways, with cross-validated agreement.

The technical reference says the weights are to be revisited against accumulated labels, not adjusted ad
hoc. This module does the fitting; it never changes a rubric in use. A fitted weight vector becomes a
*proposed* rubric (a new YAML file that ``extends:`` the base, with its own id) that a person may adopt
or not. With the bundled data the labels are CONSTRUCTED (:data:`axon_eval.labels.LABELS_NOTE`), not
human judgements, so the weights fitted to them must not be adopted: every record here carries that note.

Data
----
One row per labelled segment ``i``: the judge's subscores ``s_id`` (0-10; ``answer_faithfulness`` may be
null, observed mask ``o_id``), the trajectory facts, and the labelled verdict ``v_i`` in good / partial /
poor (:func:`labelled_segments` joins a run's results with a labels file on ``segment_id``). The labels
give bands, not scores, so the target score of a segment is the **midpoint of its labelled band** under
the base rubric's edges (:func:`band_targets`; 80 / 50 give good 90, partial 65, poor 25)::

    y_i = (good_edge + 100) / 2   if v_i = good
          (partial_edge + good_edge) / 2   if v_i = partial
          partial_edge / 2   if v_i = poor

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

(c) Cross-validated agreement (:func:`cross_validate`, :func:`cv_folds`)
-----------------------------------------------------------------------
``K`` stratified folds by labelled verdict, seeded (:func:`cv_folds`): within each verdict the segments
are permuted by ``numpy.random.default_rng(seed)`` and dealt to folds in turn, continuing the count across
verdicts so fold sizes differ by at most one. The SAME folds serve every method. For fold ``k`` each
method fits on the other folds; the held-out segments are scored by the scorer itself
(:func:`axon_eval.scoring.score_arrays`: renormalisation, caps, rounding, bands) under
``base.with_weights(w_hat)`` and Cohen's kappa (unweighted) of that band against the labelled verdict is
the fold's kappa (each fold's least-squares fit keeps the floor ``m`` of the whole data set; a fold's
weights that leave a held-out segment unscorable predict nothing there, with a note). The nominal rubric
(and any reference rubric, e.g. ``axon-v1-faithcap``) is scored on the same held-out folds without
fitting. Reported: the per-fold kappas, their mean (folds with an undefined kappa are left out and
counted), and the pooled kappa of all held-out predictions.

(d) Proposals (:func:`propose_rubric`, :func:`write_proposal`)
--------------------------------------------------------------
Weights rounded to 4 decimals (the residual of the rounding put on the largest weight so they sum to 1)
become a YAML rubric ``extends: <base>`` that gives only ``name`` and ``weights``; the returned Rubric is
loaded from that very text, so its id is the file's. Given the labelled segments, a proposal whose
rounded weights leave any of them unscorable (:func:`unscorable_segments`) is refused; the study records
the refusal (``proposal_rejected``) instead of proposing it. Nothing is written unless :func:`write_proposal` is
called, and it refuses to write inside the installed package or over an existing file.

(e) Perfect retrieval, fabricated answer (:func:`fabricated_answer_table`)
--------------------------------------------------------------------------
Subscores (10, 10, 10, 0), no trajectory cap: the score is ``100 * (1 - w_faithfulness)`` under any
weights, so 80 (good, at the edge) under ``axon-v1``; ``axon-v1-faithcap`` caps it at 49 (poor). The
table shows the score and band under each rubric given.
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml
from scipy.optimize import lsq_linear, minimize

from ..labels import LABELS_NOTE
from ..rubric import BANDS, CAP_FACTS, DIMENSIONS, Rubric
from ..scoring import UNSCORABLE_CODE, _effective_caps, score_arrays, score_frame, score_turn
from .agreement import cohens_kappa
from .sensitivity import Segments, segments_from_results

#: Ordered categories of the ordinal model, worst first.
ORDINAL_ORDER: tuple[str, ...] = ("poor", "partial", "good")
#: Coefficient magnitude above which separation is suspected (one point multiplies the odds by e^10).
SEPARATION_COEF = 10.0
METHODS: tuple[str, ...] = ("least_squares", "ordinal")
FABRICATED_SUBSCORES: dict[str, int] = {"intent_understood": 10, "sql_quality": 10, "result_relevance": 10,
                                        "answer_faithfulness": 0}
#: Printed on every page and carried by every record.
DO_NOT_ADOPT = ("the weights are fitted to constructed labels, not human judgements; do not adopt them")

#: The dimensions a judged segment always has (only ``answer_faithfulness`` may be null).
ALWAYS_OBSERVED: tuple[str, ...] = DIMENSIONS[:3]
#: Least-squares floor on ``w_intent + w_sql + w_relevance`` when a labelled segment has null faithfulness:
#: below it such a segment is scored on a vanishing weight, and at 0 it cannot be scored at all. Rounding
#: the proposal to 4 decimals moves the sum by at most 2e-4, so the proposal still scores every segment.
MIN_OBSERVED_WEIGHT = 0.01
#: Step of the coarse simplex grid of the least-squares fit (weights in multiples of it; 1 / step integer).
LSQ_GRID_STEP = 0.02
#: Best grid points (each more than two steps from the ones before it) polished by SLSQP.
LSQ_POLISH_POINTS = 4
#: Candidates whose objective is within this relative distance of the best tie; a converged one is preferred.
LSQ_OBJECTIVE_RTOL = 1e-8
#: KKT check: largest stationarity residual allowed, relative to ``1 + max_d |dL/dw_d|``.
LSQ_KKT_TOL = 1e-5
#: A weight at most this far from its bound (or the floor) counts as on it in the KKT check.
LSQ_ACTIVE_TOL = 1e-7
#: A segment whose raw score is within this many points of its cap sits on the cap's kink (KKT check).
LSQ_KINK_TOL = 1e-6
#: Grid points scored per block (bounds the (points x segments) work arrays to about 32 MB).
_GRID_BLOCK_CELLS = 4_000_000


# =============================================================================================
# Data
# =============================================================================================
def band_targets(rubric: Rubric | None = None) -> dict[str, float]:
    """Target score of each labelled band: the midpoint of the band on 0-100 under ``rubric``'s edges."""
    r = rubric or Rubric.default()
    g, p = float(r.bands.good), float(r.bands.partial)
    return {"good": (g + 100.0) / 2.0, "partial": (p + g) / 2.0, "poor": p / 2.0}


@dataclass(frozen=True)
class LabelledSegments:
    """Judged segments with a labelled verdict. ``subscores`` (n, 4) NaN = null faithfulness; ``facts``
    (n, 3) bool in ``CAP_FACTS`` order; ``verdict`` the labelled band; ``y`` the target score.
    ``n_unlabelled``: judged segments without a label (left out); ``n_labels_unmatched``: labels with no
    judged segment."""

    segment_ids: np.ndarray
    subscores: np.ndarray
    facts: np.ndarray
    verdict: np.ndarray
    y: np.ndarray
    targets: dict[str, float]
    n_unlabelled: int = 0
    n_labels_unmatched: int = 0

    @property
    def n(self) -> int:
        return int(self.subscores.shape[0])

    def subset(self, index: np.ndarray) -> LabelledSegments:
        return LabelledSegments(self.segment_ids[index], self.subscores[index], self.facts[index],
                                self.verdict[index], self.y[index], dict(self.targets))

    def frame(self) -> pd.DataFrame:
        df = pd.DataFrame(self.subscores, columns=list(DIMENSIONS))
        for j, f in enumerate(CAP_FACTS):
            df[f] = self.facts[:, j]
        df.insert(0, "segment_id", self.segment_ids)
        df["verdict"] = self.verdict
        df["y"] = self.y
        return df

    @classmethod
    def from_arrays(cls, subscores: Any, verdict: Sequence[str], *, facts: Any = None, y: Sequence[float] | None = None,
                    rubric: Rubric | None = None, segment_ids: Sequence[Any] | None = None) -> LabelledSegments:
        """Synthetic data: ``y`` defaults to the band midpoints of ``verdict``; ``facts`` to all False."""
        subs = np.clip(np.asarray(subscores, dtype=np.float64), 0.0, 10.0)
        if subs.ndim != 2 or subs.shape[1] != len(DIMENSIONS):
            raise ValueError(f"subscores must have shape (n, {len(DIMENSIONS)}), got {subs.shape}")
        n = subs.shape[0]
        fact_arr = np.zeros((n, len(CAP_FACTS)), dtype=bool) if facts is None else np.asarray(facts, dtype=bool)
        v = np.asarray(list(verdict), dtype=object)
        bad = sorted({str(x) for x in v if x not in BANDS})
        if bad:
            raise ValueError(f"verdicts must be one of {list(BANDS)}, got {bad}")
        targets = band_targets(rubric)
        target = np.array([targets[x] for x in v], dtype=np.float64) if y is None else np.asarray(y, dtype=np.float64)
        ids = np.arange(n) if segment_ids is None else np.asarray(list(segment_ids), dtype=object)
        return cls(ids, subs, fact_arr, v, target, targets)


def labelled_segments(results: pd.DataFrame | Segments, labels_df: pd.DataFrame, *, rubric: Rubric | None = None,
                      targets: Mapping[str, float] | None = None, aggregate: str | None = None) -> LabelledSegments:
    """Join a run's judged segments (a results frame or :class:`Segments`) with labels on ``segment_id``.

    ``labels_df`` needs ``segment_id`` and ``verdict`` (as :func:`axon_eval.labels.load_labels` returns).
    ``targets`` overrides the band midpoints of :func:`band_targets`.
    """
    seg = results if isinstance(results, Segments) else segments_from_results(results, aggregate=aggregate)
    missing = [c for c in ("segment_id", "verdict") if c not in labels_df.columns]
    if missing:
        raise ValueError(f"labels lack column(s) {missing}")
    tg = dict(targets) if targets is not None else band_targets(rubric)
    lab = labels_df.drop_duplicates("segment_id").set_index("segment_id")["verdict"]
    ids = pd.Series(seg.segment_ids, dtype=object)
    keep = ids.isin(lab.index).to_numpy()
    if not keep.any():
        raise ValueError("no judged segment has a label (check that the labels belong to this evidence)")
    verdict = lab.reindex(ids[keep]).to_numpy(dtype=object)
    bad = sorted({str(x) for x in verdict if x not in BANDS})
    if bad:
        raise ValueError(f"labelled verdicts must be one of {list(BANDS)}, got {bad}")
    y = np.array([tg[v] for v in verdict], dtype=np.float64)
    return LabelledSegments(np.asarray(seg.segment_ids, dtype=object)[keep], seg.subscores[keep], seg.facts[keep],
                            verdict, y, tg, n_unlabelled=int((~keep).sum()),
                            n_labels_unmatched=int((~lab.index.isin(ids)).sum()))


def _weights_vector(weights: Mapping[str, float] | Sequence[float] | np.ndarray) -> np.ndarray:
    if isinstance(weights, Mapping):
        return np.array([float(weights[d]) for d in DIMENSIONS])
    return np.asarray(weights, dtype=np.float64)


def _as_dict(w: np.ndarray) -> dict[str, float]:
    return {d: float(v) for d, v in zip(DIMENSIONS, w, strict=True)}


def predicted_scores(data: LabelledSegments, weights: Mapping[str, float] | np.ndarray, base: Rubric | None = None,
                     *, apply_caps: bool = True, return_reasons: bool = False) -> Any:
    """``p_i(w)`` of the module docstring (unrounded): renormalised raw score, capped by the base's caps.

    A segment whose observed dimensions carry no weight (``sum_d w_d o_id = 0``, e.g. null faithfulness
    under weights ``(0, 0, 0, 1)``) has no score: NaN, never 0. With ``return_reasons`` the result is
    ``(scores, reasons)``, ``reasons`` an object array holding ``""`` for scored segments and the reason
    otherwise; without it, unscorable segments raise a ``RuntimeWarning`` that names them.
    """
    base = base or Rubric.default()
    w = _weights_vector(weights)
    obs = ~np.isnan(data.subscores)
    s0 = np.where(obs, data.subscores, 0.0)
    wo = np.where(obs, w, 0.0)
    den = wo.sum(axis=1)
    scorable = den > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        raw = np.where(scorable, 10.0 * (wo * s0).sum(axis=1) / np.where(scorable, den, 1.0), np.nan)
    reasons = np.full(data.n, "", dtype=object)
    for i in np.flatnonzero(~scorable):
        names = [d for d, o in zip(DIMENSIONS, obs[i], strict=True) if o]
        null = [d for d, o in zip(DIMENSIONS, obs[i], strict=True) if not o]
        reasons[i] = (f"no score: the weights on its observed dimensions ({', '.join(names)}) sum to {den[i]:g}, "
                      f"expected a positive sum" + (f" ({', '.join(null)} null)" if null else ""))
    if not return_reasons and not scorable.all():
        bad = np.flatnonzero(~scorable)
        warnings.warn(f"{len(bad)} segment(s) cannot be scored under weights {_as_dict(w)} (first: "
                      f"{data.segment_ids[bad[0]]}: {reasons[bad[0]]}); their predicted score is NaN",
                      RuntimeWarning, stacklevel=2)
    out = raw if not apply_caps else np.minimum(raw, _effective_caps(data.subscores, data.facts, base))
    return (out, reasons) if return_reasons else out


def unscorable_segments(data: LabelledSegments, weights: Mapping[str, float] | np.ndarray) -> dict[Any, str]:
    """Segment id -> reason, for every segment of ``data`` that ``weights`` leave without a score (empty when
    all can be scored): those whose observed dimensions all have weight 0."""
    _scores, reasons = predicted_scores(data, weights, apply_caps=False, return_reasons=True)
    return {data.segment_ids[i]: str(reasons[i]) for i in np.flatnonzero(reasons != "")}


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


# =============================================================================================
# (c) cross-validation
# =============================================================================================
def cv_folds(verdict: Sequence[str], n_folds: int = 5, seed: int = 0) -> np.ndarray:
    """Fold number (0..K-1) of each segment: stratified by verdict, seeded (module docstring, (c))."""
    v = np.asarray(list(verdict), dtype=object)
    if n_folds < 2:
        raise ValueError(f"n_folds must be at least 2, got {n_folds}")
    if n_folds > len(v):
        raise ValueError(f"n_folds = {n_folds} exceeds the {len(v)} labelled segments")
    rng = np.random.default_rng(seed)
    folds = np.empty(len(v), dtype=int)
    position = 0
    for band in BANDS:
        idx = np.flatnonzero(v == band)
        for i in rng.permutation(idx):
            folds[i] = position % n_folds
            position += 1
    return folds


def band_kappa(data: LabelledSegments, rubric: Rubric) -> float:
    """Cohen's kappa of the scorer's band under ``rubric`` against the labelled verdict (all of ``data``).

    A rubric that leaves a segment unscorable gives it no band (never poor): refused with a
    ``ValueError`` naming the segments and the scorer's reason."""
    _raw, _score, code = score_arrays(data.subscores, data.facts, rubric)
    bad = np.flatnonzero(code == UNSCORABLE_CODE)
    if len(bad):
        reason = score_frame(data.frame().iloc[bad[:1]], rubric)["unscorable_reason"].iloc[0]
        raise ValueError(f"band_kappa: rubric {rubric.label} leaves {len(bad)} segment(s) unscorable (first ids "
                         f"{[str(i) for i in data.segment_ids[bad[:5]]]}; {reason}); they have no band to compare")
    return cohens_kappa([BANDS[c] for c in code], list(data.verdict))


@dataclass(frozen=True)
class CrossValidation:
    """``per_fold``: one row per (method, fold): the fold's weights (fitted methods), ``n_test``, ``kappa``
    (NaN when undefined), ``note``. ``summary``: one row per method: ``kappa_mean`` over defined folds,
    ``kappa_sd``, ``n_defined``, ``kappa_pooled`` over all held-out predictions. ``folds``: each segment's
    fold (the same for every method). ``predictions``: held-out band of every segment under each method."""

    n_folds: int
    seed: int
    folds: np.ndarray
    per_fold: pd.DataFrame
    summary: pd.DataFrame
    predictions: pd.DataFrame


def cross_validate(data: LabelledSegments, base: Rubric | None = None, *, n_folds: int = 5, seed: int = 0,
                   references: Mapping[str, Rubric] | None = None, apply_caps: bool = True,
                   exclude_capped: bool = True) -> CrossValidation:
    """K-fold cross-validated kappa of nominal, least squares, ordinal (and unfitted references), same folds."""
    base = base or Rubric.default()
    folds = cv_folds(data.verdict, n_folds, seed)
    fixed = {"nominal": base, **dict(references or {})}
    names = ["nominal", *METHODS, *[k for k in fixed if k != "nominal"]]
    predicted = {m: np.full(data.n, None, dtype=object) for m in names}
    # every fold's least-squares fit keeps weight where the whole data set needs it to score every segment
    floor = MIN_OBSERVED_WEIGHT if np.isnan(data.subscores[:, 3]).any() else 0.0
    rows = []
    for k in range(n_folds):
        test = folds == k
        train, held = data.subset(np.flatnonzero(~test)), data.subset(np.flatnonzero(test))
        rubrics: dict[str, tuple[Rubric | None, dict[str, float] | None, str]] = {
            m: (r, None, "") for m, r in fixed.items()}
        lsq = fit_least_squares(train, base, apply_caps=apply_caps, min_observed_weight=floor)
        rubrics["least_squares"] = (base.with_weights(lsq.weights, normalise=True), lsq.weights,
                                    "" if lsq.converged else f"not converged: {lsq.message}")
        try:
            ordf = fit_ordinal(train, base, exclude_capped=exclude_capped)
            if ordf.weights is None:
                rubrics["ordinal"] = (None, None, "no positive coefficient: no weights")
            else:
                rubrics["ordinal"] = (base.with_weights(ordf.weights, normalise=True), ordf.weights,
                                      "separation suspected" if ordf.separation_suspected else "")
        except ValueError as exc:
            rubrics["ordinal"] = (None, None, str(exc))
        for m in names:
            rub, w, note = rubrics[m]
            kappa = float("nan")
            unscorable = unscorable_segments(held, rub.weights.as_dict()) if rub is not None else {}
            if unscorable:
                rub, note = None, (note + "; " if note else "") + (
                    f"weights leave {len(unscorable)} held-out segment(s) unscorable: no prediction")
            if rub is not None:
                _raw, _score, code = score_arrays(held.subscores, held.facts, rub)
                bands = [BANDS[c] for c in code]
                predicted[m][test] = bands
                kappa = cohens_kappa(bands, list(held.verdict))
                if math.isnan(kappa):
                    note = (note + "; " if note else "") + "kappa undefined on this fold"
            rows.append({"method": m, "fold": k, "n_test": int(test.sum()), "kappa": kappa, "note": note,
                         **{f"w_{d}": (w or (rub.weights.as_dict() if rub is not None else {})).get(d, np.nan)
                            for d in DIMENSIONS}})
    per_fold = pd.DataFrame(rows)
    summary_rows = []
    for m in names:
        kap = per_fold.loc[per_fold["method"] == m, "kappa"].to_numpy(dtype=float)
        defined = kap[~np.isnan(kap)]
        pred = predicted[m]
        ok = np.array([p is not None for p in pred])
        pooled = cohens_kappa(list(pred[ok]), list(data.verdict[ok])) if ok.any() else float("nan")
        summary_rows.append({"method": m, "kappa_mean": float(defined.mean()) if len(defined) else float("nan"),
                             "kappa_sd": float(defined.std(ddof=1)) if len(defined) > 1 else float("nan"),
                             "n_defined": int(len(defined)), "kappa_pooled": pooled,
                             "n_predicted": int(ok.sum())})
    summary = pd.DataFrame(summary_rows).set_index("method")
    predictions = pd.DataFrame({"segment_id": data.segment_ids, "fold": folds, "verdict": data.verdict,
                                **{m: predicted[m] for m in names}})
    return CrossValidation(n_folds, seed, folds, per_fold, summary, predictions)


# =============================================================================================
# (d) proposals
# =============================================================================================
@dataclass(frozen=True)
class Proposal:
    """A proposed rubric: ``rubric`` (loaded from ``yaml_text``, so ``rubric.id`` is the file's id)."""

    name: str
    rubric: Rubric
    yaml_text: str
    weights: dict[str, float]
    extends: str

    @property
    def id(self) -> str:
        return self.rubric.id

    @property
    def filename(self) -> str:
        return f"{self.name}.yaml"


def round_weights(weights: Mapping[str, float], decimals: int = 4) -> dict[str, float]:
    """Weights rounded to ``decimals`` with the rounding residual on the largest, so they sum to 1."""
    w = _weights_vector(weights)
    if (w < 0).any() or w.sum() <= 0:
        raise ValueError(f"weights must be non-negative with a positive sum, got {dict(weights)}")
    w = w / w.sum()
    scale = 10 ** decimals
    units = np.round(w * scale).astype(np.int64)
    units[int(np.argmax(w))] += scale - int(units.sum())
    return {d: round(int(u) / scale, decimals) for d, u in zip(DIMENSIONS, units, strict=True)}


def propose_rubric(weights: Mapping[str, float], base: Rubric | None = None, name: str | None = None, *,
                   extends: str | None = None, comment: str | None = None, decimals: int = 4,
                   data: LabelledSegments | None = None) -> Proposal:
    """A proposed rubric ``base`` with other weights, as YAML that ``extends:`` the base (never written here).

    ``extends`` defaults to ``base.name`` (a packaged rubric name or a YAML path); the text is checked to
    resolve to exactly ``base`` with the new weights. ``comment`` lines head the file. With ``data`` (the
    labelled segments fitted), weights that after rounding leave any of them unscorable are refused
    (``ValueError`` naming the segments and the reason).
    """
    base = base or Rubric.default()
    parent = extends or base.name
    name = name or f"{base.name}-proposed"
    if name == base.name:
        raise ValueError("a proposed rubric needs a name of its own")
    w = round_weights(weights, decimals)
    if data is not None:
        bad = unscorable_segments(data, w)
        if bad:
            first = next(iter(bad))
            raise ValueError(f"proposal {name!r} refused: weights {w} leave {len(bad)} of {data.n} labelled "
                             f"segment(s) unscorable (first ids {[str(i) for i in list(bad)[:5]]}; {first}: "
                             f"{bad[first]})")
    header = [f"# PROPOSED rubric (not adopted): {base.name} with fitted weights."]
    for line in (comment or "").splitlines():
        header.append(f"# {line}".rstrip())
    header.append("# Adopting it is a decision for a person; nothing in axon_eval uses it unless named explicitly.")
    body = yaml.safe_dump({"extends": parent, "name": name, "weights": w}, sort_keys=False)
    text = "\n".join(header) + "\n" + body
    rubric = Rubric.from_dict(yaml.safe_load(text), source=f"proposal {name}")
    expected = base.with_weights(w).replace(name=name)
    if rubric.canonical() != expected.canonical():
        raise ValueError(f"extends {parent!r} does not resolve to the base rubric {base.label}; pass extends=")
    return Proposal(name=name, rubric=rubric, yaml_text=text, weights=w, extends=parent)


def write_proposal(proposal: Proposal, folder: str | Path) -> Path:
    """Write ``<folder>/<name>.yaml`` (the one I/O of this module): never inside the installed package,
    never over an existing file."""
    folder = Path(folder).resolve()
    package = Path(str(resources.files("axon_eval"))).resolve()
    if folder == package or package in folder.parents:
        raise ValueError(f"refusing to write a proposed rubric inside the package ({package}): it would be adopted")
    path = folder / proposal.filename
    if path.exists():
        raise FileExistsError(f"{path} exists; a proposal is never overwritten")
    folder.mkdir(parents=True, exist_ok=True)
    path.write_text(proposal.yaml_text, encoding="utf-8")
    return path


# =============================================================================================
# (e) perfect retrieval, fabricated answer
# =============================================================================================
def fabricated_answer_table(rubrics: Mapping[str, Rubric], subscores: Mapping[str, float | None] | None = None
                            ) -> pd.DataFrame:
    """Score and band of (10, 10, 10, 0) (no trajectory cap) under each rubric, with the arithmetic's parts."""
    subs = dict(subscores or FABRICATED_SUBSCORES)
    facts = {f: False for f in CAP_FACTS}
    rows = []
    for label, rub in rubrics.items():
        r = score_turn(subs, facts, rub)
        rows.append({"rubric": label, "name": rub.name, "rubric_id": rub.id,
                     "w_answer_faithfulness": rub.weights.answer_faithfulness, "raw_score": r.raw_score,
                     "score": r.score, "band": r.band, "caps_applied": ", ".join(r.caps_applied)})
    return pd.DataFrame(rows)


# =============================================================================================
# The study
# =============================================================================================
@dataclass(frozen=True)
class RecalibrationStudy:
    """Everything study 07 reports. ``to_json`` gives the study.json keys (see the notebook).

    ``proposals``: one :class:`Proposal` per method with weights (nothing written); ``proposals_rejected``:
    method -> why its weights were not proposed (they leave a labelled segment unscorable); ``fabricated``:
    the (10,10,10,0) table under nominal, each proposal and each reference rubric."""

    n: int
    n_folds: int
    seed: int
    base: Rubric
    targets: dict[str, float]
    least_squares: LeastSquaresFit
    ordinal: OrdinalFit
    cv: CrossValidation
    in_sample_kappa: dict[str, float]
    fabricated: pd.DataFrame
    proposals: dict[str, Proposal] = field(default_factory=dict)
    n_unlabelled: int = 0
    note: str = LABELS_NOTE
    proposals_rejected: dict[str, str] = field(default_factory=dict)

    @property
    def fitted_weights(self) -> dict[str, dict[str, float] | None]:
        return {"least_squares": self.least_squares.weights, "ordinal": self.ordinal.weights}

    def weights_table(self) -> pd.DataFrame:
        """Nominal and fitted weights side by side (rows = dimensions)."""
        cols = {"nominal": self.base.weights.as_dict(),
                **{m: (w if w is not None else {d: np.nan for d in DIMENSIONS}) for m, w in self.fitted_weights.items()}}
        return pd.DataFrame(cols).reindex(list(DIMENSIONS)).rename_axis("dimension")

    def cv_table(self) -> pd.DataFrame:
        """Per method: in-sample kappa, cross-validated kappa (mean, SD, pooled), folds defined."""
        t = self.cv.summary.copy()
        t.insert(0, "kappa_in_sample", [self.in_sample_kappa.get(m, np.nan) for m in t.index])
        return t

    def to_json(self) -> dict[str, Any]:
        def num(x: Any) -> Any:
            return None if x is None or (isinstance(x, float) and math.isnan(x)) else round(float(x), 6)

        def wdict(w: Mapping[str, float] | None) -> dict[str, float] | None:
            return None if w is None else {d: round(float(w[d]), 6) for d in DIMENSIONS}

        cv_kappa = {}
        for m, row in self.cv.summary.iterrows():
            per = self.cv.per_fold.loc[self.cv.per_fold["method"] == m].sort_values("fold")["kappa"]
            cv_kappa[m] = {"mean": num(row["kappa_mean"]), "sd": num(row["kappa_sd"]),
                           "pooled": num(row["kappa_pooled"]), "per_fold": [num(k) for k in per],
                           "n_defined": int(row["n_defined"])}
        ordf, lsq = self.ordinal, self.least_squares
        return {
            "n": self.n, "n_folds": self.n_folds, "seed": self.seed, "n_unlabelled": self.n_unlabelled,
            "labels_note": self.note, "do_not_adopt": DO_NOT_ADOPT,
            "base_rubric": {"name": self.base.name, "rubric_id": self.base.id},
            "targets": {k: float(v) for k, v in self.targets.items()},
            "nominal_weights": wdict(self.base.weights.as_dict()),
            "fitted_weights": {m: wdict(w) for m, w in self.fitted_weights.items()},
            "cv_kappa": cv_kappa,
            "in_sample_kappa": {m: num(k) for m, k in self.in_sample_kappa.items()},
            "least_squares": {"rmse": num(lsq.rmse), "rmse_nominal": num(lsq.rmse_base), "n_capped": lsq.n_capped,
                              "converged": lsq.converged, "method": lsq.method, "grid_step": lsq.grid_step,
                              "rmse_grid": num(lsq.rmse_grid), "min_observed_weight": lsq.min_observed_weight,
                              "proposal_rejected": self.proposals_rejected.get("least_squares")},
            "ordinal": {"coefficients": {d: num(v) for d, v in ordf.coefficients.items()},
                        "thresholds": {k: num(v) for k, v in ordf.thresholds.items()},
                        "negative": ordf.negative, "dropped": ordf.dropped, "n": ordf.n,
                        "n_excluded_capped": ordf.n_excluded_capped, "converged": ordf.converged,
                        "separation_suspected": ordf.separation_suspected, "warnings": ordf.warnings,
                        "proposal_rejected": self.proposals_rejected.get("ordinal")},
            "fabricated_10_10_10_0": [{"rubric": r["rubric"], "name": r["name"], "rubric_id": r["rubric_id"],
                                       "score": num(r["score"]), "band": r["band"]}
                                      for r in self.fabricated.to_dict("records")],
            "proposals": {m: {"name": p.name, "rubric_id": p.id, "extends": p.extends, "weights": p.weights}
                          for m, p in self.proposals.items()},
        }


#: The packaged candidate rubrics a study on ``axon-v1`` compares by default: a faithfulness cap at 49
#: (``poor``) and at 79 (``partial``), the two forms of "an unfaithful answer cannot be good".
DEFAULT_REFERENCES = ("axon-v1-faithcap", "axon-v1-faithpartial")


def recalibration_study(data: LabelledSegments, base: Rubric | None = None, *, n_folds: int = 5, seed: int = 0,
                        references: Mapping[str, Rubric] | None = None, apply_caps: bool = True,
                        exclude_capped: bool = True, constructed: bool = True,
                        provenance: str | None = None) -> RecalibrationStudy:
    """Both fits on all labelled segments, cross-validated kappas on shared seeded folds, the proposals and
    the (10,10,10,0) table.

    ``references``: unfitted rubrics to compare on the same folds and in the (10,10,10,0) table (default:
    the packaged candidates :data:`DEFAULT_REFERENCES` when ``base`` is ``axon-v1``). The fitted
    rubrics of the in-sample kappa and the (10,10,10,0) table are the proposals themselves (weights rounded
    to 4 decimals, names ``<base>-refit-least-squares`` / ``<base>-refit-ordinal``), so the ids shown are
    the ids of the files; the cross-validation refits unrounded weights fold by fold. ``constructed`` puts
    :data:`DO_NOT_ADOPT` at the head of each proposal; ``provenance`` (e.g. the source run and labels
    file) is added to its comment. Nothing is written.
    """
    base = base or Rubric.default()
    if references is None:
        references = ({name: Rubric.packaged(name) for name in DEFAULT_REFERENCES}
                      if base.id == Rubric.default().id else {})
    lsq = fit_least_squares(data, base, apply_caps=apply_caps)
    ordf = fit_ordinal(data, base, exclude_capped=exclude_capped)
    cv = cross_validate(data, base, n_folds=n_folds, seed=seed, references=references, apply_caps=apply_caps,
                        exclude_capped=exclude_capped)
    kappa_cv = cv.summary["kappa_mean"]
    proposals: dict[str, Proposal] = {}
    rejected: dict[str, str] = {}
    for method, weights in (("least_squares", lsq.weights), ("ordinal", ordf.weights)):
        if weights is None:
            continue
        lines = [f"{DO_NOT_ADOPT}." if constructed else "",
                 f"Fitted by {method} (axon_eval.stats.recalibration) to {data.n} labelled segments.",
                 provenance or "",
                 f"Cross-validated kappa {kappa_cv[method]:.3f} against nominal {kappa_cv['nominal']:.3f} "
                 f"({n_folds} folds, seed {seed})."]
        try:
            proposals[method] = propose_rubric(weights, base, name=f"{base.name}-refit-{method.replace('_', '-')}",
                                               comment="\n".join(x for x in lines if x), data=data)
        except ValueError as exc:  # weights that leave a labelled segment unscorable: reported, not proposed
            rejected[method] = str(exc)
    fitted = {m: p.rubric for m, p in proposals.items()}
    in_sample = {"nominal": band_kappa(data, base),
                 **{m: (band_kappa(data, fitted[m]) if m in fitted else float("nan")) for m in METHODS},
                 **{m: band_kappa(data, r) for m, r in references.items()}}
    table = fabricated_answer_table({"nominal": base, **fitted, **references})
    return RecalibrationStudy(n=data.n, n_folds=n_folds, seed=seed, base=base, targets=dict(data.targets),
                              least_squares=lsq, ordinal=ordf, cv=cv, in_sample_kappa=in_sample,
                              fabricated=table, proposals=proposals, n_unlabelled=data.n_unlabelled,
                              proposals_rejected=rejected)


__all__ = [
    "DO_NOT_ADOPT", "FABRICATED_SUBSCORES", "LabelledSegments", "LeastSquaresFit", "OrdinalFit", "CrossValidation",
    "Proposal", "RecalibrationStudy", "band_kappa", "band_targets", "cross_validate", "cv_folds",
    "fabricated_answer_table", "fit_least_squares", "fit_ordinal", "labelled_segments", "ordinal_design",
    "predicted_scores", "propose_rubric", "recalibration_study", "round_weights", "write_proposal",
    "ALWAYS_OBSERVED", "LSQ_GRID_STEP", "MIN_OBSERVED_WEIGHT", "simplex_grid", "unscorable_segments",
]
