"""Weight sensitivity of the rubric score: sampled designs, exact worst cases and Sobol indices.

Pure functions: results DataFrames (or arrays) and a :class:`~axon_eval.rubric.Rubric` in, frozen
records and DataFrames out, no I/O. The claim under test (technical reference, section 3): weight
changes of +-0.05 "move the composite by at most a few points and cannot reorder a good turn below a
poor one". Every figure here is in score points (0-100) unless stated.

The score model (exactly :mod:`axon_eval.scoring`)
---------------------------------------------------
For a segment with clamped subscores ``s`` (0-10), observed dimensions ``O`` (faithfulness may be
null) and weights ``w`` on the simplex (``w >= 0``, ``sum w = 1``)::

    raw(w)    = 10 * sum_{d in O} w_d s_d / sum_{d in O} w_d
    capped(w) = min(raw(w), c)        c = lowest triggered cap (fact caps and subscore caps), inf if none
    score(w)  = capped(w) rounded to 0.1, half away from zero (``scoring.round_tenths``);
                band from score (good >= 80, partial >= 50, else poor)

A segment the rubric cannot score (its nominal weights leave no weight on its observed dimensions:
all of it on faithfulness, which is null) has no score to perturb and is never banded: every function
here refuses such segments with a ``ValueError`` naming how many there are and why, as it refuses a
perturbed vector that leaves them no weight.

``c`` does not depend on ``w``. With faithfulness observed the denominator is ``sum w = 1`` and
``raw`` is linear in ``w``; with it null the denominator is ``1 - w_4`` and ``raw`` is
linear-fractional. :func:`score_matrix`, the nominal scores and the worst-case scores call the
scorer's own kernel pieces (``_effective_caps``, ``_weighted_raw``, ``_cap_round_band``);
:func:`sweep_weights` runs a compiled loop (numba) that performs the same floating-point operations
in the same order. Either way the scores of K weight vectors equal ``score_frame`` under
``rubric.with_weights(w)`` bit for bit; the tests check every vector, for both paths.

Perturbation designs (:class:`WeightDesign`)
--------------------------------------------
* :func:`one_at_a_time`: weight ``k`` moves by exactly ``delta`` (``w_k = w0_k + delta``); the other
  three keep their proportions and absorb the change, ``w_j = w0_j (1 - w_k) / (1 - w0_k)``, so the
  sum stays 1. Every other weight moves by ``w0_j |delta| / (1 - w0_k) <= |delta|``, so each
  one-at-a-time vector lies in the box of size ``|delta|`` below.
* :func:`box_simplex_sample`: uniform on the polytope ``P_d = {w : sum w = 1, w >= 0,
  |w - w0|_inf <= d}``. Sampler: rejection. The first three weights are drawn uniformly from their
  box intervals, ``w_4 = 1 - w_1 - w_2 - w_3``, and the draw is kept when ``w_4`` is inside its own
  interval. The map from ``(w_1, w_2, w_3)`` to the simplex is affine, so accepted draws are uniform on
  ``P_d`` -- the same distribution as Dirichlet(1, 1, 1, 1) (uniform on the simplex) restricted to
  the box, with an acceptance rate near 2/3 instead of one that vanishes as ``d^3``.
* :func:`dirichlet_sample`: ``w ~ Dirichlet(kappa * w0)``: mean ``w0``, ``Var w_k = w0_k (1 - w0_k) /
  (kappa + 1)`` (``kappa = 100`` gives a standard deviation of 0.046 for the 0.30 weight).
Random designs take an explicit seed (anything ``numpy.random.default_rng`` accepts) and record it.

Sweeping K vectors over T segments (:func:`sweep_weights`)
----------------------------------------------------------
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

Exact worst case per segment (:func:`worst_case`)
-------------------------------------------------
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

Good below poor (:func:`good_below_poor`)
-----------------------------------------
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

Global sensitivity (:func:`weight_sobol`)
-----------------------------------------
Sobol first-order (S1) and total (ST) indices (Sobol' 2001) of each weight for the mean score and the
share good, with SALib's Saltelli sampling and estimators (Saltelli et al. 2010). The weights must
stay on the simplex, so the inputs are four independent *raw* weights ``v_k ~ U[max(0, w0_k - d),
w0_k + d]`` and the rubric uses ``w = v / sum v``; the indices attribute variance to the ``v_k``. (The
renormalised ``w`` can leave the box by a little; the box is where the raw draws live.)

Summary (:func:`weight_sensitivity_summary`)
--------------------------------------------
One call computes everything above for a list of sizes ``d`` and returns a
:class:`WeightSensitivitySummary` whose :meth:`~WeightSensitivitySummary.to_json` gives exactly the
study keys ``worst_case_abs_delta``, ``oat_max_abs_delta``, ``band_flip_rate`` (per ``d``),
``good_below_poor`` (per ``d``: pair count and one example) and ``sobol`` (per weight: S1, ST).

References
----------
Charnes, A. & Cooper, W. W. (1962). Programming with linear fractional functionals. Naval Research
Logistics Quarterly 9, 181-186.
Kendall, M. G. (1945). The treatment of ties in ranking problems. Biometrika 33, 239-251.
Knight, W. R. (1966). A computer method for calculating Kendall's tau with ungrouped data. JASA 61,
436-439.
Sobol', I. M. (2001). Global sensitivity indices for nonlinear mathematical models and their Monte
Carlo estimates. Mathematics and Computers in Simulation 55, 271-280.
Saltelli, A. et al. (2010). Variance based sensitivity analysis of model output. Computer Physics
Communications 181, 259-270.
Herman, J. & Usher, W. (2017). SALib: an open-source Python library for sensitivity analysis. JOSS 2(9).
Huangfu, Q. & Hall, J. A. J. (2018). Parallelizing the dual revised simplex method (HiGHS).
Mathematical Programming Computation 10, 119-142.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp
from scipy.optimize import linprog

from ..rubric import BANDS, CAP_FACTS, DIMENSIONS, Rubric, Weights
from ..scoring import _HALF_UP, _cap_round_band, _effective_caps, _weight_array, _weighted_raw, round_tenths, \
    unscorable_mask

JUDGED = "judged"
#: Perturbation sizes of the source's claim, in weight units.
DEFAULT_DELTAS: tuple[float, ...] = (0.01, 0.02, 0.03, 0.04, 0.05)
#: Dirichlet concentration ``kappa`` of :func:`dirichlet_sample` (sd 0.046 for the 0.30 weight).
DEFAULT_CONCENTRATION = 100.0
#: Scores are tenths of a point in [0, 100]: 1001 codes.
_N_CODES = 1001
#: A pair reorders when the poor segment ends more than this many points above the good one.
_MARGIN_TOL = 1e-9
#: LP solutions within this distance of a box bound are snapped onto it (HiGHS feasibility tolerance).
_SNAP_TOL = 1e-7
AGGREGATES = ("mean", "median", "first")


# =====================================================================================================
# inputs
# =====================================================================================================
def _nominal_weights(nominal: Rubric | Weights | Mapping[str, float] | Sequence[float] | np.ndarray) -> np.ndarray:
    """Nominal weights as a (4,) array in ``DIMENSIONS`` order, checked to lie on the simplex."""
    if isinstance(nominal, Rubric):
        nominal = nominal.weights
    if isinstance(nominal, Weights):
        arr = _weight_array_from_mapping(nominal.as_dict())
    elif isinstance(nominal, Mapping):
        arr = _weight_array_from_mapping(nominal)
    else:
        arr = np.asarray(nominal, dtype=np.float64)
    if arr.shape != (len(DIMENSIONS),) or not np.all(np.isfinite(arr)) or (arr < 0).any():
        raise ValueError(f"nominal weights must be 4 finite non-negative numbers in {list(DIMENSIONS)} order, got {arr!r}")
    if abs(arr.sum() - 1.0) > 1e-9:
        raise ValueError(f"nominal weights must sum to 1, got {arr.sum()!r} from {arr.tolist()}")
    return arr


def _weight_array_from_mapping(mapping: Mapping[str, float]) -> np.ndarray:
    missing = [d for d in DIMENSIONS if d not in mapping]
    if missing:
        raise ValueError(f"weights are missing {missing}; expected {list(DIMENSIONS)}")
    return np.array([float(mapping[d]) for d in DIMENSIONS], dtype=np.float64)


def _check_delta(d: float) -> float:
    if isinstance(d, bool) or not isinstance(d, int | float | np.integer | np.floating) or not math.isfinite(d) \
            or not 0 < d <= 1:
        raise ValueError(f"perturbation size d must be a number in (0, 1], got {d!r}")
    return float(d)


def box_on_simplex_bounds(nominal: Any, d: float) -> tuple[np.ndarray, np.ndarray]:
    """Per-weight bounds ``(l, u)`` of ``P_d``: ``l = max(0, w0 - d)``, ``u = min(1, w0 + d)``.

    ``P_d = {w : l <= w <= u, sum w = 1}`` always contains ``w0``.
    """
    w0 = _nominal_weights(nominal)
    d = _check_delta(d)
    return np.maximum(0.0, w0 - d), np.minimum(1.0, w0 + d)


@dataclass(frozen=True, eq=False)
class Segments:
    """Judged segments ready for the sensitivity functions (one row per segment).

    ``subscores``: (T, 4) float, clamped to [0, 10], NaN = null (faithfulness only). ``facts``: (T, 3)
    bool in ``CAP_FACTS`` order. ``excluded``: the input rows left out because their ``status`` was
    not ``judged`` (columns ``segment_id``, ``status``), reported, never dropped silently.
    ``aggregate``: how repeated samples of one segment were combined (``None``: there were none).
    """

    segment_ids: np.ndarray
    subscores: np.ndarray
    facts: np.ndarray
    n_input_rows: int
    excluded: pd.DataFrame
    aggregate: str | None = None

    @property
    def n_segments(self) -> int:
        return int(self.subscores.shape[0])

    @property
    def n_excluded(self) -> int:
        return int(len(self.excluded))

    def frame(self) -> pd.DataFrame:
        """The segments as a DataFrame that :func:`~axon_eval.scoring.score_frame` accepts."""
        df = pd.DataFrame(self.subscores, columns=list(DIMENSIONS))
        for j, f in enumerate(CAP_FACTS):
            df[f] = self.facts[:, j]
        df.insert(0, "segment_id", self.segment_ids)
        return df

    @classmethod
    def from_arrays(cls, subscores: np.ndarray, facts: np.ndarray, segment_ids: Sequence[Any] | None = None) -> Segments:
        """Segments from arrays (synthetic studies, benchmarks); ids default to ``0..T-1``."""
        subs = np.asarray(subscores, dtype=np.float64)
        if subs.ndim != 2 or subs.shape[1] != len(DIMENSIONS):
            raise ValueError(f"subscores must have shape (T, {len(DIMENSIONS)}), got {subs.shape}")
        fact_arr = np.asarray(facts, dtype=bool)
        if fact_arr.shape != (subs.shape[0], len(CAP_FACTS)):
            raise ValueError(f"facts must have shape ({subs.shape[0]}, {len(CAP_FACTS)}), got {fact_arr.shape}")
        null_required = np.isnan(subs[:, :3]).any(axis=1)
        if null_required.any():
            raise ValueError(f"required dimensions are null on rows {np.flatnonzero(null_required)[:10].tolist()}")
        ids = np.arange(subs.shape[0]) if segment_ids is None else np.asarray(segment_ids, dtype=object)
        if len(ids) != subs.shape[0]:
            raise ValueError(f"{len(ids)} segment ids for {subs.shape[0]} rows")
        return cls(segment_ids=ids, subscores=np.clip(subs, 0.0, 10.0), facts=fact_arr, n_input_rows=subs.shape[0],
                   excluded=pd.DataFrame({"segment_id": pd.Series(dtype=object), "status": pd.Series(dtype=object)}))


def segments_from_results(results: pd.DataFrame, *, aggregate: str | None = None) -> Segments:
    """Judged segments from a run's results DataFrame (``results.parquet``).

    Needs the columns ``segment_id``, the four dimensions and the three cap facts; ``status`` when
    present (rows whose status is not ``judged`` are excluded and listed in ``Segments.excluded``).
    Stored ``score``/``band`` columns are ignored: every score here is recomputed under the rubric
    passed to each function.

    Repeated samples (several judged rows with one ``segment_id``) are refused unless ``aggregate``
    says how to combine them: ``"mean"`` or ``"median"`` of each subscore over the samples (a null
    faithfulness stays null only when every sample is null), or ``"first"`` (the first row). The
    trajectory facts of one segment must agree across its rows.
    """
    if aggregate is not None and aggregate not in AGGREGATES:
        raise ValueError(f"aggregate must be None or one of {list(AGGREGATES)}, got {aggregate!r}")
    needed = ["segment_id", *DIMENSIONS, *CAP_FACTS]
    missing = [c for c in needed if c not in results.columns]
    if missing:
        raise ValueError(f"results are missing columns {missing}; got {list(results.columns)}")
    n_input = len(results)
    if "status" in results.columns:
        judged_mask = (results["status"] == JUDGED).to_numpy()
        excluded = results.loc[~judged_mask, ["segment_id", "status"]].reset_index(drop=True)
    else:
        judged_mask = np.ones(n_input, dtype=bool)
        excluded = pd.DataFrame({"segment_id": pd.Series(dtype=object), "status": pd.Series(dtype=object)})
    judged = results.loc[judged_mask, needed].reset_index(drop=True)
    if judged.empty:
        raise ValueError(f"no judged segments among {n_input} result rows ({len(excluded)} excluded)")
    subs = judged[list(DIMENSIONS)].to_numpy(dtype=np.float64, na_value=np.nan)
    bad = np.isnan(subs[:, :3]).any(axis=1)
    if bad.any():
        raise ValueError(f"{int(bad.sum())} judged row(s) have a null required dimension, e.g. segment ids "
                         f"{judged.loc[bad, 'segment_id'].head(5).tolist()}")
    if judged[list(CAP_FACTS)].isna().any().any():
        raise ValueError("fact columns must not contain nulls")
    repeated = judged["segment_id"].duplicated(keep=False)
    if repeated.any():
        ids = judged.loc[repeated, "segment_id"].drop_duplicates()
        if aggregate is None:
            raise ValueError(
                f"{len(ids)} segment id(s) occur on more than one judged row (repeated samples?), e.g. "
                f"{ids.head(5).tolist()}; pass aggregate='mean' or 'median' to combine their subscores, "
                "or 'first' to keep the first sample")
        facts_disagree = judged.groupby("segment_id", sort=False)[list(CAP_FACTS)].nunique().gt(1).any(axis=1)
        if facts_disagree.any():
            raise ValueError(f"trajectory facts differ between rows of segment(s) "
                             f"{facts_disagree[facts_disagree].index[:5].tolist()}; they cannot be combined")
        if aggregate == "first":
            judged = judged.drop_duplicates("segment_id", keep="first").reset_index(drop=True)
        else:
            grouped = judged.groupby("segment_id", sort=False)
            values = getattr(grouped[list(DIMENSIONS)], aggregate)()  # skips nulls: null only if all are
            judged = values.join(grouped[list(CAP_FACTS)].first()).reset_index()
        subs = judged[list(DIMENSIONS)].to_numpy(dtype=np.float64, na_value=np.nan)
    return Segments(segment_ids=judged["segment_id"].to_numpy(dtype=object), subscores=np.clip(subs, 0.0, 10.0),
                    facts=judged[list(CAP_FACTS)].to_numpy(dtype=bool), n_input_rows=n_input, excluded=excluded,
                    aggregate=aggregate if repeated.any() else None)


def _as_segments(segments: Segments | pd.DataFrame) -> Segments:
    return segments if isinstance(segments, Segments) else segments_from_results(segments)


# =====================================================================================================
# designs
# =====================================================================================================
@dataclass(frozen=True, eq=False)
class WeightDesign:
    """K weight vectors (rows of ``weights``, ``DIMENSIONS`` order) and what each one is.

    ``labels`` has one row per vector (``one_at_a_time``: ``perturbed``, ``step``, ``size``; random
    designs: ``sample``). ``seed`` is what the generator was seeded with (``None`` if not random).
    """

    name: str
    weights: np.ndarray
    labels: pd.DataFrame
    nominal: np.ndarray
    seed: Any = None
    params: dict[str, Any] = field(default_factory=dict)

    def frame(self) -> pd.DataFrame:
        """Labels and the four weights, one row per vector."""
        return pd.concat([self.labels.reset_index(drop=True),
                          pd.DataFrame(self.weights, columns=list(DIMENSIONS))], axis=1)

    def __len__(self) -> int:
        return int(self.weights.shape[0])


def one_at_a_time(nominal: Any, steps: Sequence[float] = DEFAULT_DELTAS) -> WeightDesign:
    """Each weight moved by ``-step`` and ``+step`` for every step, the others rescaled to keep sum 1.

    Rule: ``w_k = w0_k + delta``; ``w_j = w0_j (1 - w_k) / (1 - w0_k)`` for ``j != k`` (proportions among
    the others kept). Raises ``ValueError`` when a step would take ``w_k`` outside [0, 1] or when
    ``w0_k = 1`` (nothing left to rescale).
    """
    w0 = _nominal_weights(nominal)
    sizes = sorted({_check_delta(s) for s in steps})
    if not sizes:
        raise ValueError("one_at_a_time needs at least one step")
    rows, labels = [], []
    for k, dim in enumerate(DIMENSIONS):
        if w0[k] >= 1.0:
            raise ValueError(f"cannot move {dim} alone: its nominal weight is 1, the others are 0")
        for delta in [-s for s in reversed(sizes)] + sizes:
            wk = w0[k] + delta
            if not 0.0 <= wk <= 1.0:
                raise ValueError(f"step {delta:+g} takes {dim} from {w0[k]:g} to {wk:g}, outside [0, 1]")
            w = w0 * ((1.0 - wk) / (1.0 - w0[k]))
            w[k] = wk
            rows.append(w)
            labels.append({"perturbed": dim, "step": delta, "size": abs(delta)})
    return WeightDesign(name="one_at_a_time", weights=np.array(rows), labels=pd.DataFrame(labels), nominal=w0,
                        params={"steps": sizes, "rule": "w_k = w0_k + step; others * (1 - w_k) / (1 - w0_k)"})


def box_simplex_sample(nominal: Any, d: float, n: int, seed: Any) -> WeightDesign:
    """``n`` draws uniform on ``P_d`` (box of half-width ``d`` around ``nominal`` on the simplex).

    Rejection sampler described in the module docstring (uniform in the first three weights' box
    intervals, ``w_4 = 1 - w_1 - w_2 - w_3``, kept when ``w_4`` is in its interval). ``seed`` goes to
    ``numpy.random.default_rng`` and is recorded in the design.
    """
    w0 = _nominal_weights(nominal)
    lower, upper = box_on_simplex_bounds(w0, d)
    n = _check_count(n, "n")
    rng = np.random.default_rng(seed)
    accepted: list[np.ndarray] = []
    have, drawn = 0, 0
    while have < n:
        m = max(64, int(1.6 * (n - have)))
        z = lower[:3] + (upper[:3] - lower[:3]) * rng.random((m, 3))
        w4 = 1.0 - z.sum(axis=1)
        ok = (w4 >= lower[3]) & (w4 <= upper[3])
        accepted.append(np.column_stack([z[ok], w4[ok]]))
        have += int(ok.sum())
        drawn += m
        if drawn > 1000 * n + 10_000 and have < n:  # cannot happen for P_d around a nominal vector; a guard
            raise RuntimeError(f"box_simplex_sample: acceptance {have / drawn:.2e} is too low for d={d}")
    weights = np.concatenate(accepted)[:n]
    return WeightDesign(name="box_simplex", weights=weights, labels=pd.DataFrame({"sample": np.arange(n), "d": d}),
                        nominal=w0, seed=_seed_record(seed),
                        params={"d": float(d), "sampler": "rejection, uniform in (w1, w2, w3), w4 = 1 - sum",
                                "acceptance": have / drawn})


def dirichlet_sample(nominal: Any, concentration: float = DEFAULT_CONCENTRATION, n: int = 1000,
                     seed: Any = 0) -> WeightDesign:
    """``n`` draws ``w ~ Dirichlet(concentration * nominal)``: centred on the nominal weights.

    ``Var w_k = w0_k (1 - w0_k) / (concentration + 1)``. Every nominal weight must be positive.
    """
    w0 = _nominal_weights(nominal)
    if not (isinstance(concentration, int | float) and math.isfinite(concentration) and concentration > 0):
        raise ValueError(f"concentration must be a positive number, got {concentration!r}")
    if (w0 <= 0).any():
        raise ValueError(f"a Dirichlet centred on {w0.tolist()} needs every nominal weight > 0")
    n = _check_count(n, "n")
    weights = np.random.default_rng(seed).dirichlet(concentration * w0, size=n)
    return WeightDesign(name="dirichlet", weights=weights, labels=pd.DataFrame({"sample": np.arange(n)}), nominal=w0,
                        seed=_seed_record(seed),
                        params={"concentration": float(concentration),
                                "sd": dict(zip(DIMENSIONS, np.sqrt(w0 * (1 - w0) / (concentration + 1)).tolist()))})


def _check_count(n: int, what: str) -> int:
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1:
        raise ValueError(f"{what} must be a positive integer, got {n!r}")
    return int(n)


def _seed_record(seed: Any) -> Any:
    if isinstance(seed, np.random.SeedSequence):
        return {"entropy": seed.entropy, "spawn_key": list(seed.spawn_key)}
    if isinstance(seed, Sequence) and not isinstance(seed, str):
        return [int(s) for s in seed]
    if isinstance(seed, int | np.integer):
        return int(seed)
    raise ValueError(f"seed must be an int, a sequence of ints or a numpy SeedSequence, got {seed!r}")


def _weight_matrix(weights: WeightDesign | pd.DataFrame | np.ndarray | Sequence[Sequence[float]]) -> np.ndarray:
    """(K, 4) float array of weight vectors, each on the simplex (to 1e-9)."""
    if isinstance(weights, WeightDesign):
        arr = weights.weights
    elif isinstance(weights, pd.DataFrame):
        missing = [d for d in DIMENSIONS if d not in weights.columns]
        if missing:
            raise ValueError(f"weight frame is missing columns {missing}")
        arr = weights[list(DIMENSIONS)].to_numpy(dtype=np.float64)
    else:
        arr = np.asarray(weights, dtype=np.float64)
    arr = np.atleast_2d(arr)
    if arr.ndim != 2 or arr.shape[1] != len(DIMENSIONS) or arr.shape[0] == 0:
        raise ValueError(f"weights must have shape (K, {len(DIMENSIONS)}) with K >= 1, got {arr.shape}")
    bad = ~np.isfinite(arr).all(axis=1) | (arr < 0).any(axis=1) | (np.abs(arr.sum(axis=1) - 1.0) > 1e-9)
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise ValueError(f"{int(bad.sum())} weight vector(s) are not on the simplex (non-negative, sum 1), "
                         f"first at row {k}: {arr[k].tolist()}")
    return np.ascontiguousarray(arr)


# =====================================================================================================
# grouping segments by what their score depends on
# =====================================================================================================
@dataclass(frozen=True, eq=False)
class _Groups:
    """Segments grouped by (faithfulness observed, clamped subscores, lowest cap).

    Rows ``[0, n_observed)`` have faithfulness observed, the rest null; ``s0T`` is (4, U) with 0 for a
    null subscore; ``inverse[t]`` is segment ``t``'s group; ``first[g]`` the first segment in group ``g``.
    """

    s0T: np.ndarray
    observed: np.ndarray
    cap: np.ndarray
    counts: np.ndarray
    inverse: np.ndarray
    first: np.ndarray
    n_observed: int

    @property
    def n_groups(self) -> int:
        return int(self.counts.shape[0])


def _check_scorable(segments: Segments, rubric: Rubric) -> None:
    """Refuse segments the rubric's own weights cannot score (never band them): see the module docstring."""
    bad = unscorable_mask(segments.subscores, rubric)
    if bad.any():
        ids = segments.segment_ids[bad][:5].tolist()
        raise ValueError(f"{int(bad.sum())} segment(s) are unscorable under rubric {rubric.label} (e.g. {ids}): its "
                         f"weights {rubric.weights.as_dict()} put no weight on their observed dimensions (their "
                         "answer_faithfulness is null); drop them or use weights that score them")


def _group_segments(segments: Segments, rubric: Rubric) -> _Groups:
    _check_scorable(segments, rubric)
    subs = segments.subscores
    observed = ~np.isnan(subs[:, 3])
    cap = _effective_caps(subs, segments.facts, rubric)
    s0 = np.where(np.isnan(subs), 0.0, subs)
    first, inverse, counts = _unique_rows(np.column_stack([observed.astype(np.float64), s0, cap]))
    # Faithfulness-observed groups first, so a numpy tile never mixes the two denominators.
    order = np.argsort(~observed[first], kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    first, counts, inverse = first[order], counts[order], rank[inverse]
    return _Groups(s0T=np.ascontiguousarray(s0[first].T), observed=observed[first], cap=cap[first],
                   counts=counts.astype(np.int64), inverse=inverse, first=first,
                   n_observed=int(observed[first].sum()))


def _unique_rows(key: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(first index, inverse, counts) of the distinct rows of a float array (rows compared bytewise,
    after turning -0.0 into 0.0; much faster than ``numpy.unique(axis=0)``)."""
    key = np.ascontiguousarray(key + 0.0)
    rows = key.view(np.dtype((np.void, key.dtype.itemsize * key.shape[1]))).ravel()
    _, first, inverse, counts = np.unique(rows, return_index=True, return_inverse=True, return_counts=True)
    return first, np.asarray(inverse).ravel(), counts


def _tiles(groups: _Groups, tile: int) -> list[tuple[int, int, bool]]:
    """(lo, hi, faithfulness observed) tiles that never straddle the two observation patterns."""
    out = []
    for lo0, hi0, obs in ((0, groups.n_observed, True), (groups.n_observed, groups.n_groups, False)):
        out.extend((lo, min(lo + tile, hi0), obs) for lo in range(lo0, hi0, tile))
    return out


def _weight_columns(w: np.ndarray) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Weight columns (K, 1) for the two observation patterns (faithfulness weight 0 when null),
    exactly the ``wo = where(observed, w, 0)`` of the scoring kernel."""
    cols = [np.ascontiguousarray(w[:, d:d + 1]) for d in range(len(DIMENSIONS))]
    return cols, cols[:3] + [np.zeros_like(cols[3])]


def _score_tile(groups: _Groups, lo: int, hi: int, observed: bool, w_obs: list[np.ndarray],
                w_null: list[np.ndarray], rubric: Rubric) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(raw, score, band_code) of K vectors x groups ``[lo, hi)``, by the scoring kernel's pieces."""
    s_cols = [groups.s0T[d, lo:hi][None, :] for d in range(len(DIMENSIONS))]
    raw = _weighted_raw(s_cols, w_obs if observed else w_null)
    _capped, score, code = _cap_round_band(raw, groups.cap[None, lo:hi], rubric)
    return raw, score, code


def _nominal_scores(groups: _Groups, rubric: Rubric) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(raw, score, band_code) of every group under the rubric's own weights."""
    w = _weight_array(rubric)[None, :]
    w_obs, w_null = _weight_columns(w)
    raw, score, code = np.empty(groups.n_groups), np.empty(groups.n_groups), np.empty(groups.n_groups, dtype=np.int64)
    for lo, hi, obs in _tiles(groups, 1 << 16):
        r, s, c = _score_tile(groups, lo, hi, obs, w_obs, w_null, rubric)
        raw[lo:hi], score[lo:hi], code[lo:hi] = r[0], s[0], c[0]
    return raw, score, code


def _check_null_weights(groups: _Groups, weights: np.ndarray) -> None:
    """A segment with faithfulness null needs some weight on the other three dimensions."""
    if groups.n_observed < groups.n_groups:
        zero = weights[:, :3].sum(axis=1) <= 0
        if zero.any():
            k = int(np.flatnonzero(zero)[0])
            raise ValueError(f"weight vector {k} ({weights[k].tolist()}) puts no weight on the three dimensions "
                             "that segments with a null faithfulness are scored on")


def _band_edge_distance(score: np.ndarray, rubric: Rubric) -> np.ndarray:
    return np.minimum(np.abs(score - rubric.bands.good), np.abs(score - rubric.bands.partial))


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
    segments : :class:`Segments` or a results DataFrame (see :func:`segments_from_results`).
    weights : a :class:`WeightDesign`, a DataFrame with the four dimension columns, or a (K, 4) array;
        every row non-negative and summing to 1.
    rubric : caps and bands (default ``axon-v1``); its own weights are the nominal vector.
    rank_correlation : compute Kendall's tau-b per vector (the costliest reduction; NaN otherwise).
    vectors_per_chunk, n_threads : work split. Each thread scores its chunk one vector at a time in a
        compiled loop over the segment groups, so memory is O(groups) per thread (about 40 bytes per
        group) plus the (K, 4) weights and the outputs: K x T is never materialised.

    Returns
    -------
    :class:`WeightSweep`; the scores behind it equal ``score_frame(df, rubric.with_weights(w))``.
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


# =====================================================================================================
# Sobol indices (SALib)
# =====================================================================================================
def sobol_indices(model: Callable[[np.ndarray], np.ndarray], names: Sequence[str],
                  bounds: Sequence[tuple[float, float]], n_base: int, seed: int,
                  output_names: Sequence[str] = ("y",), num_resamples: int = 200) -> pd.DataFrame:
    """First-order and total Sobol indices of ``model`` with independent uniform inputs (SALib).

    ``model`` maps an (N, D) input array to (N,) or (N, M) outputs. Sampling is SALib's Saltelli scheme
    on a scrambled Sobol sequence (``n_base * (D + 2)`` evaluations, ``n_base`` a power of two); the
    estimators are Saltelli et al. (2010) / Jansen, with bootstrap 95% intervals (``*_conf``).
    Returns one row per (output, input): ``output``, ``weight``, ``S1``, ``S1_conf``, ``ST``, ``ST_conf``.
    An output with zero variance has undefined indices (NaN).
    """
    from SALib.analyze import sobol as sobol_analyze
    from SALib.sample import sobol as sobol_sample

    n_base = _check_count(n_base, "n_base")
    if n_base & (n_base - 1):
        raise ValueError(f"n_base must be a power of two (Sobol sequence balance), got {n_base}")
    problem = {"num_vars": len(names), "names": list(names), "bounds": [list(map(float, b)) for b in bounds]}
    x = sobol_sample.sample(problem, n_base, calc_second_order=False, scramble=True, seed=seed)
    y = np.asarray(model(x), dtype=np.float64)
    y = y[:, None] if y.ndim == 1 else y
    if y.shape != (x.shape[0], len(output_names)):
        raise ValueError(f"model returned shape {y.shape}, expected ({x.shape[0]}, {len(output_names)})")
    rows = []
    for m, out_name in enumerate(output_names):
        if np.ptp(y[:, m]) == 0:
            rows += [{"output": out_name, "weight": nm, "S1": np.nan, "S1_conf": np.nan, "ST": np.nan, "ST_conf": np.nan}
                     for nm in names]
            continue
        res = sobol_analyze.analyze(problem, y[:, m], calc_second_order=False, num_resamples=num_resamples,
                                    print_to_console=False, seed=seed)
        rows += [{"output": out_name, "weight": nm, "S1": float(res["S1"][k]), "S1_conf": float(res["S1_conf"][k]),
                  "ST": float(res["ST"][k]), "ST_conf": float(res["ST_conf"][k])} for k, nm in enumerate(names)]
    return pd.DataFrame(rows)


@dataclass(frozen=True, eq=False)
class WeightSobol:
    """Sobol indices of each weight for the mean score and the share good (module docstring)."""

    d: float
    n_base: int
    n_evaluations: int
    seed: int
    table: pd.DataFrame
    parametrisation: str = ("raw weights v_k ~ U[max(0, w0_k - d), w0_k + d] independent; "
                            "the rubric uses w = v / sum(v)")

    def to_json(self) -> dict[str, dict[str, dict[str, float | None]]]:
        out: dict[str, dict[str, dict[str, float | None]]] = {}
        for r in self.table.itertuples():
            out.setdefault(r.weight, {})[r.output] = {"S1": _json_float(r.S1), "ST": _json_float(r.ST)}
        return out


def weight_sobol(segments: Segments | pd.DataFrame, rubric: Rubric | None = None, d: float = 0.05,
                 n_base: int = 512, seed: int = 0, **sweep_options: Any) -> WeightSobol:
    """Sobol S1/ST of the four (raw, then renormalised) weights for the mean score and the share good."""
    rubric = Rubric.default() if rubric is None else rubric
    segs = _as_segments(segments)
    w0 = _weight_array(rubric)
    d = _check_delta(d)
    bounds = [(max(0.0, w - d), w + d) for w in w0]

    def model(v: np.ndarray) -> np.ndarray:
        w = v / v.sum(axis=1, keepdims=True)
        sweep = sweep_weights(segs, w, rubric, rank_correlation=False, **sweep_options)
        return sweep.per_vector[["mean_score", "share_good"]].to_numpy()

    table = sobol_indices(model, DIMENSIONS, bounds, n_base, seed, output_names=("mean_score", "share_good"))
    return WeightSobol(d=d, n_base=n_base, n_evaluations=n_base * (len(DIMENSIONS) + 2), seed=int(seed), table=table)


# =====================================================================================================
# the study summary
# =====================================================================================================
def _json_float(v: Any) -> float | None:
    v = float(v)
    return None if not math.isfinite(v) else round(v, 6)


def _json_id(v: Any) -> Any:
    return v.item() if isinstance(v, np.generic) else v


def _d_key(d: float) -> str:
    return f"{d:g}"


@dataclass(frozen=True, eq=False)
class WeightSensitivitySummary:
    """Everything study 02 reports, computed by :func:`weight_sensitivity_summary`.

    Tables for the notebook: ``oat`` (one row per one-at-a-time vector: ``perturbed``, ``step``,
    ``size``, weights, ``max_abs_delta``, ``n_band_flips``, ``kendall_tau``, ...), ``box`` (per d, the
    :class:`WeightSweep` of ``n_samples`` uniform draws), ``dirichlet`` (a :class:`WeightSweep`),
    ``worst`` (per d, :class:`WorstCase`), ``pairs`` (per d, :class:`GoodBelowPoor`), ``sobol``.
    :meth:`to_json` returns the study keys only.
    """

    rubric_id: str
    rubric_name: str
    n_segments: int
    n_excluded: int
    excluded: pd.DataFrame
    aggregate: str | None
    deltas: tuple[float, ...]
    n_samples: int
    seed: int
    oat: pd.DataFrame
    box: dict[float, WeightSweep]
    dirichlet: WeightSweep
    concentration: float
    worst: dict[float, WorstCase]
    pairs: dict[float, GoodBelowPoor]
    sobol: WeightSobol

    @property
    def worst_case_abs_delta(self) -> dict[float, float]:
        return {d: self.worst[d].max_abs_delta for d in self.deltas}

    @property
    def oat_max_abs_delta(self) -> dict[float, float]:
        return {d: float(self.oat.loc[np.isclose(self.oat["size"], d), "max_abs_delta"].max()) for d in self.deltas}

    @property
    def band_flip_rate(self) -> dict[float, float]:
        return {d: self.box[d].band_flip_rate for d in self.deltas}

    def to_json(self) -> dict[str, Any]:
        """``worst_case_abs_delta``, ``oat_max_abs_delta``, ``band_flip_rate`` (per d, keys like
        ``"0.05"``; points of score or shares), ``good_below_poor`` (per d: ``n_pairs``, ``example`` and
        context) and ``sobol`` (per weight, per output: ``S1``, ``ST``). JSON-safe (NaN -> null)."""
        return {
            "worst_case_abs_delta": {_d_key(d): _json_float(v) for d, v in self.worst_case_abs_delta.items()},
            "oat_max_abs_delta": {_d_key(d): _json_float(v) for d, v in self.oat_max_abs_delta.items()},
            "band_flip_rate": {_d_key(d): _json_float(v) for d, v in self.band_flip_rate.items()},
            "good_below_poor": {_d_key(d): self.pairs[d].to_json() for d in self.deltas},
            "sobol": self.sobol.to_json(),
        }


def weight_sensitivity_summary(results: pd.DataFrame | Segments, rubric: Rubric | None = None,
                               deltas: Sequence[float] = DEFAULT_DELTAS, n_samples: int = 1000, seed: int = 0, *,
                               aggregate: str | None = None, concentration: float = DEFAULT_CONCENTRATION,
                               sobol_base: int | None = None, sobol_delta: float | None = None,
                               **sweep_options: Any) -> WeightSensitivitySummary:
    """Study 02 in one call: one-at-a-time, box sampling, Dirichlet, exact worst cases, pair test, Sobol.

    Parameters
    ----------
    results : a run's results DataFrame (or :class:`Segments`); rows not ``judged`` are excluded and
        counted; repeated samples need ``aggregate`` (see :func:`segments_from_results`).
    rubric : nominal weights, caps and bands (default ``axon-v1``).
    deltas : perturbation sizes ``d`` (weight units): one-at-a-time steps +-d, box ``P_d``.
    n_samples : uniform draws from each ``P_d``, and Dirichlet draws.
    seed : base seed; the box draws for ``deltas[i]`` use ``[seed, i]``, the Dirichlet draws
        ``[seed, len(deltas)]``, Sobol's scrambling ``seed``.
    sobol_base : Saltelli base sample (power of two; default the largest power of two <= n_samples,
        at least 64); ``sobol_delta`` : box half-width for Sobol (default ``max(deltas)``).
    """
    rubric = Rubric.default() if rubric is None else rubric
    segs = results if isinstance(results, Segments) else segments_from_results(results, aggregate=aggregate)
    ds = tuple(sorted({_check_delta(d) for d in deltas}))
    if not ds:
        raise ValueError("deltas must hold at least one perturbation size")
    n_samples = _check_count(n_samples, "n_samples")
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer):
        raise ValueError(f"seed must be an integer, got {seed!r}")
    oat_design = one_at_a_time(rubric, ds)
    oat_sweep = sweep_weights(segs, oat_design, rubric, **sweep_options)
    box = {d: sweep_weights(segs, box_simplex_sample(rubric, d, n_samples, [int(seed), i]), rubric, **sweep_options)
           for i, d in enumerate(ds)}
    dirichlet = sweep_weights(segs, dirichlet_sample(rubric, concentration, n_samples, [int(seed), len(ds)]), rubric,
                              **sweep_options)
    worst = {d: worst_case(segs, rubric, d) for d in ds}
    pairs = {d: good_below_poor(segs, rubric, d, worst=worst[d]) for d in ds}
    base = sobol_base if sobol_base is not None else max(64, 1 << int(math.floor(math.log2(n_samples))))
    sobol = weight_sobol(segs, rubric, max(ds) if sobol_delta is None else sobol_delta, base, int(seed),
                         **sweep_options)
    return WeightSensitivitySummary(
        rubric_id=rubric.id, rubric_name=rubric.name, n_segments=segs.n_segments, n_excluded=segs.n_excluded,
        excluded=segs.excluded, aggregate=segs.aggregate, deltas=ds, n_samples=n_samples, seed=int(seed),
        oat=oat_sweep.per_vector, box=box, dirichlet=dirichlet, concentration=float(concentration), worst=worst,
        pairs=pairs, sobol=sobol)
