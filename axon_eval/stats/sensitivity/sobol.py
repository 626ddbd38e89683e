"""Weight sensitivity: global (Sobol) indices of the weights (:func:`weight_sobol`).

Sobol first-order (S1) and total (ST) indices (Sobol' 2001) of each weight for the mean score and the
share good, with SALib's Saltelli sampling and estimators (Saltelli et al. 2010). The weights must
stay on the simplex, so the inputs are four independent *raw* weights ``v_k ~ U[max(0, w0_k - d),
w0_k + d]`` and the rubric uses ``w = v / sum v``; the indices attribute variance to the ``v_k``. (The
renormalised ``w`` can leave the box by a little; the box is where the raw draws live.)

References
----------
Sobol', I. M. (2001). Global sensitivity indices for nonlinear mathematical models and their Monte
Carlo estimates. Mathematics and Computers in Simulation 55, 271-280.
Saltelli, A. et al. (2010). Variance based sensitivity analysis of model output. Computer Physics
Communications 181, 259-270.
Herman, J. & Usher, W. (2017). SALib: an open-source Python library for sensitivity analysis. JOSS 2(9).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ...rubric import DIMENSIONS, Rubric
from ...scoring import _weight_array
from .common import Segments, _as_segments, _check_delta, _json_float
from .designs import _check_count
from .sweep import sweep_weights


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
