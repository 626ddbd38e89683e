"""Judge panel design, the arithmetic: reducing a panel's votes, kappa on many tables at once, and
the members' correlated errors.

Vectorised over panels and segments; pure numpy.

A panel
    A subset of the members (size 1 .. ``max_size``), a reducer, and ``s`` samples per member: its
    ``k * s`` *votes* are the samples ``0 .. s-1`` of every member, pooled. Per dimension the judged
    votes are reduced (a null faithfulness vote is left out of that dimension, as in
    :class:`~axon_eval.judges.wrappers.EnsembleJudge`; all null -> null) and rounded to 6 decimals as the
    ensemble's ``_reduce`` does; the panel's verdict is the votes' majority verdict, ties -> the worse
    band. The reduced subscores go through the rubric's scorer (:func:`axon_eval.scoring.score_arrays`)
    with the segment's cap facts, exactly as an ``ensemble(...)`` run's record is scored. Reducers:

    ``mean``
        the arithmetic mean (the ensemble's ``mean``)
    ``median``
        the middle value, the mean of the two middle ones for an even count (the ensemble's ``median``);
        refused for 2 votes (their median is their mean)
    ``majority``
        the most frequent value, ties -> the lowest tied value (the ensemble's ``majority``)
    ``trimmed``
        mean after cutting ``floor(TRIM_FRACTION * n)`` votes from each end (the convention of
        ``scipy.stats.trim_mean``); only with at least ``1 / TRIM_FRACTION`` votes, where it differs
        from the mean
    ``min_faithfulness``
        the mean on the first three dimensions, the *lowest* faithfulness vote: the conservative option
        (one member that finds an unsupported claim is believed)

    One vote has no reducer: that panel is named ``single``.

Agreement with labels (segments labelled and scored by the panel; ``n``)
    ``band_kappa``: Cohen's kappa of the panel's scored band against the labelled verdict, with the
    large-sample standard error of Fleiss, Cohen and Everitt (1969) (what
    ``statsmodels.stats.inter_rater.cohens_kappa`` reports as ``std_kappa``) and the interval
    ``kappa +- z * se`` clipped to [-1, 1]; ``verdict_kappa`` the same for the panel's categorical
    verdict; ``band_accuracy`` the share of equal bands. ``mae``: the mean distance (points) of a reduced
    subscore to its labelled range, 0 inside it (``|v - label|`` for point labels), over the cells where
    both are numbers (``mae_<dimension>`` per dimension); ``score_mae`` the mean ``|score - label score|``
    (the label score is the rubric's score of the labels' midpoints with the segment's caps).
    ``false_pass_rate``: share of the segments labelled partial or poor that the panel scores good;
    ``false_fail_rate``: share of those labelled good that it scores partial or poor.

Member diagnostics
    The error of a member (its sample 0) is ``judge - label`` per dimension (the label's midpoint) and on
    the score. ``correlations[target]`` is the members' Pearson correlation matrix of errors
    (pairwise-complete segments). The effective number of independent members of a panel of ``k``::

        n_eff = k / (1 + (k - 1) * rho_bar)        rho_bar = mean off-diagonal score-error correlation

    the design effect of an equicorrelated mean (Kish 1965, section 8.2): the mean of ``k`` members'
    errors has the variance of the mean of ``n_eff`` independent ones, so three judges that make the same
    mistake (``rho_bar = 1``) are one judge.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..rubric import CAP_FACTS, DIMENSIONS, Rubric
from ..scoring import score_arrays
from .panel_members import MemberSet, MIN_CORRELATION_PAIRS, PANEL_REDUCERS, SINGLE, TRIM_FRACTION, _N_BANDS


# =============================================================================================
# Reducing votes (vectorised over panels and segments)
# =============================================================================================
def _applicable(reducer: str, n_votes: int) -> bool:
    if n_votes == 1:
        return reducer == SINGLE
    if reducer == SINGLE:
        return False
    if reducer == "median":
        return n_votes >= 3
    if reducer == "trimmed":
        return int(TRIM_FRACTION * n_votes) >= 1
    return True


def reduce_votes(votes: np.ndarray, verdicts: np.ndarray, reducer: str) -> tuple[np.ndarray, np.ndarray]:
    """Combine ``V`` votes: ``votes`` (..., V, S, 4) subscores (NaN = null or not judged), ``verdicts``
    (..., V, S) band codes (-1 = not judged). Returns the reduced subscores (..., S, 4), rounded to 6
    decimals (NaN where no vote has a value), and the majority verdict (..., S), ties -> the worse band,
    -1 where no vote was judged. ``reducer``: one of :data:`PANEL_REDUCERS` or ``"single"`` (module
    docstring). Values are the ensemble's for ``mean``, ``median`` and ``majority``.
    """
    votes = np.asarray(votes, dtype=np.float64)
    verdicts = np.asarray(verdicts)
    if votes.ndim < 3 or votes.shape[-1] != len(DIMENSIONS) or verdicts.shape != votes.shape[:-1]:
        raise ValueError(f"votes must be (..., V, S, {len(DIMENSIONS)}) and verdicts (..., V, S); got "
                         f"{votes.shape} and {verdicts.shape}")
    axis = votes.ndim - 3
    return _reduce(votes, np.sort(votes, axis=axis), axis, reducer), _majority_verdict(verdicts, axis)


def _reduce(votes: np.ndarray, srt: np.ndarray, axis: int, reducer: str) -> np.ndarray:
    present = ~np.isnan(votes)
    n = present.sum(axis=axis)
    V = votes.shape[axis]
    with np.errstate(invalid="ignore", divide="ignore"):
        if reducer in ("mean", SINGLE, "min_faithfulness"):
            out = np.where(present, votes, 0.0).sum(axis=axis) / n
            if reducer == "min_faithfulness":
                low = np.take(srt, 0, axis=axis)  # NaN last: the lowest value, NaN only when all are null
                out[..., DIMENSIONS.index("answer_faithfulness")] = low[..., DIMENSIONS.index("answer_faithfulness")]
        elif reducer == "median":
            lo_i = np.expand_dims(np.maximum((n - 1) // 2, 0), axis)
            hi_i = np.expand_dims(np.maximum(n // 2, 0), axis)
            lo = np.take_along_axis(srt, lo_i, axis=axis).squeeze(axis)
            hi = np.take_along_axis(srt, hi_i, axis=axis).squeeze(axis)
            out = np.where(n > 0, (lo + hi) / 2, np.nan)
        elif reducer == "trimmed":
            g = np.floor(TRIM_FRACTION * n).astype(np.int64)
            shape = [1] * srt.ndim
            shape[axis] = V
            rank = np.arange(V).reshape(shape)
            keep = (rank >= np.expand_dims(g, axis)) & (rank < np.expand_dims(n - g, axis))
            out = np.where(keep, srt, 0.0).sum(axis=axis) / (n - 2 * g)
        elif reducer == "majority":
            # counts[i] = how many votes equal vote i (NaN equals nothing, so a null vote counts 0)
            counts = np.zeros(votes.shape, dtype=np.int64)
            for i in range(V):
                counts += votes == np.take(votes, [i], axis=axis)
            top = counts.max(axis=axis, keepdims=True)
            cand = np.where((counts == top) & present, votes, np.inf)
            out = cand.min(axis=axis)
            out = np.where(n > 0, out, np.nan)
        else:
            raise ValueError(f"unknown reducer {reducer!r}; expected one of {[*PANEL_REDUCERS, SINGLE]}")
    out = np.where(n > 0, out, np.nan)
    return np.round(out, 6)


def _majority_verdict(verdicts: np.ndarray, axis: int) -> np.ndarray:
    counts = np.stack([(verdicts == c).sum(axis=axis) for c in range(_N_BANDS)], axis=-1)
    worst_first = counts[..., ::-1]
    code = (_N_BANDS - 1) - worst_first.argmax(axis=-1)
    return np.where(counts.sum(axis=-1) > 0, code, -1).astype(np.int64)


def _disagreement(votes: np.ndarray, srt: np.ndarray, verdicts: np.ndarray, axis: int
                  ) -> tuple[np.ndarray, np.ndarray]:
    """(largest range over the dimensions, in points; verdicts differ) per segment."""
    n = (~np.isnan(votes)).sum(axis=axis)
    last = np.expand_dims(np.maximum(n - 1, 0), axis)
    hi = np.take_along_axis(srt, last, axis=axis).squeeze(axis)
    rng = np.where(n > 0, hi - np.take(srt, 0, axis=axis), 0.0)
    max_range = rng.max(axis=-1)
    seen = np.stack([(verdicts == c).any(axis=axis) for c in range(_N_BANDS)], axis=-1)
    return max_range, seen.sum(axis=-1) > 1


# =============================================================================================
# Kappa on many confusion tables at once
# =============================================================================================
def kappa_tables(tables: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Cohen's kappa and its large-sample standard error for confusion tables (..., K, K) of counts.

    With ``p_ij`` the proportions, ``r_i``/``c_j`` the row/column margins, ``p_o = sum_i p_ii``,
    ``p_e = sum_i r_i c_i`` and ``kappa = (p_o - p_e) / (1 - p_e)`` (Fleiss, Cohen & Everitt 1969)::

        A = sum_i p_ii (1 - (r_i + c_i)(1 - kappa))^2
        B = (1 - kappa)^2 sum_{i != j} p_ij (c_i + r_j)^2
        C = (kappa - p_e (1 - kappa))^2
        se = sqrt((A + B - C) / ((1 - p_e)^2 n))

    (``statsmodels.stats.inter_rater.cohens_kappa``'s ``kappa`` and ``std_kappa``). NaN where ``n = 0``
    or ``p_e = 1`` (kappa undefined).
    """
    t = np.asarray(tables, dtype=np.float64)
    n = t.sum(axis=(-2, -1))
    with np.errstate(invalid="ignore", divide="ignore"):
        p = t / n[..., None, None]
        r, c = p.sum(axis=-1), p.sum(axis=-2)
        diag = np.diagonal(p, axis1=-2, axis2=-1)
        po = diag.sum(axis=-1)
        pe = (r * c).sum(axis=-1)
        kappa = (po - pe) / (1 - pe)
        k1 = (1 - kappa)[..., None]
        a = (diag * (1 - (r + c) * k1) ** 2).sum(axis=-1)
        off = p * (c[..., :, None] + r[..., None, :]) ** 2
        off = off.sum(axis=(-2, -1)) - np.diagonal(off, axis1=-2, axis2=-1).sum(axis=-1)
        b = (1 - kappa) ** 2 * off
        cc = (kappa - pe * (1 - kappa)) ** 2
        var = (a + b - cc) / ((1 - pe) ** 2 * n)
    undefined = (n == 0) | ~(np.abs(1 - pe) > 1e-12)
    kappa = np.where(undefined, np.nan, kappa)
    se = np.where(undefined, np.nan, np.sqrt(np.maximum(var, 0.0)))
    return kappa, se


def _tables(a: np.ndarray, b: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """(C, K, K) counts of (a, b) over ``mask`` per row of the (C, L) code arrays."""
    C = a.shape[0]
    idx = (np.arange(C)[:, None] * _N_BANDS ** 2 + np.clip(a, 0, _N_BANDS - 1) * _N_BANDS
           + np.clip(b, 0, _N_BANDS - 1))
    counts = np.bincount(idx[mask], minlength=C * _N_BANDS ** 2)
    return counts.reshape(C, _N_BANDS, _N_BANDS)


def _kappa_ci(tables: np.ndarray, z: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    kappa, se = kappa_tables(tables)
    return kappa, np.clip(kappa - z * se, -1, 1), np.clip(kappa + z * se, -1, 1), se


# =============================================================================================
# Member diagnostics
# =============================================================================================
def n_effective(k: int | np.ndarray, rho_bar: float | np.ndarray) -> np.ndarray | float:
    """``n_eff = k / (1 + (k - 1) * rho_bar)``: the number of independent members whose mean has the error
    variance of the mean of ``k`` members with mean pairwise error correlation ``rho_bar`` (Kish's design
    effect). 1 for ``k = 1``; ``k`` at ``rho_bar = 0``; 1 at ``rho_bar = 1``; ``inf`` when the
    denominator is not positive; NaN when ``rho_bar`` is NaN and ``k > 1``."""
    k_arr, r = np.asarray(k, dtype=np.float64), np.asarray(rho_bar, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        den = 1 + (k_arr - 1) * r
        out = np.where(k_arr == 1, 1.0, np.where(den > 0, k_arr / den, np.inf))
    out = np.where((k_arr > 1) & np.isnan(r), np.nan, out)
    return float(out) if out.ndim == 0 else out


def mean_offdiagonal(matrix: np.ndarray, subsets: np.ndarray) -> np.ndarray:
    """(P,) mean of ``matrix[i, j]`` over the pairs ``i < j`` of each row of ``subsets`` (P, k) (NaN
    entries left out; NaN for ``k = 1`` or when every pair is NaN)."""
    subsets = np.asarray(subsets, dtype=np.int64)
    P, k = subsets.shape
    if k < 2:
        return np.full(P, np.nan)
    iu = np.triu_indices(k, 1)
    vals = np.asarray(matrix, dtype=np.float64)[subsets[:, iu[0]], subsets[:, iu[1]]]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmean(vals, axis=1)


@dataclass(frozen=True, eq=False)
class MemberDiagnostics:
    """Members' errors against the labels (their sample 0).

    ``correlations[target]``: M x M Pearson correlation of the errors ``judge - label`` (``target`` a
    dimension, against the label's midpoint, or ``"score"``, against the label score), over the segments
    both members judged (NaN below :data:`MIN_CORRELATION_PAIRS` or for a constant error);
    ``n_common[target]`` those counts; ``errors``: one row per member with ``bias_<target>`` (mean error)
    and ``abs_error_<target>`` (mean absolute error against the midpoint, unlike the panels' ``mae``,
    which is the distance to the labelled range) and ``n`` (segments with a score error).
    """

    correlations: dict[str, pd.DataFrame]
    n_common: dict[str, pd.DataFrame]
    errors: pd.DataFrame

    def matrix(self, target: str = "score") -> pd.DataFrame:
        if target not in self.correlations:
            raise ValueError(f"unknown target {target!r}; expected one of {list(self.correlations)}")
        return self.correlations[target]

    def n_eff(self, members: Sequence[str], target: str = "score") -> float:
        """``n_eff`` of the panel of ``members`` (:func:`n_effective` with the mean off-diagonal correlation)."""
        corr = self.matrix(target)
        idx = [corr.index.get_loc(m) for m in members]
        rho = mean_offdiagonal(corr.to_numpy(), np.array([idx]))[0] if len(idx) > 1 else math.nan
        return float(n_effective(len(idx), rho))


def _member_errors(ms: MemberSet, lab: pd.DataFrame, seg_idx: np.ndarray, label_score: np.ndarray,
                   rubric: Rubric) -> dict[str, np.ndarray]:
    """(M, L) errors per target of every member's sample 0 on the labelled segments."""
    vals = ms.values[:, 0][:, seg_idx]  # (M, L, 4)
    M, L = vals.shape[:2]
    mids = lab[[f"mid_{d}" for d in DIMENSIONS]].to_numpy(dtype=np.float64)
    out = {d: vals[:, :, j] - mids[None, :, j] for j, d in enumerate(DIMENSIONS)}
    _raw, score, _code = score_arrays(vals.reshape(-1, len(DIMENSIONS)),
                                      np.broadcast_to(ms.facts[seg_idx], (M, L, len(CAP_FACTS))).reshape(-1, len(CAP_FACTS)),
                                      rubric)
    out["score"] = score.reshape(M, L) - label_score[None, :]
    return out


def _diagnostics(ms: MemberSet, errors: dict[str, np.ndarray]) -> MemberDiagnostics:
    corr, common, rows = {}, {}, {m: {"member": m} for m in ms.members}
    for target, e in errors.items():
        frame = pd.DataFrame(e.T, columns=list(ms.members))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            corr[target] = frame.corr(min_periods=MIN_CORRELATION_PAIRS).rename_axis(index="member", columns="member")
        ok = np.isfinite(e).astype(np.int64)
        common[target] = pd.DataFrame(ok @ ok.T, index=list(ms.members), columns=list(ms.members))
        for m, member in enumerate(ms.members):
            x = e[m][np.isfinite(e[m])]
            rows[member][f"bias_{target}"] = float(x.mean()) if len(x) else math.nan
            rows[member][f"abs_error_{target}"] = float(np.abs(x).mean()) if len(x) else math.nan
            if target == "score":
                rows[member]["n"] = int(len(x))
    return MemberDiagnostics(corr, common, pd.DataFrame(list(rows.values())))
