"""Judge noise: variance components (G study) and the decision study (D study, Spearman-Brown).

Variance components (generalizability study; Brennan 2001, ch. 2-3)
    Two-way ANOVA of the complete ``n x k`` table without replication::

        MS_p = k sum_i (m_i - g)^2 / (n - 1)        MS_r = n sum_j (m_.j - g)^2 / (k - 1)
        MS_e = sum_ij (x_ij - m_i - m_.j + g)^2 / ((n - 1)(k - 1))
        var_e = MS_e,  var_p = (MS_p - MS_e) / k,  var_r = (MS_r - MS_e) / n    (negatives set to 0)

    Design, stated on every result: with one judge sampled ``k`` times (rater ``sample_index``) the
    samples are *nested in segments* (sample 3 of one segment has nothing in common with sample 3 of
    another), so the sample facet and the residual are confounded: ``var_r`` is reported as a check on
    position effects (it should be about 0) and the judge noise is ``var_r + var_e``. With a
    cross-judge ensemble (rater ``member``) members are *crossed* with segments and ``var_r`` is the
    members' systematic disagreement (one judge harsher than another).

Decision study (Brennan 2001, ch. 4; Spearman 1910, Brown 1910)
    The reliability of the mean of ``k'`` judgements: nested design and absolute (``Phi``) in both
    designs ``var_p / (var_p + (var_r + var_e) / k')``; relative (``E rho^2``, crossed design)
    ``var_p / (var_p + var_e / k')``. From ``rho = ICC(1,1)`` the Spearman-Brown form is
    ``rho_k = k rho / (1 + (k - 1) rho)`` and the samples needed for a target ``R`` are
    ``k = ceil(R (1 - rho) / (rho (1 - R)))``.

References
    Brennan, R. L. (2001). Generalizability Theory. Springer.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from .common import SampleMatrix, pivot_samples


# =============================================================================================
# Decision study helpers
# =============================================================================================
def spearman_brown(reliability_1: float, k: float) -> float:
    """Reliability of the mean of ``k`` judgements from the single-judgement reliability ``rho``.

    ``rho_k = k rho / (1 + (k - 1) rho)`` (Spearman 1910; Brown 1910); ``k >= 1``.
    """
    if not k >= 1:
        raise ValueError(f"k must be >= 1, got {k!r}")
    return k * reliability_1 / (1 + (k - 1) * reliability_1)


def samples_for_reliability(reliability_1: float, target: float) -> int | None:
    """Smallest integer ``k`` with ``spearman_brown(rho, k) >= target``.

    ``k = ceil(target (1 - rho) / (rho (1 - target)))``; 1 when ``rho >= target``; ``None`` when no
    number of samples reaches it (``rho <= 0`` or NaN). ``target`` must be in (0, 1).
    """
    if not 0 < target < 1:
        raise ValueError(f"target reliability must be in (0, 1), got {target!r}")
    if not reliability_1 > 0:
        return None
    if reliability_1 >= target:
        return 1
    exact = target * (1 - reliability_1) / (reliability_1 * (1 - target))
    k = max(1, math.ceil(exact - 1e-9))  # guard against 3.0000000001 -> 4 from float error
    return k if spearman_brown(reliability_1, k) >= target - 1e-12 else k + 1


# =============================================================================================
# Variance components and the decision study
# =============================================================================================
@dataclass(frozen=True)
class VarianceComponents:
    """ANOVA estimates of the variance components of one column (points squared), with the design.

    ``facet`` is ``"sample"`` (one judge sampled repeatedly: nested in segments, confounded with the
    residual) or ``"member"`` (cross-judge ensemble: crossed with segments). ``truncated`` names
    components whose estimate was negative and set to 0.
    """

    column: str
    rater: str
    facet: str
    design: str
    n_segments: int
    k: int
    segment_var: float
    facet_var: float
    residual_var: float
    ms_segment: float
    ms_facet: float
    ms_residual: float
    truncated: tuple[str, ...] = ()

    @property
    def total_var(self) -> float:
        return self.segment_var + self.facet_var + self.residual_var

    @property
    def nested(self) -> bool:
        return self.facet == "sample"

    def shares(self) -> dict[str, float]:
        """Each component's share of the total (sums to 1; NaN when the total is 0)."""
        total = self.total_var
        parts = {"segment": self.segment_var, self.facet: self.facet_var, "residual": self.residual_var}
        return {name: (v / total if total > 0 else float("nan")) for name, v in parts.items()}

    def table(self) -> pd.DataFrame:
        """One row per component: ``component``, ``variance``, ``sd``, ``share``."""
        shares = self.shares()
        values = {"segment": self.segment_var, self.facet: self.facet_var, "residual": self.residual_var}
        return pd.DataFrame([{"component": name, "variance": v, "sd": math.sqrt(v), "share": shares[name]}
                             for name, v in values.items()])

    def reliability(self, k: int) -> tuple[float, float]:
        """D-study ``(E rho^2, Phi)`` for the mean of ``k`` judgements (module docstring)."""
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k!r}")
        p = self.segment_var
        absolute = self.facet_var + self.residual_var
        relative = absolute if self.nested else self.residual_var
        with np.errstate(invalid="ignore", divide="ignore"):
            g = p / (p + relative / k) if p + relative > 0 else float("nan")
            phi = p / (p + absolute / k) if p + absolute > 0 else float("nan")
        return float(g), float(phi)

    def to_dict(self) -> dict[str, Any]:
        data = {k: getattr(self, k) for k in self.__dataclass_fields__}
        data["truncated"] = list(self.truncated)
        data["shares"] = self.shares()
        return data


_DESIGNS = {
    "sample": ("samples nested in segments (one judge, repeated): the sample facet is not crossed, so "
               "sample and residual variance are confounded; the sample component is a check on position "
               "effects (expected about 0) and judge noise = sample + residual"),
    "member": ("members crossed with segments (cross-judge ensemble): the member component is the judges' "
               "systematic difference; residual = member x segment interaction confounded with error"),
}


def variance_components(samples_df: pd.DataFrame, column: str = "score", rater: str | None = None,
                        ) -> VarianceComponents:
    """Segment, facet and residual variance components of ``column`` over complete segments.

    Two-way ANOVA estimators (module docstring). Raises ``ValueError`` with fewer than 2 complete
    segments or fewer than 2 judgements per segment.
    """
    return _components(pivot_samples(samples_df, (column,), rater), column)


def _components(sm: SampleMatrix, column: str) -> VarianceComponents:
    x = sm.values[column][sm.complete(column)]
    n, k = x.shape
    if n < 2 or k < 2:
        raise ValueError(f"variance components of {column!r} need >= 2 complete segments with >= 2 judgements, "
                         f"got {n} x {k}")
    # with d_ij = x_ij - x_i1 (exact zeros for identical judgements): m_i - g and the residual
    # x_ij - m_i - m_.j + g = d_ij - d_i. - d_.j + d_.. are the same algebra with less rounding
    d = x - x[:, :1]
    row_mean = x[:, 0] + d.mean(axis=1)
    col_dev = d.mean(axis=0) - d.mean()
    ms_p = k * float(((row_mean - row_mean.mean()) ** 2).sum()) / (n - 1)
    ms_r = n * float((col_dev ** 2).sum()) / (k - 1)
    resid = d - d.mean(axis=1)[:, None] - col_dev[None, :]
    ms_e = float((resid ** 2).sum()) / ((n - 1) * (k - 1))
    facet = "member" if sm.rater == "member" else "sample"
    raw = {"segment": (ms_p - ms_e) / k, facet: (ms_r - ms_e) / n, "residual": ms_e}
    truncated = tuple(name for name, v in raw.items() if v < 0)
    return VarianceComponents(column=column, rater=sm.rater, facet=facet, design=_DESIGNS[facet], n_segments=n, k=k,
                              segment_var=max(raw["segment"], 0.0), facet_var=max(raw[facet], 0.0),
                              residual_var=max(ms_e, 0.0), ms_segment=ms_p, ms_facet=ms_r, ms_residual=ms_e,
                              truncated=truncated)


def decision_study(components: VarianceComponents, k_values: Iterable[int] = range(1, 11)) -> pd.DataFrame:
    """Reliability of the mean of ``k`` judgements for each ``k``: columns ``k``, ``g_relative``, ``phi_absolute``."""
    rows = []
    for k in k_values:
        g, phi = components.reliability(int(k))
        rows.append({"k": int(k), "g_relative": g, "phi_absolute": phi})
    return pd.DataFrame(rows)
