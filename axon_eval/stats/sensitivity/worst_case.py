"""Weight sensitivity: the exact worst case per segment (:func:`worst_case`) and the bound.

``max`` / ``min`` of ``raw`` over ``P_d`` (box bounds ``l = max(0, w0 - d)``, ``u = min(1, w0 + d)``)
are linear programs, solved with ``scipy.optimize.linprog`` (HiGHS):

* faithfulness observed: ``max 10 s.w  s.t.  sum w = 1, l <= w <= u``;
* faithfulness null (Charnes & Cooper 1962): with ``y = t w``, ``t = 1 / (w_1 + w_2 + w_3)``:
  ``max 10 (s_1 y_1 + s_2 y_2 + s_3 y_3)  s.t.  y_1 + y_2 + y_3 = 1,  y_1 + ... + y_4 = t,
  l_k t <= y_k <= u_k t,  y, t >= 0``; then ``w = y / t``.

The LP depends only on the subscore vector, so identical vectors are solved once, and many small LPs
are stacked block-diagonally into one HiGHS call (the objective is separable, so the stacked optimum
is every block's optimum). Solutions are snapped to the vertex they sit on (LP tolerances are 1e-7)
and the score is recomputed there with the kernel. Caps do not depend on ``w`` and ``min(., c)`` and
rounding are monotone, so ``max capped = min(max raw, c)`` and ``max score = round(max capped)``
(likewise for the minimum): the LP on ``raw`` gives the capped and rounded extremes exactly.
``worst_abs_delta = max(score_max - score0, score0 - score_min)``; ``band_can_change`` says whether
the band at one of the two extremes differs from nominal (every score in between is reachable).

**The bound** (:func:`score_shift_bound`): for fixed ``w`` a segment's rise ``raw(w) - raw(w0)`` is
linear in its subscores (``raw = 10 sum e_d(w) s_d`` with effective weights ``e``), so the largest
rise over all subscores in [0, 10] and all ``w`` in ``P_d`` is attained at a 0/10 subscore vector:
24 LPs give the largest possible rise and fall for ANY segment. Caps never increase either (``c`` is
fixed). A good segment's capped score is at least 79.95 and a poor one's below 49.95, a gap of more than
``good - partial = 30`` points, so no good/poor pair can reorder when ``max_rise + max_fall < 30``.
For ``axon-v1`` both are ``200 d`` points for ``d <= 0.1`` (at ``d = 0.05``: 10.0, e.g. subscores
(10, 10, 0, 0) rise from 55 to 65), so ``400 d < 30`` proves the second half of the claim for every
possible segment whenever ``d < 0.075``, +-0.05 included. Beyond that the bound proves nothing and
the pair test decides on the actual segments (a test builds a pair that reorders at ``d = 0.15``).

References
----------
Charnes, A. & Cooper, W. W. (1962). Programming with linear fractional functionals. Naval Research
Logistics Quarterly 9, 181-186.
Huangfu, Q. & Hall, J. A. J. (2018). Parallelizing the dual revised simplex method (HiGHS).
Mathematical Programming Computation 10, 119-142.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import scipy.sparse as sp
from scipy.optimize import linprog

from ...rubric import BANDS, DIMENSIONS, Rubric
from ...scoring import _cap_round_band, _weight_array, _weighted_raw, round_tenths
from .common import (
    _SNAP_TOL,
    Segments,
    _Groups,
    _as_segments,
    _band_edge_distance,
    _group_segments,
    _nominal_scores,
    _unique_rows,
    box_on_simplex_bounds,
)


# =====================================================================================================
# exact worst case per segment (linear programs)
# =====================================================================================================
def _lp_observed(s: np.ndarray, lower: np.ndarray, upper: np.ndarray, sign: np.ndarray) -> np.ndarray:
    """Block-diagonal LP: for each row, the w in P_d maximising ``sign * s.w``. Returns (n, 4)."""
    n = s.shape[0]
    c = -(sign[:, None] * s).ravel()
    a_eq = sp.csr_array((np.ones(4 * n), (np.repeat(np.arange(n), 4), np.arange(4 * n))), shape=(n, 4 * n))
    bounds = np.tile(np.column_stack([lower, upper]), (n, 1))
    res = linprog(c, A_eq=a_eq, b_eq=np.ones(n), bounds=bounds, method="highs")
    if res.status != 0:
        raise RuntimeError(f"linprog failed on the faithfulness-observed worst case: {res.message}")
    return res.x.reshape(n, 4)


def _lp_null(s: np.ndarray, lower: np.ndarray, upper: np.ndarray, sign: np.ndarray) -> np.ndarray:
    """Charnes-Cooper LP per row (faithfulness null): variables (y1..y4, t) per block. Returns w (n, 4)."""
    n = s.shape[0]
    nv = 5
    c = np.zeros((n, nv))
    c[:, :3] = -(sign[:, None] * s[:, :3])
    base = np.arange(n) * nv
    # equalities: y1 + y2 + y3 = 1 ; y1 + y2 + y3 + y4 - t = 0
    eq_rows = np.concatenate([np.repeat(2 * np.arange(n), 3), np.repeat(2 * np.arange(n) + 1, 5)])
    eq_cols = np.concatenate([(base[:, None] + np.arange(3)).ravel(), (base[:, None] + np.arange(5)).ravel()])
    eq_vals = np.concatenate([np.ones(3 * n), np.tile([1.0, 1.0, 1.0, 1.0, -1.0], n)])
    a_eq = sp.csr_array((eq_vals, (eq_rows, eq_cols)), shape=(2 * n, nv * n))
    b_eq = np.tile([1.0, 0.0], n)
    # inequalities per k: y_k - u_k t <= 0 ; l_k t - y_k <= 0
    rows, cols, vals = [], [], []
    for k in range(4):
        r_up, r_lo = 8 * np.arange(n) + 2 * k, 8 * np.arange(n) + 2 * k + 1
        rows += [r_up, r_up, r_lo, r_lo]
        cols += [base + k, base + 4, base + 4, base + k]
        vals += [np.ones(n), np.full(n, -upper[k]), np.full(n, lower[k]), -np.ones(n)]
    a_ub = sp.csr_array((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(8 * n, nv * n))
    res = linprog(c.ravel(), A_ub=a_ub, b_ub=np.zeros(8 * n), A_eq=a_eq, b_eq=b_eq, bounds=(0, None), method="highs")
    if res.status != 0:
        raise RuntimeError(f"linprog failed on the faithfulness-null worst case (Charnes-Cooper): {res.message}")
    x = res.x.reshape(n, nv)
    return x[:, :4] / x[:, 4:5]


def _snap_to_vertex(w: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """Put LP solutions exactly on the box bounds they sit on; the one free weight takes the rest."""
    w = np.clip(w, lower, upper)
    at_lo = np.abs(w - lower) <= _SNAP_TOL
    at_hi = ~at_lo & (np.abs(w - upper) <= _SNAP_TOL)
    snapped = np.where(at_lo, lower, np.where(at_hi, upper, w))
    free = ~(at_lo | at_hi)
    one_free = free.sum(axis=1) == 1
    rest = 1.0 - np.where(free, 0.0, snapped).sum(axis=1)
    snapped = np.where(free & one_free[:, None], rest[:, None], snapped)
    good = one_free & (rest >= lower[free.argmax(axis=1)] - _SNAP_TOL) & (rest <= upper[free.argmax(axis=1)] + _SNAP_TOL)
    all_fixed = free.sum(axis=1) == 0
    good |= all_fixed & (np.abs(snapped.sum(axis=1) - 1.0) <= 1e-12)
    return np.where(good[:, None], snapped, w)


def _raw_at(s0: np.ndarray, observed: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Kernel raw score of row i's subscores at row i's weights."""
    wo = np.where(np.column_stack([np.ones((len(w), 3), bool), observed]), w, 0.0)
    return _weighted_raw([s0[:, d] for d in range(4)], [wo[:, d] for d in range(4)])


def _raw_extremes(s0: np.ndarray, observed: np.ndarray, lower: np.ndarray, upper: np.ndarray,
                  block: int = 4096) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(raw_min, raw_max, w_argmin, w_argmax) over P_d for each row, deduplicated and batched."""
    first, inverse, _ = _unique_rows(np.column_stack([observed.astype(np.float64), s0]))
    u_obs, u_s = observed[first].astype(bool), s0[first]
    n = len(first)
    w_max, w_min = np.empty((n, 4)), np.empty((n, 4))
    for pattern, solver in ((True, _lp_observed), (False, _lp_null)):
        idx = np.flatnonzero(u_obs == pattern)
        for a in range(0, len(idx), block):
            part = idx[a:a + block]
            # max and min of each row stacked into one LP: blocks [max..., min...]
            s_both = np.concatenate([u_s[part], u_s[part]])
            sign = np.concatenate([np.ones(len(part)), -np.ones(len(part))])
            w_both = solver(s_both, lower, upper, sign)
            w_max[part], w_min[part] = w_both[:len(part)], w_both[len(part):]
    w_max, w_min = _snap_to_vertex(w_max, lower, upper), _snap_to_vertex(w_min, lower, upper)
    raw_max, raw_min = _raw_at(u_s, u_obs, w_max), _raw_at(u_s, u_obs, w_min)
    return raw_min[inverse], raw_max[inverse], w_min[inverse], w_max[inverse]


def _check_null_feasible(lower: np.ndarray, upper: np.ndarray, d: float) -> None:
    # Largest faithfulness weight in P_d; a null-faithfulness segment needs w1 + w2 + w3 > 0 everywhere.
    if min(upper[3], 1.0 - lower[:3].sum()) >= 1.0 - 1e-12:
        raise ValueError(f"with d={d} the faithfulness weight can reach 1, leaving no weight for segments whose "
                         "faithfulness is null")


@dataclass(frozen=True, eq=False)
class WorstCase:
    """Exact extremes of every segment's score over ``P_d`` (see the module docstring).

    ``per_segment`` columns: ``segment_id``, ``nominal_raw``, ``nominal_score``, ``nominal_band``,
    ``raw_min``, ``raw_max``, ``score_min``, ``score_max`` (capped and rounded, as published),
    ``max_fall``, ``max_rise``, ``worst_abs_delta`` (points of score), ``band_can_change``,
    ``distance_to_band_edge``, and the weights reaching the extremes ``w_min_<dim>``, ``w_max_<dim>``.
    ``n_lp_vectors``: distinct subscore vectors, each solved twice (max and min).
    """

    d: float
    rubric_id: str
    lower: np.ndarray
    upper: np.ndarray
    per_segment: pd.DataFrame
    n_lp_vectors: int
    _groups: _Groups = field(repr=False)
    _group_table: pd.DataFrame = field(repr=False)

    @property
    def max_abs_delta(self) -> float:
        return float(self.per_segment["worst_abs_delta"].max())

    @property
    def band_change_share(self) -> float:
        """Share of segments whose band can change somewhere in ``P_d``."""
        return float(self.per_segment["band_can_change"].mean())

    def worst_segment(self) -> pd.Series:
        """The segment with the largest worst-case |delta| (first in input order on ties)."""
        return self.per_segment.loc[self.per_segment["worst_abs_delta"].idxmax()]


def worst_case(segments: Segments | pd.DataFrame, rubric: Rubric | None = None, d: float = 0.05, *,
               lp_block: int = 4096) -> WorstCase:
    """Exact largest rise and fall of each segment's score for weights within ``d`` of nominal.

    Solves the LPs of the module docstring with ``scipy.optimize.linprog`` (HiGHS), one per distinct
    subscore vector and direction, stacked ``lp_block`` at a time. ``rubric`` supplies the nominal
    weights, caps and bands.
    """
    rubric = Rubric.default() if rubric is None else rubric
    segs = _as_segments(segments)
    lower, upper = box_on_simplex_bounds(rubric, d)
    groups = _group_segments(segs, rubric)
    if groups.n_observed < groups.n_groups:
        _check_null_feasible(lower, upper, d)
    raw0, score0, code0 = _nominal_scores(groups, rubric)
    s0 = groups.s0T.T
    raw_min, raw_max, w_min, w_max = _raw_extremes(s0, groups.observed, lower, upper, block=lp_block)
    capped_min, capped_max = np.minimum(raw_min, groups.cap), np.minimum(raw_max, groups.cap)
    score_min, score_max = round_tenths(capped_min), round_tenths(capped_max)
    # The kernel's band rule, applied to the two extreme scores.
    code_min = _cap_round_band(score_min, np.full_like(score_min, np.inf), rubric)[2]
    code_max = _cap_round_band(score_max, np.full_like(score_max, np.inf), rubric)[2]
    table = pd.DataFrame({
        "nominal_raw": raw0, "nominal_score": score0, "nominal_code": code0,
        "raw_min": raw_min, "raw_max": raw_max, "capped_min": capped_min, "capped_max": capped_max,
        "score_min": score_min, "score_max": score_max,
        "max_fall": np.maximum(score0 - score_min, 0.0), "max_rise": np.maximum(score_max - score0, 0.0),
    })
    table["worst_abs_delta"] = np.maximum(table["max_fall"], table["max_rise"])
    table["band_can_change"] = (code_min != code0) | (code_max != code0)
    inv = groups.inverse
    per_segment = pd.DataFrame({"segment_id": segs.segment_ids})
    for col in ("nominal_raw", "nominal_score"):
        per_segment[col] = table[col].to_numpy()[inv]
    per_segment["nominal_band"] = pd.Categorical.from_codes(code0[inv], categories=list(BANDS))
    for col in ("raw_min", "raw_max", "score_min", "score_max", "max_fall", "max_rise", "worst_abs_delta",
                "band_can_change"):
        per_segment[col] = table[col].to_numpy()[inv]
    per_segment["distance_to_band_edge"] = _band_edge_distance(score0[inv], rubric)
    for j, dim in enumerate(DIMENSIONS):
        per_segment[f"w_min_{dim}"] = w_min[inv, j]
        per_segment[f"w_max_{dim}"] = w_max[inv, j]
    n_vectors = len(_unique_rows(np.column_stack([groups.observed.astype(np.float64), s0]))[0])
    return WorstCase(d=float(d), rubric_id=rubric.id, lower=lower, upper=upper, per_segment=per_segment,
                     n_lp_vectors=n_vectors, _groups=groups, _group_table=table)


@dataclass(frozen=True)
class ScoreShiftBound:
    """Largest rise and fall of ANY segment's raw score over ``P_d`` (the 0/10 subscore vertices).

    ``reorder_impossible``: ``max_rise + max_fall < band_gap`` (= good edge - partial edge), which
    proves that no good/poor pair can swap order within ``P_d`` (module docstring).
    """

    d: float
    max_rise: float
    max_fall: float
    band_gap: float
    reorder_impossible: bool
    rise_subscores: tuple[float | None, ...]
    fall_subscores: tuple[float | None, ...]


def score_shift_bound(rubric: Rubric | None = None, d: float = 0.05) -> ScoreShiftBound:
    """The bound of the module docstring, from 24 LPs (16 all-observed and 8 null-faithfulness vertices)."""
    rubric = Rubric.default() if rubric is None else rubric
    lower, upper = box_on_simplex_bounds(rubric, d)
    grid = np.array(np.meshgrid(*[[0.0, 10.0]] * 4, indexing="ij")).reshape(4, -1).T
    null_grid = np.unique(np.column_stack([grid[:, :3], np.zeros(len(grid))]), axis=0)
    s0 = np.concatenate([grid, null_grid])
    observed = np.r_[np.ones(len(grid), bool), np.zeros(len(null_grid), bool)]
    try:
        _check_null_feasible(lower, upper, d)
    except ValueError:
        s0, observed = grid, observed[:len(grid)]
    w0 = np.tile(_weight_array(rubric), (len(s0), 1))
    raw0 = _raw_at(s0, observed, w0)
    raw_min, raw_max, _, _ = _raw_extremes(s0, observed, lower, upper)
    rise, fall = raw_max - raw0, raw0 - raw_min
    label = lambda i: tuple(float(v) if (observed[i] or j < 3) else None for j, v in enumerate(s0[i]))  # noqa: E731
    gap = rubric.bands.good - rubric.bands.partial
    return ScoreShiftBound(d=float(d), max_rise=float(rise.max()), max_fall=float(fall.max()), band_gap=gap,
                           reorder_impossible=bool(rise.max() + fall.max() < gap - 1e-9),
                           rise_subscores=label(int(rise.argmax())), fall_subscores=label(int(fall.argmax())))
