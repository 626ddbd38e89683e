"""How well a score separates correct from incorrect segments: ROC AUC with its interval.

``auc = P(score of a random correct segment > score of a random incorrect one) + 0.5 * P(tie)``,
the Mann-Whitney U statistic of the correct segments divided by ``n_correct * n_incorrect`` (Hanley
& McNeil 1982, "The meaning and use of the area under a ROC curve", Radiology 143:29-36; the same
value as :func:`sklearn.metrics.roc_auc_score` with the score as the decision value). Range 0-1:
0.5 is no separation, 1.0 a threshold that splits the two groups exactly, below 0.5 the score points
the wrong way.

Interval: Hanley & McNeil's standard error,
``se^2 = (A(1-A) + (n1-1)(Q1-A^2) + (n0-1)(Q2-A^2)) / (n1 n0)`` with ``Q1 = A/(2-A)``,
``Q2 = 2A^2/(1+A)``, and ``A +- z se`` clipped to [0, 1] (a normal approximation: rough for small n
or an AUC near 0 or 1, which is why ``n_correct`` and ``n_incorrect`` travel with it).

A missing value (``None``/NaN: a faithfulness never observed, an unscorable segment) takes no part and
is counted in ``n_missing``, never read as 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from collections.abc import Sequence

import numpy as np
from scipy import stats as sps

from ..scoring import is_missing

#: two-sided 95% normal quantile
Z95 = float(sps.norm.ppf(0.975))


@dataclass(frozen=True)
class SeparationAUC:
    """ROC AUC of one score for correct (positive) vs incorrect segments, with its 95% interval."""

    auc: float
    low: float
    high: float
    n_correct: int
    n_incorrect: int
    n_missing: int

    def as_dict(self) -> dict[str, float | int]:
        return {"auc": self.auc, "low": self.low, "high": self.high, "n_correct": self.n_correct,
                "n_incorrect": self.n_incorrect, "n_missing": self.n_missing}


def separation_auc(values: Sequence[float | None], correct: Sequence[bool]) -> SeparationAUC:
    """ROC AUC of ``values`` (higher = more likely correct) against ``correct`` (see the module docstring).

    Raises ``ValueError`` when the lengths differ, or when the observed values hold no correct or no
    incorrect segment (the AUC is undefined, never reported as 0.5).
    """
    if len(values) != len(correct):
        raise ValueError(f"values has {len(values)} entries but correct has {len(correct)}: one per segment expected")
    keep = [not is_missing(v) for v in values]
    x = np.array([float(v) for v, k in zip(values, keep) if k], dtype=float)
    y = np.array([bool(c) for c, k in zip(correct, keep) if k], dtype=bool)
    n1, n0 = int(y.sum()), int((~y).sum())
    if n1 == 0 or n0 == 0:
        raise ValueError(f"AUC undefined: {n1} correct and {n0} incorrect segments with a value "
                         "(both groups are needed)")
    u = sps.mannwhitneyu(x[y], x[~y], alternative="two-sided").statistic  # U of the correct group
    a = float(u) / (n1 * n0)
    q1, q2 = a / (2 - a), 2 * a * a / (1 + a)
    se = np.sqrt(max(0.0, (a * (1 - a) + (n1 - 1) * (q1 - a * a) + (n0 - 1) * (q2 - a * a)) / (n1 * n0)))
    return SeparationAUC(a, float(max(0.0, a - Z95 * se)), float(min(1.0, a + Z95 * se)), n1, n0,
                         len(values) - int(sum(keep)))
