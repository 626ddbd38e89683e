"""Weight sensitivity: sweeping K weight vectors over T segments (:func:`sweep_weights`).

Segments whose score cannot differ under any weights (same subscores, same observed dimensions,
same lowest cap) are scored once and weighted by their count; with integer subscores there are at
most 11^3 * 12 * (number of distinct caps) such groups. Vectors are split into chunks scored on
threads (the compiled loop releases the GIL), one vector at a time over all groups, so memory is
O(groups) per thread and K x T is never materialised. Per vector:
``max_abs_delta = max_t |score_t(w) - score_t(w0)|``, the largest rise and fall, the count and share
of segments whose band differs from nominal, the mean score, the share good and Kendall's tau-b
between the nominal and perturbed scores::

    tau_b = (n_c - n_d) / sqrt((n_0 - n_1)(n_0 - n_2)),   n_0 = T(T-1)/2,
    n_1, n_2 = pairs tied on the nominal / perturbed score                  (Kendall 1945)

counted over segment pairs (group multiplicities included): groups are visited in nominal-score order
and a Fenwick tree over the 1001 perturbed score codes counts, for each, the earlier (strictly lower
nominal) segments below and above it. Knight (1966), which ``scipy.stats.kendalltau`` implements,
sorts instead; the numbers are the same (the tests compare them). scipy is not called per vector
because at about 20 ms per call for 100,000 segments, 10,000 vectors would take over three minutes. Per segment: the largest rise and fall over the
vectors, the number of vectors that change its band, and its distance to the nearest band edge
``min(|score0 - 80|, |score0 - 50|)``.

References
----------
Kendall, M. G. (1945). The treatment of ties in ranking problems. Biometrika 33, 239-251.
Knight, W. R. (1966). A computer method for calculating Kendall's tau with ungrouped data. JASA 61,
436-439.
"""

from __future__ import annotations

import math
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import numpy as np
import pandas as pd

from ...rubric import BANDS, DIMENSIONS, Rubric
from ...scoring import _HALF_UP
from .common import (
    _N_CODES,
    Segments,
    _Groups,
    _as_segments,
    _band_edge_distance,
    _check_null_weights,
    _group_segments,
    _nominal_scores,
    _score_tile,
    _tiles,
    _weight_columns,
)
from .designs import WeightDesign, _weight_matrix


# =====================================================================================================
# sweeping K weight vectors
# =====================================================================================================
@dataclass(frozen=True, eq=False)
class WeightSweep:
    """Scores of K weight vectors over T segments, reduced (see the module docstring).

    ``per_vector``: one row per vector: the four weights, ``max_abs_delta``, ``max_rise``,
    ``max_fall`` (points), ``n_band_flips``, ``band_flip_rate`` (share of segments whose band differs
    from nominal), ``mean_score``, ``share_good``, ``kendall_tau`` (tau-b vs the nominal scores; NaN
    when not computed). ``per_segment``: one row per segment: ``segment_id``, ``nominal_score``,
    ``nominal_band``, ``distance_to_band_edge``, ``max_rise``, ``max_fall``, ``max_abs_delta``,
    ``n_flips`` (vectors that change its band), ``flip_share``.
    """

    rubric_id: str
    design: str
    per_vector: pd.DataFrame
    per_segment: pd.DataFrame
    n_groups: int

    @property
    def n_vectors(self) -> int:
        return int(len(self.per_vector))

    @property
    def n_segments(self) -> int:
        return int(len(self.per_segment))

    @property
    def band_flip_rate(self) -> float:
        """Share of (vector, segment) pairs whose band differs from nominal."""
        return float(self.per_vector["n_band_flips"].sum() / (self.n_vectors * self.n_segments))

    @property
    def max_abs_delta(self) -> float:
        return float(self.per_vector["max_abs_delta"].max())

    def flipping_segments(self) -> pd.DataFrame:
        """Segments that change band under at least one vector, most often first, with their distance
        to the nearest band edge."""
        out = self.per_segment[self.per_segment["n_flips"] > 0]
        return out.sort_values(["flip_share", "distance_to_band_edge"], ascending=[False, True]).reset_index(drop=True)


class _Packed:
    """The groups re-ordered by nominal score, as contiguous arrays for the compiled loop.

    In nominal order the rank correlation needs no indirection (Kendall's pairs are counted in one
    sequential pass) and every array is read front to back.
    """

    def __init__(self, groups: _Groups, rubric: Rubric):
        raw, score, code = _nominal_scores(groups, rubric)
        tenths = np.rint(score * 10.0).astype(np.int64)
        self.perm = np.argsort(tenths, kind="stable")
        xs = tenths[self.perm]
        self.group_start = np.flatnonzero(np.r_[True, xs[1:] != xs[:-1], True]).astype(np.int64)
        self.s0t = np.ascontiguousarray(groups.s0T[:, self.perm])
        self.faith_mask = groups.observed[self.perm].astype(np.float64)
        self.cap = groups.cap[self.perm]
        self.counts = groups.counts[self.perm]
        self.score0 = score[self.perm]
        self.code0 = code[self.perm].astype(np.int64)
        self.n = int(groups.counts.sum())
        per_code = np.bincount(tenths, weights=groups.counts.astype(np.float64), minlength=_N_CODES)
        self.n0 = self.n * (self.n - 1) / 2.0
        self.n1 = float((per_code * (per_code - 1) / 2.0).sum())
        self.nominal_score, self.nominal_code = score, code


def _sweep_chunk(packed: _Packed, w: np.ndarray, rubric: Rubric, rank: bool) -> dict[str, np.ndarray]:
    """Reductions for one chunk of vectors ``w`` (Kc, 4) over every group (compiled, releases the GIL).
    Per-group outputs are in ``packed`` (nominal-score) order."""
    kc, ng = w.shape[0], packed.cap.shape[0]
    out = {key: np.empty(kc) for key in ("rise", "fall", "flips", "sum", "good", "s", "n2")}
    g_rise, g_fall = np.full(ng, -np.inf), np.full(ng, -np.inf)
    g_flips = np.zeros(ng, dtype=np.int64)
    _compiled().sweep(packed.s0t, packed.faith_mask, packed.cap, packed.counts, packed.score0, packed.code0,
                      np.ascontiguousarray(w), float(rubric.bands.good), float(rubric.bands.partial),
                      packed.group_start, rank, out["rise"], out["fall"], out["flips"], out["sum"], out["good"],
                      out["s"], out["n2"], g_rise, g_fall, g_flips)
    with np.errstate(invalid="ignore", divide="ignore"):
        out["tau"] = out["s"] / np.sqrt((packed.n0 - packed.n1) * (packed.n0 - out["n2"]))
    out.update(g_rise=g_rise, g_fall=g_fall, g_flips=g_flips)
    return out


def _default_threads() -> int:
    try:
        available = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        available = os.cpu_count() or 1
    return max(1, min(4, available))


def sweep_weights(segments: Segments | pd.DataFrame, weights: Any, rubric: Rubric | None = None, *,
                  rank_correlation: bool = True, vectors_per_chunk: int = 64,
                  n_threads: int | None = None) -> WeightSweep:
    """Score every segment under every weight vector and reduce (formulas in the module docstring).

    Parameters
    ----------
    segments : Segments or pandas.DataFrame
        :class:`Segments` or a results frame (see :func:`segments_from_results`).
    weights : WeightDesign, pandas.DataFrame or numpy.ndarray
        A :class:`WeightDesign`, a frame with the four dimension columns, or a (K, 4) array; every row
        non-negative and summing to 1.
    rubric : Rubric, optional
        Caps and bands (default ``axon-v1``); its own weights are the nominal vector.
    rank_correlation : bool
        Compute Kendall's tau-b per vector (the costliest reduction; NaN otherwise).
    vectors_per_chunk, n_threads : int, optional
        The work split. Each thread scores its chunk one vector at a time in a compiled loop over the
        segment groups, so memory is O(groups) per thread (about 40 bytes per group) plus the (K, 4)
        weights and the outputs: K x T is never materialised.

    Returns
    -------
    WeightSweep
        The scores behind it equal ``score_frame(df, rubric.with_weights(w))``.
    """
    rubric = Rubric.default() if rubric is None else rubric
    segs = _as_segments(segments)
    design = weights.name if isinstance(weights, WeightDesign) else "weights"
    w = _weight_matrix(weights)
    groups = _group_segments(segs, rubric)
    _check_null_weights(groups, w)
    packed = _Packed(groups, rubric)
    threads = _default_threads() if n_threads is None else max(1, int(n_threads))
    per_chunk = max(1, int(vectors_per_chunk))
    chunks = [w[a:a + per_chunk] for a in range(0, w.shape[0], per_chunk)]
    run = lambda chunk: _sweep_chunk(packed, chunk, rubric, rank_correlation)  # noqa: E731
    if threads > 1 and len(chunks) > 1:
        with ThreadPoolExecutor(max_workers=threads) as pool:
            parts = list(pool.map(run, chunks))
    else:
        parts = [run(c) for c in chunks]
    cat = lambda key: np.concatenate([p[key] for p in parts])  # noqa: E731
    rise, fall, flips = cat("rise"), cat("fall"), cat("flips")
    per_vector = pd.DataFrame(w, columns=list(DIMENSIONS))
    per_vector["max_abs_delta"] = np.maximum(rise, fall)
    per_vector["max_rise"] = rise
    per_vector["max_fall"] = fall
    per_vector["n_band_flips"] = flips.astype(np.int64)
    per_vector["band_flip_rate"] = flips / packed.n
    per_vector["mean_score"] = cat("sum") / packed.n
    per_vector["share_good"] = cat("good") / packed.n
    per_vector["kendall_tau"] = cat("tau") if rank_correlation else np.nan
    if isinstance(weights, WeightDesign):
        per_vector = pd.concat([weights.labels.reset_index(drop=True), per_vector], axis=1)
    # back from nominal order to group order, then to segments
    g_rise, g_fall = np.empty(groups.n_groups), np.empty(groups.n_groups)
    g_flips = np.empty(groups.n_groups, dtype=np.int64)
    g_rise[packed.perm] = np.max([p["g_rise"] for p in parts], axis=0)
    g_fall[packed.perm] = np.max([p["g_fall"] for p in parts], axis=0)
    g_flips[packed.perm] = np.sum([p["g_flips"] for p in parts], axis=0)
    inv = groups.inverse
    per_segment = pd.DataFrame({
        "segment_id": segs.segment_ids,
        "nominal_score": packed.nominal_score[inv],
        "nominal_band": pd.Categorical.from_codes(packed.nominal_code[inv], categories=list(BANDS)),
        "distance_to_band_edge": _band_edge_distance(packed.nominal_score[inv], rubric),
        "max_rise": g_rise[inv], "max_fall": g_fall[inv],
        "max_abs_delta": np.maximum(g_rise, g_fall)[inv],
        "n_flips": g_flips[inv], "flip_share": g_flips[inv] / w.shape[0],
    })
    return WeightSweep(rubric_id=rubric.id, design=design, per_vector=per_vector, per_segment=per_segment,
                       n_groups=groups.n_groups)


def score_matrix(segments: Segments | pd.DataFrame, weights: Any, rubric: Rubric | None = None, *,
                 max_cells: int = 20_000_000) -> np.ndarray:
    """The (K, T) matrix of scores (rounded, as ``score_frame``'s ``score``) for small problems.

    Computed with the scorer's own kernel pieces (the reference the compiled :func:`sweep_weights` is
    tested against); refuses more than ``max_cells`` cells
    (use :func:`sweep_weights`, which never materialises K x T).
    """
    rubric = Rubric.default() if rubric is None else rubric
    segs = _as_segments(segments)
    w = _weight_matrix(weights)
    if w.shape[0] * segs.n_segments > max_cells:
        raise ValueError(f"{w.shape[0]} x {segs.n_segments} scores exceed max_cells={max_cells}; use sweep_weights")
    groups = _group_segments(segs, rubric)
    _check_null_weights(groups, w)
    w_obs, w_null = _weight_columns(w)
    by_group = np.empty((w.shape[0], groups.n_groups))
    for lo, hi, obs in _tiles(groups, 4096):
        by_group[:, lo:hi] = _score_tile(groups, lo, hi, obs, w_obs, w_null, rubric)[1]
    return by_group[:, groups.inverse]


# -- the compiled sweep -----------------------------------------------------------------------------
# Plain functions here, compiled by numba on first use (numba is imported only then). They are module
# level so that numba's on-disk cache can find them again in the next process.
def _tau_pairs(group_start, codes, counts, tree, equal):  # pragma: no cover - compiled
    # Groups arrive in nominal-score order; each member is compared (weighted) with every
    # earlier segment of strictly lower nominal score through a Fenwick tree over the 1001
    # perturbed score codes: lower perturbed code -> concordant, higher -> discordant.
    tree[:] = 0
    equal[:] = 0
    n_codes = equal.shape[0]
    total = 0
    s = 0
    for g in range(group_start.shape[0] - 1):
        a, b = group_start[g], group_start[g + 1]
        for u in range(a, b):
            v = codes[u]
            below = 0
            i = v
            while i > 0:
                below += tree[i]
                i -= i & (-i)
            s += counts[u] * (below - (total - below - equal[v]))
        for u in range(a, b):
            v = codes[u]
            c = counts[u]
            i = v + 1
            while i <= n_codes:
                tree[i] += c
                i += i & (-i)
            equal[v] += c
            total += c
    n2 = 0
    for v in range(n_codes):
        n2 += equal[v] * (equal[v] - 1) // 2
    return s, n2

def _sweep(s0t, faith_mask, cap, counts, score0, code0, w, good, partial, group_start, rank,
          v_rise, v_fall, v_flips, v_sum, v_good, v_s, v_n2, g_rise, g_fall, g_flips):  # pragma: no cover
    n_groups = s0t.shape[1]
    codes = np.empty(n_groups, np.int64)
    tree = np.zeros(_N_CODES + 1, np.int64)
    equal = np.zeros(_N_CODES, np.int64)
    for k in range(w.shape[0]):
        w0, w1, w2, w3 = w[k, 0], w[k, 1], w[k, 2], w[k, 3]
        den_null = w0 + w1 + w2
        rise = -np.inf
        fall = -np.inf
        flips = 0.0
        total = 0.0
        n_good = 0.0
        for u in range(n_groups):
            wo3 = w3 * faith_mask[u]  # where(observed, w3, 0): w3 * 1.0 == w3, w3 * 0.0 == 0.0
            num = w0 * s0t[0, u] + w1 * s0t[1, u] + w2 * s0t[2, u] + wo3 * s0t[3, u]
            raw = 10.0 * num / (den_null + wo3)
            capped = cap[u] if cap[u] < raw else raw
            # the scorer's round_tenths, operation for operation: half away from zero on the exact
            # decimal value, copysign(floor(10 |capped| + 0.5 + TIE_TOLERANCE), capped) / 10
            tenths = math.copysign(math.floor(abs(capped) * 10.0 + _HALF_UP), capped)
            score = tenths / 10.0
            code = 0 if score >= good else (1 if score >= partial else 2)
            c = counts[u]
            delta = score - score0[u]
            if delta > rise:
                rise = delta
            if -delta > fall:
                fall = -delta
            if delta > g_rise[u]:
                g_rise[u] = delta
            if -delta > g_fall[u]:
                g_fall[u] = -delta
            if code != code0[u]:
                flips += c
                g_flips[u] += 1
            total += c * score
            if code == 0:
                n_good += c
            codes[u] = np.int64(tenths)
        v_rise[k] = rise
        v_fall[k] = fall
        v_flips[k] = flips
        v_sum[k] = total
        v_good[k] = n_good
        if rank:
            s, n2 = _tau_pairs_jit(group_start, codes, counts, tree, equal)
            v_s[k] = s
            v_n2[k] = n2
        else:
            v_s[k] = np.nan
            v_n2[k] = np.nan


_tau_pairs_jit: Any = None
_sweep_jit: Any = None


def _compiled() -> Any:
    """Compile (once; numba caches the machine code on disk) the sweep loop and the pair counter.

    The loop performs exactly the scoring kernel's floating-point operations, in the same order:
    ``num = ((w0 s0 + w1 s1) + w2 s2) + w3 s3`` (``w3 = 0`` for a null faithfulness, as
    ``where(observed, w, 0)``), ``den = ((w0 + w1) + w2) + w3``, ``raw = (10 num) / den``,
    ``capped = min(raw, cap)``, ``score = copysign(floor(10 |capped| + 0.5 + TIE_TOLERANCE), capped) / 10``
    (what :func:`axon_eval.scoring.round_tenths` does), then the band rule. No fast-math, so no reassociation or fused multiply-add: the tests check
    bit-equality with ``score_frame`` for every vector.
    """
    global _tau_pairs_jit, _sweep_jit
    if _sweep_jit is None:
        from numba import njit

        # _sweep calls _tau_pairs_jit by its global name, so that one must exist first.
        _tau_pairs_jit = njit(nogil=True, cache=True)(_tau_pairs)
        _sweep_jit = njit(nogil=True, cache=True)(_sweep)
    return SimpleNamespace(sweep=_sweep_jit, tau_pairs=_tau_pairs_jit)
