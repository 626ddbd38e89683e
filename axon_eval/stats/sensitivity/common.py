"""Weight sensitivity, common ground: the score model, segments, nominal weights, grouping.

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
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ...rubric import CAP_FACTS, DIMENSIONS, Rubric, Weights
from ...scoring import _cap_round_band, _effective_caps, _weight_array, _weighted_raw, unscorable_mask


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
    """Judged segments from a run's results DataFrame (its ``results/`` dataset).

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


def _json_float(v: Any) -> float | None:
    v = float(v)
    return None if not math.isfinite(v) else round(v, 6)


def _json_id(v: Any) -> Any:
    return v.item() if isinstance(v, np.generic) else v
