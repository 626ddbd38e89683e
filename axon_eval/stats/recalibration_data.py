"""Weight recalibration, the data: labelled segments, their target scores and the scores a weight vector gives.

Data
----
One row per labelled segment ``i``: the judge's subscores ``s_id`` (0-10; ``answer_faithfulness`` may be
null, observed mask ``o_id``), the trajectory facts, and the labelled verdict ``v_i`` in good / partial /
poor (:func:`labelled_segments` joins a run's results with a labels file on ``segment_id``). The labels
give bands, not scores, so the target score of a segment is the **midpoint of its labelled band** under
the base rubric's edges (:func:`band_targets`; 80 / 50 give good 90, partial 65, poor 25)::

    y_i = (good_edge + 100) / 2   if v_i = good
          (partial_edge + good_edge) / 2   if v_i = partial
          partial_edge / 2   if v_i = poor

The study's constants (the fits' tolerances and grids) are here, in one place.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..rubric import BANDS, CAP_FACTS, DIMENSIONS, Rubric
from ..scoring import _effective_caps
from .sensitivity import Segments, segments_from_results


#: Ordered categories of the ordinal model, worst first.
ORDINAL_ORDER: tuple[str, ...] = ("poor", "partial", "good")
#: Coefficient magnitude above which separation is suspected (one point multiplies the odds by e^10).
SEPARATION_COEF = 10.0
METHODS: tuple[str, ...] = ("least_squares", "ordinal")
FABRICATED_SUBSCORES: dict[str, int] = {"intent_understood": 10, "sql_quality": 10, "result_relevance": 10,
                                        "answer_faithfulness": 0}
#: Printed on every page and carried by every record.
DO_NOT_ADOPT = ("the weights are fitted to constructed labels, not human judgements; do not adopt them")

#: The dimensions a judged segment always has (only ``answer_faithfulness`` may be null).
ALWAYS_OBSERVED: tuple[str, ...] = DIMENSIONS[:3]
#: Least-squares floor on ``w_intent + w_sql + w_relevance`` when a labelled segment has null faithfulness:
#: below it such a segment is scored on a vanishing weight, and at 0 it cannot be scored at all. Rounding
#: the proposal to 4 decimals moves the sum by at most 2e-4, so the proposal still scores every segment.
MIN_OBSERVED_WEIGHT = 0.01
#: Step of the coarse simplex grid of the least-squares fit (weights in multiples of it; 1 / step integer).
LSQ_GRID_STEP = 0.02
#: Best grid points (each more than two steps from the ones before it) polished by SLSQP.
LSQ_POLISH_POINTS = 4
#: Candidates whose objective is within this relative distance of the best tie; a converged one is preferred.
LSQ_OBJECTIVE_RTOL = 1e-8
#: KKT check -- largest stationarity residual allowed, relative to ``1 + max_d |dL/dw_d|``.
LSQ_KKT_TOL = 1e-5
#: A weight at most this far from its bound (or the floor) counts as on it in the KKT check.
LSQ_ACTIVE_TOL = 1e-7
#: A segment whose raw score is within this many points of its cap sits on the cap's kink (KKT check).
LSQ_KINK_TOL = 1e-6
#: Grid points scored per block (bounds the (points x segments) work arrays to about 32 MB).
_GRID_BLOCK_CELLS = 4_000_000


# =============================================================================================
# Data
# =============================================================================================
def band_targets(rubric: Rubric | None = None) -> dict[str, float]:
    """Target score of each labelled band: the midpoint of the band on 0-100 under ``rubric``'s edges."""
    r = rubric or Rubric.default()
    g, p = float(r.bands.good), float(r.bands.partial)
    return {"good": (g + 100.0) / 2.0, "partial": (p + g) / 2.0, "poor": p / 2.0}


@dataclass(frozen=True)
class LabelledSegments:
    """Judged segments with a labelled verdict. ``subscores`` (n, 4) NaN = null faithfulness; ``facts``
    (n, 3) bool in ``CAP_FACTS`` order; ``verdict`` the labelled band; ``y`` the target score.
    ``n_unlabelled``: judged segments without a label (left out); ``n_labels_unmatched``: labels with no
    judged segment."""

    segment_ids: np.ndarray
    subscores: np.ndarray
    facts: np.ndarray
    verdict: np.ndarray
    y: np.ndarray
    targets: dict[str, float]
    n_unlabelled: int = 0
    n_labels_unmatched: int = 0

    @property
    def n(self) -> int:
        return int(self.subscores.shape[0])

    def subset(self, index: np.ndarray) -> LabelledSegments:
        return LabelledSegments(self.segment_ids[index], self.subscores[index], self.facts[index],
                                self.verdict[index], self.y[index], dict(self.targets))

    def frame(self) -> pd.DataFrame:
        df = pd.DataFrame(self.subscores, columns=list(DIMENSIONS))
        for j, f in enumerate(CAP_FACTS):
            df[f] = self.facts[:, j]
        df.insert(0, "segment_id", self.segment_ids)
        df["verdict"] = self.verdict
        df["y"] = self.y
        return df

    @classmethod
    def from_arrays(cls, subscores: Any, verdict: Sequence[str], *, facts: Any = None, y: Sequence[float] | None = None,
                    rubric: Rubric | None = None, segment_ids: Sequence[Any] | None = None) -> LabelledSegments:
        """Synthetic data: ``y`` defaults to the band midpoints of ``verdict``; ``facts`` to all False."""
        subs = np.clip(np.asarray(subscores, dtype=np.float64), 0.0, 10.0)
        if subs.ndim != 2 or subs.shape[1] != len(DIMENSIONS):
            raise ValueError(f"subscores must have shape (n, {len(DIMENSIONS)}), got {subs.shape}")
        n = subs.shape[0]
        fact_arr = np.zeros((n, len(CAP_FACTS)), dtype=bool) if facts is None else np.asarray(facts, dtype=bool)
        v = np.asarray(list(verdict), dtype=object)
        bad = sorted({str(x) for x in v if x not in BANDS})
        if bad:
            raise ValueError(f"verdicts must be one of {list(BANDS)}, got {bad}")
        targets = band_targets(rubric)
        target = np.array([targets[x] for x in v], dtype=np.float64) if y is None else np.asarray(y, dtype=np.float64)
        ids = np.arange(n) if segment_ids is None else np.asarray(list(segment_ids), dtype=object)
        return cls(ids, subs, fact_arr, v, target, targets)


def labelled_segments(results: pd.DataFrame | Segments, labels_df: pd.DataFrame, *, rubric: Rubric | None = None,
                      targets: Mapping[str, float] | None = None, aggregate: str | None = None) -> LabelledSegments:
    """Join a run's judged segments (a results frame or :class:`Segments`) with labels on ``segment_id``.

    ``labels_df`` needs ``segment_id`` and ``verdict`` (as :func:`axon_eval.labels.load_labels` returns).
    ``targets`` overrides the band midpoints of :func:`band_targets`.
    """
    seg = results if isinstance(results, Segments) else segments_from_results(results, aggregate=aggregate)
    missing = [c for c in ("segment_id", "verdict") if c not in labels_df.columns]
    if missing:
        raise ValueError(f"labels lack column(s) {missing}")
    tg = dict(targets) if targets is not None else band_targets(rubric)
    lab = labels_df.drop_duplicates("segment_id").set_index("segment_id")["verdict"]
    ids = pd.Series(seg.segment_ids, dtype=object)
    keep = ids.isin(lab.index).to_numpy()
    if not keep.any():
        raise ValueError("no judged segment has a label (check that the labels belong to this evidence)")
    verdict = lab.reindex(ids[keep]).to_numpy(dtype=object)
    bad = sorted({str(x) for x in verdict if x not in BANDS})
    if bad:
        raise ValueError(f"labelled verdicts must be one of {list(BANDS)}, got {bad}")
    y = np.array([tg[v] for v in verdict], dtype=np.float64)
    return LabelledSegments(np.asarray(seg.segment_ids, dtype=object)[keep], seg.subscores[keep], seg.facts[keep],
                            verdict, y, tg, n_unlabelled=int((~keep).sum()),
                            n_labels_unmatched=int((~lab.index.isin(ids)).sum()))


def _weights_vector(weights: Mapping[str, float] | Sequence[float] | np.ndarray) -> np.ndarray:
    if isinstance(weights, Mapping):
        return np.array([float(weights[d]) for d in DIMENSIONS])
    return np.asarray(weights, dtype=np.float64)


def _as_dict(w: np.ndarray) -> dict[str, float]:
    return {d: float(v) for d, v in zip(DIMENSIONS, w, strict=True)}


def predicted_scores(data: LabelledSegments, weights: Mapping[str, float] | np.ndarray, base: Rubric | None = None,
                     *, apply_caps: bool = True, return_reasons: bool = False) -> Any:
    """``p_i(w)`` of the module docstring (unrounded): renormalised raw score, capped by the base's caps.

    A segment whose observed dimensions carry no weight (``sum_d w_d o_id = 0``, e.g. null faithfulness
    under weights ``(0, 0, 0, 1)``) has no score: NaN, never 0. With ``return_reasons`` the result is
    ``(scores, reasons)``, ``reasons`` an object array holding ``""`` for scored segments and the reason
    otherwise; without it, unscorable segments raise a ``RuntimeWarning`` that names them.
    """
    base = base or Rubric.default()
    w = _weights_vector(weights)
    obs = ~np.isnan(data.subscores)
    s0 = np.where(obs, data.subscores, 0.0)
    wo = np.where(obs, w, 0.0)
    den = wo.sum(axis=1)
    scorable = den > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        raw = np.where(scorable, 10.0 * (wo * s0).sum(axis=1) / np.where(scorable, den, 1.0), np.nan)
    reasons = np.full(data.n, "", dtype=object)
    for i in np.flatnonzero(~scorable):
        names = [d for d, o in zip(DIMENSIONS, obs[i], strict=True) if o]
        null = [d for d, o in zip(DIMENSIONS, obs[i], strict=True) if not o]
        reasons[i] = (f"no score: the weights on its observed dimensions ({', '.join(names)}) sum to {den[i]:g}, "
                      f"expected a positive sum" + (f" ({', '.join(null)} null)" if null else ""))
    if not return_reasons and not scorable.all():
        bad = np.flatnonzero(~scorable)
        warnings.warn(f"{len(bad)} segment(s) cannot be scored under weights {_as_dict(w)} (first: "
                      f"{data.segment_ids[bad[0]]}: {reasons[bad[0]]}); their predicted score is NaN",
                      RuntimeWarning, stacklevel=2)
    out = raw if not apply_caps else np.minimum(raw, _effective_caps(data.subscores, data.facts, base))
    return (out, reasons) if return_reasons else out


def unscorable_segments(data: LabelledSegments, weights: Mapping[str, float] | np.ndarray) -> dict[Any, str]:
    """Segment id -> reason, for every segment of ``data`` that ``weights`` leave without a score (empty when
    all can be scored): those whose observed dimensions all have weight 0."""
    _scores, reasons = predicted_scores(data, weights, apply_caps=False, return_reasons=True)
    return {data.segment_ids[i]: str(reasons[i]) for i in np.flatnonzero(reasons != "")}
