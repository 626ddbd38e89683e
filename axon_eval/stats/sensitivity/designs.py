"""Weight sensitivity: perturbation designs (:class:`WeightDesign`).

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
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ...rubric import DIMENSIONS
from .common import DEFAULT_CONCENTRATION, DEFAULT_DELTAS, _check_delta, _nominal_weights, box_on_simplex_bounds


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
