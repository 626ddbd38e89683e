"""Weight sensitivity: can a good segment fall below a poor one (:func:`good_below_poor`)?

For a pair (``i`` good and ``j`` poor under the nominal weights) the question is whether
``sup_{w in P_d} f(w) > 0`` with ``f = capped_j - capped_i`` (caps included: a cap can only pull the
poor segment further down, but it also bounds the good one's fall; both are handled exactly, not by
bounding). ``f`` is neither linear nor concave: with one faithfulness null and one observed,
``raw_j - raw_i`` is linear minus linear-fractional. The method is exact anyway: on each slice
``w_4 = v`` both raw scores are linear in ``(w_1, w_2, w_3)`` (their denominators are 1 or ``1 - v``).
The two cap "creases" ``raw_i = c_i`` and ``raw_j = c_j`` are hyperplanes (``10 s.w = c m.w``) that cut
``P_d`` into at most four convex cells, on each of which ``f`` is one smooth piece that is linear on
every slice; so its maximum over a cell is at a vertex of a slice of the cell, which lies on an edge
of the cell. The edges lie on the lines where two of the ten planes (eight box faces, two creases)
meet. Along such a line the pieces ``raw_j - c_i``, ``c_j - raw_i`` are monotone and ``c_j - c_i`` is
constant, and ``raw_j - raw_i`` has at most one interior stationary point (``kappa_j / D_j^2 =
kappa_i / D_i^2`` is linear in the line parameter after a square root). ``f`` is therefore evaluated,
exactly, at the line's two ends inside the box, its crease crossings and that stationary point: a
finite set that contains a maximiser. A pair reorders when the best value exceeds 1e-9 points; the
example is the pair with the largest margin, with its weight vector and both scores.
Pairs are screened first with the per-segment extremes (a pair can only reorder when
``max capped_j > min capped_i``). The decision is made on the capped (unrounded) score; rounding to
0.1 can only merge two scores into a tie, never reverse them.

The bound that settles every possible pair at small ``d`` is :func:`~.worst_case.score_shift_bound`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ...rubric import DIMENSIONS, Rubric
from ...scoring import _weighted_raw, round_tenths
from .common import _MARGIN_TOL, Segments, _as_segments, _json_id
from .worst_case import ScoreShiftBound, WorstCase, score_shift_bound, worst_case


# =====================================================================================================
# good below poor: the exact pair test
# =====================================================================================================
def _box_planes(lower: np.ndarray, upper: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The eight faces of P_d as ``a.z <= b`` in z = (w1, w2, w3) (w4 = 1 - sum z)."""
    a, b = [], []
    for k in range(3):
        e = np.zeros(3)
        e[k] = 1.0
        a += [e, -e]
        b += [upper[k], -lower[k]]
    a += [-np.ones(3), np.ones(3)]
    b += [upper[3] - 1.0, 1.0 - lower[3]]
    return np.array(a), np.array(b)


def _crease(s0: np.ndarray, mask: np.ndarray, cap: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Plane ``raw = cap`` (``(10 s - cap m).w = 0``) in z-space; invalid where cap is inf or degenerate."""
    finite = np.isfinite(cap)
    g = 10.0 * s0 - np.where(finite, cap, 0.0)[:, None] * mask
    a = g[:, :3] - g[:, 3:4]
    b = -g[:, 3]
    valid = finite & (np.abs(a).max(axis=1) > 1e-12)
    return a, b, valid


def _capped_at(s0: np.ndarray, mask: np.ndarray, cap: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Kernel raw score, then ``min(raw, cap)``, for broadcast shapes (..., 4)."""
    wo = w * mask
    raw = _weighted_raw([s0[..., d] for d in range(4)], [wo[..., d] for d in range(4)])
    return np.minimum(raw, cap)


def _pair_max_margin(si: np.ndarray, mi: np.ndarray, ci: np.ndarray, sj: np.ndarray, mj: np.ndarray, cj: np.ndarray,
                     lower: np.ndarray, upper: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """max over P_d of ``capped_j(w) - capped_i(w)`` per pair, and a maximiser (module docstring)."""
    n = si.shape[0]
    a_box, b_box = _box_planes(lower, upper)
    planes_a = np.empty((n, 10, 3))
    planes_b = np.empty((n, 10))
    valid = np.ones((n, 10), dtype=bool)
    planes_a[:, :8], planes_b[:, :8] = a_box, b_box
    planes_a[:, 8], planes_b[:, 8], valid[:, 8] = _crease(si, mi, ci)
    planes_a[:, 9], planes_b[:, 9], valid[:, 9] = _crease(sj, mj, cj)
    p_idx, q_idx = np.triu_indices(10, 1)
    a1, a2 = planes_a[:, p_idx], planes_a[:, q_idx]
    b1, b2 = planes_b[:, p_idx], planes_b[:, q_idx]
    direction = np.cross(a1, a2)
    nd2 = (direction ** 2).sum(-1)
    n11, n22, n12 = (a1 * a1).sum(-1), (a2 * a2).sum(-1), (a1 * a2).sum(-1)
    ok = valid[:, p_idx] & valid[:, q_idx] & (nd2 > 1e-14 * n11 * n22)
    safe = np.where(ok, nd2, 1.0)
    point = (((b1 * n22 - b2 * n12) / safe)[..., None] * a1 + ((b2 * n11 - b1 * n12) / safe)[..., None] * a2)
    direction = direction / np.sqrt(safe)[..., None]
    # clip the line to the box: a_r.(p + lam d) <= b_r
    ad = direction @ a_box.T
    slack = b_box - point @ a_box.T + 1e-12
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = slack / ad
    lam_hi = np.where(ad > 1e-12, ratio, np.inf).min(-1)
    lam_lo = np.where(ad < -1e-12, ratio, -np.inf).max(-1)
    parallel_ok = np.where(np.abs(ad) <= 1e-12, slack >= 0, True).all(-1)
    ok &= parallel_ok & (lam_lo <= lam_hi) & np.isfinite(lam_lo) & np.isfinite(lam_hi)
    lam_lo, lam_hi = np.where(ok, lam_lo, 0.0), np.where(ok, lam_hi, 0.0)
    # 4-d line w(lam) = W0 + lam Wd
    w_point = np.concatenate([point, 1.0 - point.sum(-1, keepdims=True)], axis=-1)
    w_dir = np.concatenate([direction, -direction.sum(-1, keepdims=True)], axis=-1)
    cands = [lam_lo, lam_hi]
    for plane in (8, 9):  # crease crossings
        ac, bc = planes_a[:, plane][:, None, :], planes_b[:, plane][:, None]
        denom = (direction * ac).sum(-1)
        with np.errstate(divide="ignore", invalid="ignore"):
            cands.append(np.where(valid[:, plane][:, None] & (np.abs(denom) > 1e-12),
                                  (bc - (point * ac).sum(-1)) / denom, np.nan))
    # stationary point of raw_j - raw_i along the line: kappa_j / D_j^2 = kappa_i / D_i^2
    def line_terms(s0: np.ndarray, m: np.ndarray) -> tuple[np.ndarray, ...]:
        num0, num1 = 10.0 * (w_point * s0[:, None]).sum(-1), 10.0 * (w_dir * s0[:, None]).sum(-1)
        den0, den1 = (w_point * m[:, None]).sum(-1), (w_dir * m[:, None]).sum(-1)
        return den0, den1, num1 * den0 - num0 * den1
    q0i, q1i, ki = line_terms(si, mi)
    q0j, q1j, kj = line_terms(sj, mj)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.sqrt(kj / ki)
        stat = (r * q0i - q0j) / (q1j - r * q1i)
    cands.append(np.where((ki * kj > 0) & np.isfinite(stat), stat, np.nan))
    lam = np.stack(cands, axis=-1)  # (n, 45, 5)
    lam = np.where(np.isnan(lam), lam_lo[..., None], np.clip(lam, lam_lo[..., None], lam_hi[..., None]))
    w = w_point[:, :, None, :] + lam[..., None] * w_dir[:, :, None, :]
    w = np.clip(w, lower, upper)  # remove 1e-12 overshoot from the clipping tolerance
    cap_i = ci[:, None, None]
    cap_j = cj[:, None, None]
    f = (_capped_at(sj[:, None, None, :], mj[:, None, None, :], cap_j, w)
         - _capped_at(si[:, None, None, :], mi[:, None, None, :], cap_i, w))
    f = np.where(ok[..., None], f, -np.inf)
    flat = f.reshape(n, -1)
    best = flat.argmax(axis=1)
    return flat[np.arange(n), best], w.reshape(n, -1, 4)[np.arange(n), best]


@dataclass(frozen=True)
class GoodBelowPoorExample:
    """One reordered pair: scores are capped and rounded, as published (``margin`` is unrounded)."""

    good_segment_id: Any
    poor_segment_id: Any
    weights: dict[str, float]
    good_score: float
    poor_score: float
    good_score_nominal: float
    poor_score_nominal: float
    margin: float

    def to_json(self) -> dict[str, Any]:
        return {"good_segment_id": _json_id(self.good_segment_id), "poor_segment_id": _json_id(self.poor_segment_id),
                "weights": {k: round(v, 6) for k, v in self.weights.items()},
                "good_score": self.good_score, "poor_score": self.poor_score,
                "good_score_nominal": self.good_score_nominal, "poor_score_nominal": self.poor_score_nominal,
                "margin": round(self.margin, 6)}


@dataclass(frozen=True)
class GoodBelowPoor:
    """Can weights within ``d`` of nominal put a nominally good segment below a nominally poor one?

    ``n_pairs``: (good, poor) segment pairs that can reorder (multiplicities counted); ``n_good`` x
    ``n_poor`` pairs exist. ``n_candidate_pairs``: distinct pairs that survived the screen and were
    solved exactly. ``max_margin``: the largest ``capped_poor - capped_good`` over the solved pairs
    (``None`` when none needed solving). ``bound``: :func:`score_shift_bound` for the same ``d``.
    """

    d: float
    n_pairs: int
    n_good: int
    n_poor: int
    n_candidate_pairs: int
    max_margin: float | None
    example: GoodBelowPoorExample | None
    bound: ScoreShiftBound

    def to_json(self) -> dict[str, Any]:
        return {"n_pairs": self.n_pairs, "n_good": self.n_good, "n_poor": self.n_poor,
                "n_candidate_pairs": self.n_candidate_pairs,
                "max_margin": None if self.max_margin is None else round(self.max_margin, 6),
                "impossible_by_bound": self.bound.reorder_impossible,
                "example": None if self.example is None else self.example.to_json()}


def good_below_poor(segments: Segments | pd.DataFrame, rubric: Rubric | None = None, d: float = 0.05, *,
                    worst: WorstCase | None = None, max_candidate_pairs: int = 20_000_000,
                    chunk_pairs: int = 2048) -> GoodBelowPoor:
    """The exact worst-case pair test of the module docstring.

    ``worst`` (the :func:`worst_case` of the same segments, rubric and ``d``) is reused for the
    screen when given. Raises ``ValueError`` when more than ``max_candidate_pairs`` distinct pairs
    survive the screen (a very large ``d`` on a very large run); shrink ``d`` or sample segments.
    """
    rubric = Rubric.default() if rubric is None else rubric
    segs = _as_segments(segments)
    if worst is None:
        worst = worst_case(segs, rubric, d)
    elif abs(worst.d - float(d)) > 1e-15 or worst.rubric_id != rubric.id or len(worst.per_segment) != segs.n_segments:
        raise ValueError(f"worst case was computed for d={worst.d}, rubric {worst.rubric_id}; asked d={d}, {rubric.id}")
    groups, table = worst._groups, worst._group_table
    bound = score_shift_bound(rubric, d)
    code0 = table["nominal_code"].to_numpy()
    good, poor = np.flatnonzero(code0 == 0), np.flatnonzero(code0 == 2)
    n_good, n_poor = int(groups.counts[good].sum()), int(groups.counts[poor].sum())
    # Screen: a pair can only reorder when the poor one's highest capped score exceeds the good one's lowest.
    good_sorted = good[np.argsort(table["capped_min"].to_numpy()[good], kind="stable")]
    good_min = table["capped_min"].to_numpy()[good_sorted]
    # (LP extremes carry ~1e-9 of solver tolerance: screen generously, the exact step decides.)
    reach = np.searchsorted(good_min, table["capped_max"].to_numpy()[poor] + 1e-7, side="left")
    n_candidates = int(reach.sum())
    if n_candidates > max_candidate_pairs:
        raise ValueError(f"{n_candidates} distinct good/poor pairs survive the screen at d={d} "
                         f"(max_candidate_pairs={max_candidate_pairs})")
    if n_candidates == 0:
        return GoodBelowPoor(d=float(d), n_pairs=0, n_good=n_good, n_poor=n_poor, n_candidate_pairs=0,
                             max_margin=None, example=None, bound=bound)
    pair_poor = np.repeat(poor, reach)
    pair_good = good_sorted[np.arange(n_candidates) - np.repeat(np.cumsum(reach) - reach, reach)]
    s0 = groups.s0T.T
    mask = np.column_stack([np.ones((groups.n_groups, 3)), groups.observed.astype(np.float64)])
    n_pairs, best_margin, best = 0, -np.inf, None
    for a in range(0, n_candidates, chunk_pairs):
        gi, pj = pair_good[a:a + chunk_pairs], pair_poor[a:a + chunk_pairs]
        margin, w = _pair_max_margin(s0[gi], mask[gi], groups.cap[gi], s0[pj], mask[pj], groups.cap[pj],
                                     worst.lower, worst.upper)
        flips = margin > _MARGIN_TOL
        n_pairs += int((groups.counts[gi] * groups.counts[pj])[flips].sum())
        k = int(margin.argmax())
        if margin[k] > best_margin:
            best_margin, best = float(margin[k]), (int(gi[k]), int(pj[k]), w[k])
    example = None
    if best is not None and best_margin > _MARGIN_TOL:
        gi, pj, w = best
        scores = round_tenths(_capped_at(s0[[gi, pj]], mask[[gi, pj]], groups.cap[[gi, pj]], np.tile(w, (2, 1))))
        example = GoodBelowPoorExample(
            good_segment_id=segs.segment_ids[groups.first[gi]], poor_segment_id=segs.segment_ids[groups.first[pj]],
            weights=dict(zip(DIMENSIONS, w.tolist())), good_score=float(scores[0]), poor_score=float(scores[1]),
            good_score_nominal=float(table["nominal_score"].iloc[gi]),
            poor_score_nominal=float(table["nominal_score"].iloc[pj]), margin=best_margin)
    return GoodBelowPoor(d=float(d), n_pairs=n_pairs, n_good=n_good, n_poor=n_poor, n_candidate_pairs=n_candidates,
                         max_margin=best_margin, example=example, bound=bound)
