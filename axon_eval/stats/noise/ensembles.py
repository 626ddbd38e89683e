"""Judge noise: ensembles of k judgements by bootstrap, their cost, and the recommended k.

Ensembles of k judgements (bootstrap; Efron & Tibshirani 1993)
    For ``k = 1..n`` and each segment, ``B`` replicate ensembles draw ``k`` of the segment's ``n``
    judgements (repeat samples: with replacement, the bootstrap; cross-judge members: without
    replacement, i.e. random subsets of distinct members) from a seeded ``numpy.random.Generator``;
    the same draws serve every reducer. An ensemble's score is the rubric's score of the per-dimension
    mean (median) of its members' subscores, as :class:`~axon_eval.judges.wrappers.EnsembleJudge`
    does, when the table has the cap facts; otherwise the mean (median) of the members' scores.
    ``flip_rate`` is the chance that two independent ensembles of a segment land in different bands
    (the pairwise estimator above over the ``B`` replicates, averaged over segments); ``sd`` the
    pooled within-segment SD of the ensemble score. Resampling with replacement shrinks the variance
    of a k-mean by ``(n - 1) / n`` against fresh samples, so at small ``n`` the table is slightly
    optimistic. Cost of ``k``: ``k`` calls per segment and ``k`` times the mean tokens and dollars per
    judgement from the records; NaN (unknown) when any judgement's figure is missing, never 0.

References
    Efron, B., & Tibshirani, R. J. (1993). An Introduction to the Bootstrap. Chapman & Hall.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ...rubric import BANDS, DIMENSIONS, Rubric
from ...scoring import score_arrays
from .common import COST_COLUMNS, ENSEMBLE_REDUCERS, SampleMatrix, _band_codes, _check_table, pivot_samples
from .within import _present


# =============================================================================================
# Ensembles of k judgements
# =============================================================================================
@dataclass(frozen=True, eq=False)
class EnsembleCurve:
    """Flip rate, SD and cost of k-judgement ensembles, k = 1..n (module docstring).

    ``table`` columns: ``reducer``, ``k``, ``flip_rate``, ``sd`` (points), ``calls`` (per segment),
    ``input_tokens``, ``output_tokens``, ``cache_read_tokens``, ``cost_usd`` (expected per segment; NaN
    = unknown), ``cost_usd_per_1000_segments``. ``basis`` is ``"subscores"`` (per-dimension reduction
    re-scored by the rubric) or ``"score"``; ``draw`` is ``"with_replacement"`` or
    ``"without_replacement"``; ``seed`` and ``n_boot`` reproduce the draws.
    """

    table: pd.DataFrame
    seed: int
    n_boot: int
    draw: str
    basis: str
    rater: str
    n_segments: int
    n_samples: int
    cost_note: str = ""


def _auto_n_boot(n_segments: int) -> int:
    # About 200,000 replicate ensembles per k in all: enough replicates per segment on a small
    # sample (97 segments -> 200), and a bounded cost on a large one (10,000 segments -> 20).
    return int(np.clip(200_000 // max(n_segments, 1), 20, 200))


def ensemble_curve(samples_df: pd.DataFrame, rubric: Rubric | None = None, *, seed: int,
                   reducers: Sequence[str] = ENSEMBLE_REDUCERS, n_boot: int | None = None, draw: str | None = None,
                   rater: str | None = None, max_k: int | None = None) -> EnsembleCurve:
    """Bootstrap k-judgement ensembles of every complete segment (module docstring).

    ``seed``: the ``numpy.random.Generator`` seed (recorded). ``n_boot``: replicate ensembles per
    segment and k (default: 200,000 / segments, clipped to 20-200). ``draw``: default
    ``with_replacement`` for repeat samples and ``without_replacement`` for members. ``max_k``: largest
    k (default the number of raters; at most that when drawing without replacement).
    """
    rubric = Rubric.default() if rubric is None else rubric
    _check_table(samples_df, rubric)
    sm = pivot_samples(samples_df, _present(samples_df, COST_COLUMNS), rater)
    return _ensemble(sm, rubric, seed=seed, reducers=reducers, n_boot=n_boot, draw=draw, max_k=max_k)


def _ensemble(sm: SampleMatrix, rubric: Rubric, *, seed: int, reducers: Sequence[str], n_boot: int | None,
              draw: str | None, max_k: int | None) -> EnsembleCurve:
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer):
        raise ValueError(f"seed must be an integer, got {seed!r}")
    for r in reducers:
        if r not in ENSEMBLE_REDUCERS:
            raise ValueError(f"unknown ensemble reducer {r!r}; expected one of {list(ENSEMBLE_REDUCERS)}")
    if not reducers:
        raise ValueError("reducers must name at least one of mean, median")
    draw = draw or ("without_replacement" if sm.rater == "member" else "with_replacement")
    if draw not in ("with_replacement", "without_replacement"):
        raise ValueError(f"draw must be with_replacement or without_replacement, got {draw!r}")
    complete = sm.complete("score")
    n_seg, n = int(complete.sum()), sm.n_raters
    if n_seg < 1 or n < 1:
        raise ValueError(f"no complete segments to resample ({sm.n_segments} segments, {n} raters)")
    max_k = n if max_k is None else int(max_k)
    if max_k < 1 or (draw == "without_replacement" and max_k > n):
        # with replacement, k may exceed n (the bootstrap of a larger ensemble); subsets cannot
        raise ValueError(f"max_k must be >= 1 (and <= {n} raters when drawing without replacement), got {max_k}")
    n_boot = _auto_n_boot(n_seg) if n_boot is None else int(n_boot)
    if n_boot < 2:
        raise ValueError(f"n_boot must be >= 2 (the flip rate compares replicate pairs), got {n_boot}")

    score = sm.values["score"][complete]
    basis = "subscores" if sm.facts is not None and all(d in sm.values for d in DIMENSIONS) else "score"
    dims = facts = None
    if basis == "subscores":
        dims = np.stack([sm.values[d][complete] for d in DIMENSIONS])  # (4, n_seg, n)
        facts = sm.facts[complete]
        _check_rescoring(dims, facts, score, rubric, sm.segment_ids[complete])
        partial_null = np.isnan(dims[3]).any(axis=1) & ~np.isnan(dims[3]).all(axis=1)
    rng = np.random.default_rng(int(seed))
    chunk = max(1, 4_000_000 // (n_boot * max(n, max_k)))
    rows = []
    cost_per_call, cost_note = _cost_per_call(sm, complete)
    for k in range(1, max_k + 1):
        sums = {r: [0.0, 0.0] for r in reducers}  # pairwise flip sum, variance sum
        for start in range(0, n_seg, chunk):
            stop = min(n_seg, start + chunk)
            size = stop - start
            ens: dict[str, np.ndarray] = {}  # reducer -> (size, n_boot) ensemble scores
            codes: dict[str, np.ndarray] = {}  # reducer -> their band codes
            if draw == "with_replacement":
                idx = rng.integers(0, n, size=(size, n_boot, k))
            else:
                idx = np.argsort(rng.random((size, n_boot, n)), axis=2)[:, :, :k]
            rows_idx = np.arange(start, stop)[:, None, None]
            # gather each drawn column once and reduce it with every reducer (common random numbers)
            if basis == "score":
                reduced = _reduce_draws(score[rows_idx, idx], reducers, nan_aware=False)
                for reducer in reducers:
                    ens[reducer] = reduced[reducer]
                    codes[reducer] = _band_codes(ens[reducer], rubric)
            else:
                parts: dict[str, list[np.ndarray]] = {r: [] for r in reducers}
                for j in range(len(DIMENSIONS)):
                    nan_aware = j == 3 and bool(partial_null[start:stop].any())
                    for reducer, values in _reduce_draws(dims[j][rows_idx, idx], reducers, nan_aware).items():
                        parts[reducer].append(values)
                fact_rows = np.repeat(facts[start:stop], n_boot, axis=0)
                for reducer in reducers:
                    subs = np.stack(parts[reducer], axis=-1).reshape(size * n_boot, len(DIMENSIONS))
                    _raw, ens_flat, code_flat = score_arrays(subs, fact_rows, rubric)
                    ens[reducer], codes[reducer] = ens_flat.reshape(size, n_boot), code_flat.reshape(size, n_boot)
            for reducer in reducers:
                counts = np.stack([(codes[reducer] == b).sum(axis=1) for b in range(len(BANDS))], axis=1)
                same = (counts * (counts - 1)).sum(axis=1) / (n_boot * (n_boot - 1))
                sums[reducer][0] += float((1.0 - same).sum())
                sums[reducer][1] += float(ens[reducer].var(axis=1, ddof=1).sum())
        for reducer in reducers:
            flip_sum, var_sum = sums[reducer]
            cost = {c: (k * v if not math.isnan(v) else float("nan")) for c, v in cost_per_call.items()}
            rows.append({"reducer": reducer, "k": k, "flip_rate": flip_sum / n_seg, "sd": math.sqrt(var_sum / n_seg),
                         "calls": k, **cost,
                         "cost_usd_per_1000_segments": 1000 * cost["cost_usd"]})
    order = {r: i for i, r in enumerate(reducers)}
    table = (pd.DataFrame(rows).assign(_order=lambda t: t["reducer"].map(order))
             .sort_values(["_order", "k"]).drop(columns="_order").reset_index(drop=True))
    return EnsembleCurve(table=table, seed=int(seed), n_boot=n_boot, draw=draw, basis=basis, rater=sm.rater,
                         n_segments=n_seg, n_samples=n, cost_note=cost_note)


def _reduce_draws(drawn: np.ndarray, reducers: Sequence[str], nan_aware: bool) -> dict[str, np.ndarray]:
    """Mean and/or median over the last axis of ``(segments, n_boot, k)`` draws.

    The median sorts once (k is small) and averages the two middle values for even k, as
    ``numpy.median`` and ``statistics.median`` do. ``nan_aware`` (a dimension null on some but not
    all judgements of a segment) ignores NaN, as the ensemble judge leaves null members out.
    """
    out: dict[str, np.ndarray] = {}
    if nan_aware:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-null slices give NaN: null stays null
            for reducer in reducers:
                out[reducer] = (np.nanmean if reducer == "mean" else np.nanmedian)(drawn, axis=-1)
        return out
    k = drawn.shape[-1]
    for reducer in reducers:
        if reducer == "mean":
            out[reducer] = drawn.mean(axis=-1)
        else:
            ordered = np.sort(drawn, axis=-1)
            out[reducer] = 0.5 * (ordered[..., (k - 1) // 2] + ordered[..., k // 2])
    return out


def _check_rescoring(dims: np.ndarray, facts: np.ndarray, score: np.ndarray, rubric: Rubric,
                     segment_ids: np.ndarray) -> None:
    """Refuse to re-score subscores when the rubric does not reproduce the table's own scores."""
    n_seg, n = score.shape
    subs = np.moveaxis(dims, 0, -1).reshape(n_seg * n, len(DIMENSIONS))
    _raw, rescored, _code = score_arrays(subs, np.repeat(facts, n, axis=0), rubric)
    gap = np.abs(rescored.reshape(n_seg, n) - score)
    if (gap > 0.051).any():
        i, j = np.argwhere(gap > 0.051)[0]
        raise ValueError(f"rubric {rubric.id!r} does not reproduce the table's score of segment {segment_ids[i]!r} "
                         f"(judgement {j}: table {score[i, j]}, rescored {rescored.reshape(n_seg, n)[i, j]}); "
                         "pass the rubric the run was scored with")


def _cost_per_call(sm: SampleMatrix, complete: np.ndarray) -> tuple[dict[str, float], str]:
    """Mean per-judgement cost columns over the complete segments; NaN when any entry is unknown."""
    out: dict[str, float] = {}
    unknown = []
    for column in COST_COLUMNS:
        matrix = sm.values.get(column)
        if matrix is None:
            out[column] = float("nan")
            unknown.append(f"{column}: not in the table")
            continue
        values = matrix[complete]
        if values.size == 0 or np.isnan(values).any():
            out[column] = float("nan")
            unknown.append(f"{column}: unknown for {int(np.isnan(values).sum())} judgement(s)")
        else:
            out[column] = float(values.mean())
    return out, "; ".join(unknown)


@dataclass(frozen=True)
class Recommendation:
    """The smallest k whose ensemble flip rate is at most ``flip_target`` (``k`` None when none is)."""

    k: int | None
    reducer: str | None
    flip_target: float
    flip_rate: float
    sd: float
    cost_usd_per_1000_segments: float
    met: bool
    note: str

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def recommend_k(curve: EnsembleCurve | pd.DataFrame, flip_target: float) -> Recommendation:
    """Smallest ``k`` (over the curve's reducers; ties -> the reducer listed first) with
    ``flip_rate <= flip_target``; when none, ``k=None`` and the best the curve reaches is reported."""
    if not 0 <= flip_target <= 1:
        raise ValueError(f"flip_target must be a share in [0, 1], got {flip_target!r}")
    table = curve.table if isinstance(curve, EnsembleCurve) else curve
    order = {r: i for i, r in enumerate(dict.fromkeys(table["reducer"]))}
    ranked = table.assign(_order=table["reducer"].map(order)).sort_values(["k", "_order"])
    hits = ranked[ranked["flip_rate"] <= flip_target]
    if len(hits):
        best = hits.iloc[0]
        return Recommendation(k=int(best["k"]), reducer=str(best["reducer"]), flip_target=flip_target,
                              flip_rate=float(best["flip_rate"]), sd=float(best["sd"]),
                              cost_usd_per_1000_segments=float(best["cost_usd_per_1000_segments"]), met=True,
                              note=f"k={int(best['k'])} ({best['reducer']}) keeps band flips at or below "
                                   f"{flip_target:.1%}")
    best = ranked.sort_values(["flip_rate", "k"]).iloc[0]
    return Recommendation(k=None, reducer=None, flip_target=flip_target, flip_rate=float(best["flip_rate"]),
                          sd=float(best["sd"]), cost_usd_per_1000_segments=float(best["cost_usd_per_1000_segments"]),
                          met=False, note=f"no k up to {int(table['k'].max())} reaches {flip_target:.1%}; the lowest "
                                          f"flip rate is {float(best['flip_rate']):.1%} at k={int(best['k'])} "
                                          f"({best['reducer']})")
